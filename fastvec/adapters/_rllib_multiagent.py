"""FastvecMultiAgentEnvRunner: RLlib's MultiAgentEnvRunner over a fastvec multi-agent pool.

RLlib's ``MultiAgentEnvRunner`` vectorizes a multi-agent env only one way: its ``SyncVectorMultiAgentEnv``, which
steps every env one after the other in the runner's own process (``gym_env_vectorize_mode`` must be ``"sync"``;
``make_vec`` refuses any other mode). This runner's env is :class:`PoolVectorMultiAgentEnv`, a
``VectorMultiAgentEnv`` over a :class:`fastvec.MultiAgentVectorEnv` whose envs run in the pool, all stepped by one
batched call. It returns what ``SyncVectorMultiAgentEnv`` returns (a list of per-env dicts, next-step autoreset,
``"__all__"`` flags), so the parent's sampling loop, its connectors, callbacks, metrics and RNG draws run on it
unchanged.

Most of that loop is per-env Python (connectors, ``MultiAgentEpisode.add_env_step``). Over a pool whose agents
never come and go (the native MPE family) and with RLlib's default pipelines, ``sample(num_timesteps=...)`` keeps
the loop batched instead and builds the episodes in bulk at the end of the call
(:mod:`fastvec.adapters._rllib_ma_columns`); elsewhere it is the parent's, and the log says why once. Both give
the ``MultiAgentEpisode`` chunks, metrics and RNG draws of RLlib's runner over the same envs (tests hold them side
by side).

Owner of its state: the thread that calls ``sample()`` (a Ray actor's, or the driver's).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections import defaultdict
from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.callbacks.utils import make_callback
from ray.rllib.connectors.connector_pipeline_v2 import ConnectorPipelineV2
from ray.rllib.connectors.module_to_env import GetActions
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.env.env_context import EnvContext
from ray.rllib.env.env_runner import ENV_STEP_FAILURE, NUM_ENV_STEP_FAILURES_LIFETIME
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode
from ray.rllib.env.vector.vector_multi_agent_env import VectorMultiAgentEnv
from ray.rllib.utils.metrics import (
    ENV_STEP_TIMER,
    EPISODE_AGENT_RETURN_MEAN,
    EPISODE_AGENT_STEPS,
    EPISODE_DURATION_SEC_MEAN,
    EPISODE_LEN_MAX,
    EPISODE_LEN_MEAN,
    EPISODE_LEN_MIN,
    EPISODE_MODULE_RETURN_MEAN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    RLMODULE_INFERENCE_TIMER,
)
from ray.tune.registry import ENV_CREATOR, _global_registry

from fastvec.adapters._rllib_fallback import FAST_ACTION_SPACES, FallsBack, callbacks_reason, pipelines_reason
from fastvec.adapters._rllib_ma_columns import MultiAgentColumns
from fastvec.adapters._rllib_runner import _to_numpy, _to_tensor, action_map
from fastvec.adapters.rllib_creator import MultiAgentCreator
from fastvec.batching import info_rows
from fastvec.multiagent.vector import MultiAgentVectorEnv

__all__ = ["FastvecMultiAgentEnvRunner", "PoolVectorMultiAgentEnv"]

logger = logging.getLogger("ray.rllib")

# RLlib's default multi-agent pipelines (AlgorithmConfig.build_*_connector): anything else is the user's.
_DEFAULT_ENV_TO_MODULE = (
    "AddObservationsFromEpisodesToBatch",
    "AddTimeDimToBatchAndZeroPad",
    "AddStatesFromEpisodesToBatch",
    "AgentToModuleMapping",
    "BatchIndividualItems",
    "NumpyToTensor",
)
_DEFAULT_MODULE_TO_ENV = (
    "GetActions",
    "TensorToNumpy",
    "UnBatchToIndividualItems",
    "ModuleToAgentUnmapping",
    "RemoveSingleTsTimeRankFromBatch",
    "NormalizeAndClipActions",
    "ListifyDataForVectorEnv",
)


class _EnvSpaces:
    """What RLlib's runner asks of ``env.envs[i].unwrapped``: the agents and their spaces (the env itself lives in
    a pool worker). Each stands-in has its own copy of the action spaces, whose RNG ``sample()`` draws from (RLlib's
    ``random_actions``), as each env of RLlib's vector env has its own."""

    def __init__(self, agents: list[str], obs_spaces: dict[str, gym.Space], act_spaces: dict[str, gym.Space]):
        self.possible_agents = list(agents)
        self.observation_spaces = obs_spaces
        self.action_spaces = {a: copy.deepcopy(s) for a, s in act_spaces.items()}

    @property
    def unwrapped(self) -> _EnvSpaces:
        return self

    def get_observation_space(self, agent: str) -> gym.Space:
        return self.observation_spaces[agent]

    def get_action_space(self, agent: str) -> gym.Space:
        return self.action_spaces[agent]


