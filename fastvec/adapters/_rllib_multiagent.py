"""FastvecMultiAgentEnvRunner: RLlib's MultiAgentEnvRunner over a fastvec multi-agent pool.

RLlib's ``MultiAgentEnvRunner`` vectorizes a multi-agent env only one way: its ``SyncVectorMultiAgentEnv``, which
steps every env one after the other in the runner's own process (``gym_env_vectorize_mode`` must be ``"sync"``;
``make_vec`` refuses any other mode). This runner is that runner with one change, ``make_env``: its env is
:class:`PoolVectorMultiAgentEnv`, a ``VectorMultiAgentEnv`` over a :class:`fastvec.MultiAgentVectorEnv` whose envs
run in the pool's worker processes, all stepped by one batched call. It returns what ``SyncVectorMultiAgentEnv``
returns (a list of per-env dicts, next-step autoreset, ``"__all__"`` flags), so the parent's sampling loop, its
connectors, callbacks, metrics and RNG draws are RLlib's own, unchanged: the same ``MultiAgentEpisode`` chunks
as RLlib's runner over the same envs (tests hold the two side by side).

Owner of its state: the thread that calls ``sample()`` (a Ray actor's, or the driver's).
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.callbacks.utils import make_callback
from ray.rllib.env.env_context import EnvContext
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.env.vector.vector_multi_agent_env import VectorMultiAgentEnv
from ray.rllib.utils.metrics import (
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
)
from ray.tune.registry import ENV_CREATOR, _global_registry

from fastvec.adapters.rllib_creator import MultiAgentCreator
from fastvec.batching import info_rows
from fastvec.multiagent.vector import MultiAgentVectorEnv

__all__ = ["FastvecMultiAgentEnvRunner", "PoolVectorMultiAgentEnv"]


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
        self.single_observation_spaces = dict(pool.single_observation_spaces)
        self.single_action_spaces = dict(pool.single_action_spaces)
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
        self._autoreset = np.zeros(self.num_envs, dtype=bool)  # the env's next step is its reset
        self._ended = np.zeros((self.num_envs, len(self.agents)), dtype=bool)  # agent ended in the env's episode

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:  # (lists, as RLlib's)
        super().reset(seed=seed if isinstance(seed, int) else None)
        obs, infos = self.pool.reset(seed=seed, options=options)
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


class FastvecMultiAgentEnvRunner(MultiAgentEnvRunner):
    """RLlib's ``MultiAgentEnvRunner`` over a fastvec multi-agent pool (:class:`PoolVectorMultiAgentEnv`): the
    same episodes, metrics and RNG draws as RLlib's runner, with the envs stepped in the pool's workers.

    Seeds: env ``i`` of the runner with ``worker_index`` ``w`` starts from ``config.seed + w * num_envs + i``, so no
    two envs of any runners share a stream (as :class:`fastvec.adapters.rllib.FastvecEnvRunner`).

    >>> config.env_runners(env_runner_cls=FastvecMultiAgentEnvRunner)   # fastvec.adapters.rllib.configure sets it
    """

    env: PoolVectorMultiAgentEnv | None  # type: ignore[assignment]

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        self._counts = _SampleCounts()
        super().__init__(config=config, **kwargs)
        seed = self.config.seed
        if seed is not None and self.num_envs:
            self._seed = int(seed + (self.worker_index or 0) * self.num_envs)
            if self.config.in_evaluation:
                self._seed += 1_000_000

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

    def _sample(self, **kwargs: Any) -> Any:
        """The parent's ``_sample``, its step counts logged once at the end of the call (see
        :meth:`_increase_sampled_metrics`)."""
        self._counts = _SampleCounts()
        try:
            return super()._sample(**kwargs)
        finally:
            self._counts.log(self.metrics)

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