class PoolVectorMultiAgentEnv(VectorMultiAgentEnv):
    """A :class:`fastvec.MultiAgentVectorEnv` (sync, next-step autoreset) as RLlib's ``VectorMultiAgentEnv``,
    returning what ``SyncVectorMultiAgentEnv`` returns: per env, dicts keyed by the agents with an observation
    (observations, rewards, terminateds and truncateds, infos: ``{}`` where the env gave none) and ``"__all__"``
    flags; the step after an episode's end returns the reset (rewards 0 and flags False for every agent).

    A reward to an agent without an observation in that step (RLlib envs may give one) is passed on where it is not
    0 and the agent has not ended in the episode. What the pool's per-agent arrays cannot carry differs from RLlib's
    vector env: a reward of exactly 0 to an agent without an observation (left out), and ``"__all__"`` when an
    episode ends with some agents terminated and others truncated (terminated here; RLlib's episode declares it
    terminated too).

    >>> env = PoolVectorMultiAgentEnv(fastvec.make(lambda: mpe2.simple_spread_v3.parallel_env(), 8))
    """

    def __init__(self, pool: MultiAgentVectorEnv) -> None:
        super().__init__()
        if not isinstance(pool, MultiAgentVectorEnv):
            self.closed = True  # (nothing to close)
            raise TypeError(f"pool must be a fastvec.MultiAgentVectorEnv, got {type(pool).__name__}")
        mode = pool.autoreset_mode
        if mode is not gym.vector.AutoresetMode.NEXT_STEP or not pool.sync:
            pool.close()
            self.closed = True
            raise ValueError(
                f"RLlib's multi-agent runner needs a sync pool with next-step autoreset, got autoreset_mode={mode!r}, "
                f"batch_size={pool.batch_size} of num_envs={pool.num_envs}"
            )
        self.pool = pool
        self.num_envs = pool.num_envs
        self.agents = list(pool.possible_agents)
        self.metadata = {**pool.metadata, "autoreset_mode": "next_step"}
        self.render_mode = pool.render_mode
        self.single_observation_spaces: dict[str, gym.Space] = dict(pool.single_observation_spaces)
        self.single_action_spaces: dict[str, gym.Space] = dict(pool.single_action_spaces)
        self.single_observation_space = gym.spaces.Dict(self.single_observation_spaces)
        self.single_action_space = gym.spaces.Dict(self.single_action_spaces)
        self.envs = [
            _EnvSpaces(self.agents, self.single_observation_spaces, self.single_action_spaces)
            for _ in range(self.num_envs)
        ]
        self._zero_actions = {
            a: np.zeros(s.shape or (), s.dtype if s.dtype is not None else np.float32)
            for a, s in self.single_action_spaces.items()
        }
        self.last_reset: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._autoreset = np.zeros(self.num_envs, dtype=bool)  # the env's next step is its reset
        self._ended = np.zeros((self.num_envs, len(self.agents)), dtype=bool)  # agent ended in the env's episode

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:  # (lists, as RLlib's)
        super().reset(seed=seed if isinstance(seed, int) else None)
        obs, infos = self.pool.reset(seed=seed, options=options)
        self.last_reset = obs, infos  # the pool's arrays, for FastvecMultiAgentEnvRunner's columns
        self._autoreset[:] = False
        self._ended[:] = False
        active = self._active(infos)
        return self._obs_rows(obs, active), self._info_rows(infos, active)

    def step(self, actions: Any) -> Any:  # actions: a dict per env, as RLlib's vector env takes them
        if len(actions) != self.num_envs:
            raise ValueError(f"actions: one dict per env ({self.num_envs}), got {len(actions)}")
        obs, rewards, terms, truncs, infos = self.pool.step(self._batched(actions))
        active = self._active(infos)
        term = np.stack([terms[a] for a in self.agents], axis=1)
        trunc = np.stack([truncs[a] for a in self.agents], axis=1)
        rew = np.stack([rewards[a] for a in self.agents], axis=1)
        over = ~(active & ~term & ~trunc).any(axis=1) & ~self._autoreset
        # "__all__" as RLlib's ParallelPettingZooEnv sets it: every agent of the step terminated (truncated).
        all_term = over & ~(active & ~term).any(axis=1)
        all_trunc = over & ~(active & ~trunc).any(axis=1)
        all_term |= over & ~all_term & ~all_trunc  # some of each: the pool ended the episode
        obs_rows, info_rows_ = self._obs_rows(obs, active), self._info_rows(infos, active)
        rew_rows, term_rows, trunc_rows = [], [], []
        resets = self._autoreset.tolist()
        self._ended[self._autoreset] = False
        rewarded = (~active & ~self._ended & (rew != 0)).tolist()  # a reward without an observation
        self._ended |= active & (term | trunc)
        act_l, term_l, trunc_l, rew_l = active.tolist(), term.tolist(), trunc.tolist(), rew.tolist()
        for i in range(self.num_envs):
            if resets[i]:  # what SyncVectorMultiAgentEnv returns for an autoreset: every possible agent
                rew_rows.append(dict.fromkeys(self.agents, 0.0))
                term_rows.append({**dict.fromkeys(self.agents, False), "__all__": False})
                trunc_rows.append({**dict.fromkeys(self.agents, False), "__all__": False})
                continue
            r, te, tr = {}, {}, {}
            for k, a in enumerate(self.agents):
                if act_l[i][k]:
                    r[a], te[a], tr[a] = rew_l[i][k], term_l[i][k], trunc_l[i][k]
                elif rewarded[i][k]:
                    r[a] = rew_l[i][k]
            te["__all__"], tr["__all__"] = bool(all_term[i]), bool(all_trunc[i])
            rew_rows.append(r)
            term_rows.append(te)
            trunc_rows.append(tr)
        self._autoreset = over
        return obs_rows, np.array(rew_rows), np.array(term_rows), np.array(trunc_rows), np.array(info_rows_)

    def render(self) -> Any:
        return self.pool.render()

    def close_extras(self, **kwargs: Any) -> None:
        self.pool.close()

    # -- helpers ----------------------------------------------------------

    def _active(self, infos: dict[str, Any]) -> np.ndarray:
        return np.stack([infos["active"][a] for a in self.agents], axis=1)

    def _obs_rows(self, obs: dict[str, Any], active: np.ndarray) -> list[dict[str, Any]]:
        act_l = active.tolist()
        return [{a: obs[a][i] for k, a in enumerate(self.agents) if act_l[i][k]} for i in range(self.num_envs)]

    def _info_rows(self, infos: dict[str, Any], active: np.ndarray) -> list[dict[str, Any]]:
        per_agent = {a: info_rows(infos[a], self.num_envs) for a in self.agents if a in infos}
        common = info_rows(infos["__common__"], self.num_envs) if "__common__" in infos else None
        act_l = active.tolist()
        out = []
        for i in range(self.num_envs):
            row: dict[str, Any] = {}
            for k, a in enumerate(self.agents):
                if act_l[i][k]:
                    row[a] = per_agent[a][i] if a in per_agent else {}
            if common is not None and common[i]:
                row["__common__"] = common[i]
            out.append(row)
        return out

    def _batched(self, actions: list[dict[str, Any]]) -> dict[str, np.ndarray]:
        """Per-env action dicts as the pool's per-agent arrays (rows of agents without an action: zeros, which the
        pool ignores: it checks that every agent alive in an env has its action)."""
        out = {}
        for a in self.agents:
            values = [d.get(a) for d in actions]
            if all(v is None for v in values):
                continue
            zero = self._zero_actions[a]
            out[a] = np.stack([zero if v is None else np.asarray(v) for v in values])
        return out


class FastvecMultiAgentEnvRunner(FallsBack, MultiAgentEnvRunner):
    """RLlib's ``MultiAgentEnvRunner`` over a fastvec multi-agent pool (:class:`PoolVectorMultiAgentEnv`): the
    same episodes, metrics and RNG draws as RLlib's runner, with the envs stepped in the pool, sampled in columns
    where the pool's agents never come and go (see the module's docstring for when RLlib's loop runs instead).

    Seeds: env ``i`` of the runner with ``worker_index`` ``w`` starts from ``config.seed + w * num_envs + i``, so no
    two envs of any runners share a stream (as :class:`fastvec.adapters.rllib.FastvecEnvRunner`).

    >>> config.env_runners(env_runner_cls=FastvecMultiAgentEnvRunner)   # fastvec.adapters.rllib.configure sets it
    """

    env: PoolVectorMultiAgentEnv | None  # type: ignore[assignment]
    _env_to_module: ConnectorPipelineV2
    _module_to_env: ConnectorPipelineV2
    _fallback_words = "FastvecMultiAgentEnvRunner samples with MultiAgentEnvRunner's loop"

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        self._counts = _SampleCounts()
        super().__init__(config=config, **kwargs)
        seed = self.config.seed
        if seed is not None and self.num_envs:
            self._seed = int(seed + (self.worker_index or 0) * self.num_envs)
            if self.config.in_evaluation:
                self._seed += 1_000_000
        self._get_actions = GetActions()
        self._fallback_reason = self._static_fallback_reason()
        self._cols: MultiAgentColumns | None = None
        self._plain_forward = False
        self._action_like: dict[str, np.ndarray] = {}  # per agent, the dtype and shape of its model's actions

    def make_env(self) -> None:
        """The parent's ``make_env`` with a fastvec pool of ``num_envs_per_env_runner`` envs in place of RLlib's
        ``SyncVectorMultiAgentEnv``: the env registered with Ray Tune (its creator called with ``num_envs``), or
        ``config.env`` (a multi-agent env class or constructor, or a multi-agent id) made by fastvec."""
        if self.env is not None:
            self.env.close()
            self.env = None
        env_ctx = self.config.env_config
        if not isinstance(env_ctx, EnvContext):
            env_ctx = EnvContext(
                env_ctx,
                worker_index=self.worker_index,
                num_workers=self.config.num_env_runners,
                remote=self.config.remote_worker_envs,
            )
        env = self.config.env
        if not env:
            raise ValueError("config.env is not set: pass a multi-agent env to config.environment(env=...)")
        if isinstance(env, str) and _global_registry.contains(ENV_CREATOR, env):
            creator = _global_registry.get(ENV_CREATOR, env)
        else:
            creator = MultiAgentCreator(env, {})
        num_envs = self.config.num_envs_per_env_runner
        pool = creator(EnvContext({**env_ctx, "num_envs": num_envs}, worker_index=env_ctx.worker_index))
        if not isinstance(pool, MultiAgentVectorEnv):
            if hasattr(pool, "close"):
                pool.close()
            raise TypeError(
                f"FastvecMultiAgentEnvRunner: the creator of {env!r} returned a {type(pool).__name__}, not a "
                "fastvec.MultiAgentVectorEnv (register it with fastvec.adapters.rllib.configure)"
            )
        self.env = PoolVectorMultiAgentEnv(pool)
        self.num_envs = self.env.num_envs
        self._needs_initial_reset = True
        make_callback(
            "on_environment_created",
            callbacks_objects=self._callbacks,
            callbacks_functions=self.config.callbacks_on_environment_created,
            kwargs=dict(env_runner=self, metrics_logger=self.metrics, env=self.env.unwrapped, env_context=env_ctx),
        )

    # -- when the fast path applies -------------------------------------------------------------

    def _static_fallback_reason(self) -> str | None:
        if self.env is None:
            return None  # nothing to sample; the parent says so
        if self.module is None:
            return "there is no RLModule (random actions only)"
        if not self.env.pool.fixed_agents:
            return "the pool's agents may come and go (only a native pool's never do)"
        if not self.episodes_to_numpy:
            return "episodes_to_numpy=False (the fast path builds numpy episodes)"
        if any(m.is_stateful() for m in _submodules(self.module)):
            return "an RLModule is stateful (RNN state is carried per env by RLlib's connectors)"
        reason = pipelines_reason(
            (
                ("env-to-module", [type(c).__name__ for c in self._env_to_module.connectors], _DEFAULT_ENV_TO_MODULE),
                ("module-to-env", [type(c).__name__ for c in self._module_to_env.connectors], _DEFAULT_MODULE_TO_ENV),
            )
        ) or callbacks_reason(self.config, self._callbacks)
        if reason is not None:
            return reason
        for agent, space in self.env.single_action_spaces.items():
            if not isinstance(space, FAST_ACTION_SPACES):
                return f"agent {agent!r} has a {type(space).__name__} action space (the fast path: Box, Discrete)"
        return None

    def _sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list[MultiAgentEpisode]:
        """Sampled in columns (:mod:`fastvec.adapters._rllib_ma_columns`) where that gives RLlib's result, else
        the parent's ``_sample``; the step counts logged once at the end of the call (see
        :meth:`_increase_sampled_metrics`)."""
        self._counts = _SampleCounts()
        try:
            if self._call_fallback_reason(num_timesteps) is not None:
                self._cols = None  # the parent owns the episodes now; the next fast call starts with a reset
                return super()._sample(
                    num_timesteps=num_timesteps,
                    num_episodes=num_episodes,
                    explore=explore,
                    random_actions=random_actions,
                    force_reset=force_reset,
                )
            assert num_timesteps is not None
            return self._sample_columns(num_timesteps, explore, random_actions, force_reset)
        finally:
            self._counts.log(self.metrics)

    # -- the fast path --------------------------------------------------------------------------

    def _reset_columns(self) -> MultiAgentColumns:
        """All envs reset (seeded on the first reset): new episodes, as the parent's ``_reset_envs``."""
        assert self.env is not None
        self._ongoing_episodes_for_metrics.clear()
        self._shared_data = {}  # type: ignore[assignment]  # RLlib's EnvRunner declares it None, then sets {}
        self._try_env_reset(seed=self._seed if self._needs_initial_reset else None, options=None)
        self._needs_initial_reset = False
        assert self.env.last_reset is not None
        obs, infos = self.env.last_reset
        env = self.env
        self._cols = MultiAgentColumns(
            env.agents,
            env.single_observation_spaces,
            env.single_action_spaces,
            self.config.policy_mapping_fn,
            obs,
            infos,
            time.perf_counter(),
        )
        return self._cols

    def _step_env(self, actions: dict[str, np.ndarray]) -> Any:
        """The pool stepped with per-agent arrays; a failing step handled as the parent's ``_try_env_step``
        handles it (recreate the env and start again, or raise)."""
        assert self.env is not None
        try:
            return self.env.pool.step(actions)
        except Exception as e:
            self.metrics.log_value(NUM_ENV_STEP_FAILURES_LIFETIME, 1, reduce="lifetime_sum")
            if not self.config.restart_failed_sub_environments:
                raise RuntimeError(f"RLlib {type(self).__name__}: the env's step failed: {e!r}") from e
            logger.exception("FastvecMultiAgentEnvRunner: the env's step failed; recreating the env and resetting it")
            self.make_env()
            return ENV_STEP_FAILURE

    def _sample_columns(
        self, num_timesteps: int, explore: bool, random_actions: bool, force_reset: bool
    ) -> list[MultiAgentEpisode]:
        cols = self._cols
        if force_reset or self._needs_initial_reset or cols is None:
            cols = self._reset_columns()
        assert self.env is not None
        cols.begin(self.config.episode_lookback_horizon)
        # TorchRLModule.forward_exploration/-inference put each module in eval mode around each call (a walk over
        # its layers, twice a step): where the modules' are RLlib's own, once for the whole call.
        module = self.module
        assert module is not None
        self._plain_forward = _plain_forward(module)
        training = [m for m in _submodules(module) if m.training] if self._plain_forward else []
        for m in training:
            m.eval()
        try:
            return self._sample_loop(cols, num_timesteps, explore, random_actions)
        finally:
            for m in training:
                m.train()

    def _sample_loop(
        self, cols: MultiAgentColumns, num_timesteps: int, explore: bool, random_actions: bool
    ) -> list[MultiAgentEpisode]:
        assert self.env is not None
        agents = self.env.agents
        spaces = self.env.single_action_spaces
        to_env_fns = {a: action_map(spaces[a], self.config.normalize_actions, self.config.clip_actions) for a in agents}
        runners = self.config.num_env_runners or 1
        by_agent_steps = self.config.count_steps_by != "env_steps"
        ts = agent_ts = steps = 0
        infer_s = step_s = 0.0
        while (agent_ts if by_agent_steps else ts) < num_timesteps:
            live = cols.live()
            if random_actions:
                actions, extra = self._random_actions(cols, live), {}
                actions_for_env = actions
            else:
                t0 = time.perf_counter()
                t = (self.num_env_steps_sampled_lifetime // runners + ts) * runners if explore else None
                actions, actions_for_env, extra = self._policy(cols, live, explore, t, to_env_fns)
                infer_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            results = self._step_env(actions_for_env)
            step_s += time.perf_counter() - t0
            steps += 1
            if results is ENV_STEP_FAILURE:  # make_env() recreated the env (and asks for a seeded reset)
                ts = agent_ts = 0
                cols = self._reset_columns()
                cols.begin(self.config.episode_lookback_horizon)
                continue
            obs, rewards, terms, truncs, infos = results
            stepped = cols.add(actions, extra, obs, rewards, terms, truncs, infos, time.perf_counter())
            ts += stepped
            agent_ts += stepped * len(agents)
            self._count_step(cols)
        if steps:
            self.metrics.log_value(ENV_STEP_TIMER, step_s / steps)
            self._log_env_steps(metric=self._metrics_num_try_env_step, num_steps=steps)
            if not random_actions:
                self.metrics.log_value(RLMODULE_INFERENCE_TIMER, infer_s / steps)
        done, ongoing = cols.episodes(self._weights_seq_no)
        for eps in (*done, *ongoing):
            self._prune_zero_len_sa_episodes(eps)
        self._done_episodes_for_metrics.extend(done)
        for eps in ongoing:
            self._ongoing_episodes_for_metrics[eps.id_].append(eps)
        if ts:
            self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=ts)
        return done + ongoing

    def _count_step(self, cols: MultiAgentColumns) -> None:
        """What the parent's ``_increase_sampled_metrics`` counts for one step of every env that stepped: in
        the parent's order (envs, then agents in observation order)."""
        counts = self._counts
        stepped = ~cols.rows_reset[-1]
        n = int(np.count_nonzero(stepped))
        if not n:
            return
        counts.env_steps += n
        counts.episodes += int(np.count_nonzero(cols.rows_end[-1]))
        for a in cols.agents:
            counts.agents[a] = counts.agents.get(a, 0) + n
        flat = cols.modules[stepped].ravel()
        uniq, first = np.unique(flat, return_index=True)
        per = np.bincount(flat)
        for m in uniq[np.argsort(first)].tolist():
            mid = cols.module_ids[m]
            counts.modules[mid] = counts.modules.get(mid, 0) + int(per[m])

    def _random_actions(self, cols: MultiAgentColumns, live: np.ndarray) -> dict[str, np.ndarray]:
        """RLlib's random actions: per env due to act, each agent's env-local action space sampled, in the order
        the parent samples them."""
        assert self.env is not None
        out: dict[str, list[Any]] = {a: [None] * cols.num_envs for a in cols.agents}
        envs: Any = self.env.envs
        for i in np.flatnonzero(live).tolist():
            env = envs[i].unwrapped
            for k in cols.step_order:
                a = cols.agents[k]
                out[a][i] = env.get_action_space(a).sample()
        arrays = {}
        for a in cols.agents:
            space = self.env.single_action_spaces[a]
            zero = np.zeros(space.shape or (), space.dtype)
            arrays[a] = np.stack([zero if v is None else np.asarray(v) for v in out[a]])
        return arrays

    def _policy(self, cols: MultiAgentColumns, live: np.ndarray, explore: bool, t: int | None, to_env: dict) -> tuple:
        """One forward pass of the MultiRLModule over the batch RLlib's env-to-module connectors build (per
        module, its agents' observations, envs then agents in RLlib's order), the actions as ``GetActions``
        draws them (module by module), and per agent: the actions (for the episodes), the actions for the env
        (unsquashed or clipped) and the other model outputs."""
        live_idx = np.flatnonzero(live)
        plan = cols.module_batches(live)
        batch = {}
        for mid, agent_idx, hit in plan:
            stacked = np.stack([cols.obs[cols.agents[k]][live_idx] for k in agent_idx], axis=1)
            batch[mid] = {Columns.OBS: _to_tensor(stacked[hit], self._device)}
        actions: dict[str, np.ndarray] = {}
        for_env: dict[str, np.ndarray] = {}
        extra: dict[str, dict[str, np.ndarray]] = {}
        if batch:
            module = self.module
            assert module is not None
            if self._plain_forward:  # RLlib's forward passes without their eval()/train() walks (see _sample_columns)
                out = {
                    mid: module[mid]._forward_exploration(b, t=t) if explore else module[mid]._forward_inference(b)
                    for mid, b in batch.items()
                }
            else:
                out = module.forward_exploration(batch, t=t) if explore else module.forward_inference(batch)
            n = cols.num_envs
            for mid, agent_idx, hit in plan:
                self._get_actions._get_actions(out[mid], module[mid], explore)
                values = _to_numpy(out[mid])
                for key, v in values.items():
                    full = np.zeros((len(live_idx), len(agent_idx), *v.shape[1:]), v.dtype)
                    full[hit] = v
                    for j, k in enumerate(agent_idx):
                        a = cols.agents[k]
                        dest = extra.setdefault(a, {})
                        if key not in dest:
                            dest[key] = np.zeros((n, *v.shape[1:]), v.dtype)
                        rows = hit[:, j]
                        dest[key][live_idx[rows]] = full[rows, j]
            for a, values in extra.items():
                actions[a] = values.pop(Columns.ACTIONS)
                env_actions = values.pop(Columns.ACTIONS_FOR_ENV, None)
                for_env[a] = to_env[a](actions[a]) if env_actions is None else env_actions
                self._action_like[a] = actions[a][:0]
        for a in cols.agents:  # agents with no row this step (every env's next row is a reset): filler rows
            if a not in actions:
                like = self._action_like.get(a)
                if like is None:
                    space = self.env.single_action_spaces[a]  # type: ignore[union-attr]
                    like = np.zeros((0, *(space.shape or ())), space.dtype)
                actions[a] = for_env[a] = np.zeros((cols.num_envs, *like.shape[1:]), like.dtype)
        return actions, for_env, extra

    def get_metrics(self) -> Any:
        """The parent's metrics, with each episode metric given only the episodes its window holds: each is a
        mean, min or max over the last ``metrics_num_episodes_for_smoothing / num_env_runners`` values of its key
        (per agent and per module for theirs), so older ones never count (RLlib logs every episode, ten values
        and more each). An episode that brings a key is logged as the parent logs it (which makes the key's
        ``Stats``, in the parent's order); the others' values are pushed to the same ``Stats`` in the same order."""
        done = self._done_episodes_for_metrics
        chunks = [self._ongoing_episodes_for_metrics.pop(eps.id_, ()) for eps in done]
        win = max(1, math.ceil(self.config.metrics_num_episodes_for_smoothing / (self.config.num_env_runners or 1)))
        keys = []
        for eps, before in zip(done, chunks, strict=True):
            parts = (eps, *before)
            agents = {str(aid) for part in parts for aid in part.agent_episodes}
            modules = {sa.module_id for part in parts for sa in part.agent_episodes.values()}
            keys.append({None, *(("a", a) for a in agents), *(("m", m) for m in modules)})
        wanted = [False] * len(done)
        seen: dict[Any, int] = {}
        for j in range(len(done) - 1, -1, -1):  # the last `win` episodes of each key
            for key in keys[j]:
                seen[key] = seen.get(key, 0) + 1
                wanted[j] |= seen[key] <= win
        new: set[Any] = set()
        for j, eps in enumerate(done):
            fresh = not keys[j] <= new
            new |= keys[j]
            if not (wanted[j] or fresh):
                continue
            values = _episode_values(eps, chunks[j])
            if fresh or not self._push_episode_metrics(*values):
                self._log_episode_metrics(*values)
        done.clear()
        return self.metrics.reduce()

    def _push_episode_metrics(self, length, ret, sec, agents, modules, agent_steps) -> bool:
        """What ``_log_episode_metrics`` logs, pushed to the ``Stats`` it made; False if one is missing."""
        leaves = [
            (EPISODE_LEN_MEAN, length),
            (EPISODE_RETURN_MEAN, ret),
            (EPISODE_DURATION_SEC_MEAN, sec),
            *(((EPISODE_AGENT_RETURN_MEAN, a), v) for a, v in agents.items()),
            *(((EPISODE_AGENT_STEPS, a), v) for a, v in agent_steps.items()),
            *(((EPISODE_MODULE_RETURN_MEAN, m), v) for m, v in modules.items()),
            (EPISODE_LEN_MIN, length),
            (EPISODE_RETURN_MIN, ret),
            (EPISODE_LEN_MAX, length),
            (EPISODE_RETURN_MAX, ret),
        ]
        stats = [self.metrics._get_key(key, key_error=False) for key, _ in leaves]
        if any(st is None for st in stats):
            return False
        for st, (_, value) in zip(stats, leaves, strict=True):
            st.push(value)
        return True

    def _increase_sampled_metrics(self, num_steps: int, next_obs: Any, episode: Any) -> int:
        """What the parent logs per env and step (env, agent and module steps, ended episodes: eight ``log_value``
        calls and more per agent, a quarter of a ``sample()`` at 64 envs of simple_spread), counted here and logged
        as one value per key when the call ends: the same sums, in the same order of agents and modules."""
        counts = self._counts
        counts.env_steps += num_steps
        if episode.is_done:
            counts.episodes += 1
        for aid in next_obs:
            key = str(aid)
            counts.agents[key] = counts.agents.get(key, 0) + 1
            module = episode.module_for(aid)
            counts.modules[module] = counts.modules.get(module, 0) + 1
        return num_steps


class _SampleCounts:
    """The step counts of one ``sample()`` call, logged as RLlib's runner logs them step by step."""

    def __init__(self) -> None:
        self.env_steps = 0
        self.episodes = 0
        self.agents: dict[str, int] = {}
        self.modules: dict[Any, int] = {}

    def log(self, metrics: Any) -> None:
        if self.env_steps:
            metrics.log_value(NUM_ENV_STEPS_SAMPLED, self.env_steps, reduce="sum")
            metrics.log_value(
                NUM_ENV_STEPS_SAMPLED_LIFETIME, self.env_steps, reduce="lifetime_sum", with_throughput=True
            )
        if self.episodes:
            metrics.log_value(NUM_EPISODES, self.episodes, reduce="sum")
            metrics.log_value(NUM_EPISODES_LIFETIME, self.episodes, reduce="lifetime_sum")
        for aid, n in self.agents.items():
            metrics.log_value((NUM_AGENT_STEPS_SAMPLED, aid), n, reduce="sum")
            metrics.log_value((NUM_AGENT_STEPS_SAMPLED_LIFETIME, aid), n, reduce="lifetime_sum")
        for mid, n in self.modules.items():
            metrics.log_value((NUM_MODULE_STEPS_SAMPLED, mid), n, reduce="sum")
            metrics.log_value((NUM_MODULE_STEPS_SAMPLED_LIFETIME, mid), n, reduce="lifetime_sum")
        self.env_steps = self.episodes = 0
        self.agents, self.modules = {}, {}


def _episode_values(eps: MultiAgentEpisode, before: Any) -> tuple:
    """What ``MultiAgentEnvRunner.get_metrics`` logs for a finished episode and its earlier chunks, summed in its
    order: length, return, seconds, returns per agent and per module, steps per agent."""
    length, ret, sec = len(eps), eps.get_return(), eps.get_duration_s()
    agent_steps = defaultdict(int, {str(aid): len(sa) for aid, sa in eps.agent_episodes.items()})
    agents = defaultdict(float, {str(sa.agent_id): sa.get_return() for sa in eps.agent_episodes.values()})
    modules: defaultdict[Any, float] = defaultdict(float)
    for sa in eps.agent_episodes.values():
        modules[sa.module_id] += sa.get_return()
    for chunk in before:
        ret += chunk.get_return()
        length += len(chunk)
        sec += chunk.get_duration_s()
        for sa in chunk.agent_episodes.values():
            r = sa.get_return()
            agent_steps[str(sa.agent_id)] += len(sa)
            agents[str(sa.agent_id)] += r
            modules[sa.module_id] += r
    return length, ret, sec, agents, modules, dict(agent_steps)


def _submodules(module: Any) -> list[Any]:
    """A MultiRLModule's modules (RLlib annotates its ``values()`` as module ids)."""
    return [module[mid] for mid in module.keys()]


def _plain_forward(module: Any) -> bool:
    """Whether ``module`` is a MultiRLModule whose forward passes are RLlib's: each sub-module's
    ``forward_exploration``/``-inference`` is TorchRLModule's (eval mode around its ``_forward_*``)."""
    if not isinstance(module, MultiRLModule):
        return False
    base = type(module)
    if (base.forward_exploration, base._forward_exploration) != (
        MultiRLModule.forward_exploration,
        MultiRLModule._forward_exploration,
    ) or (base.forward_inference, base._forward_inference) != (
        MultiRLModule.forward_inference,
        MultiRLModule._forward_inference,
    ):
        return False
    return all(
        type(m).forward_exploration is TorchRLModule.forward_exploration
        and type(m).forward_inference is TorchRLModule.forward_inference
        for m in _submodules(module)
    )
