"""FastvecEnvRunner: RLlib's SingleAgentEnvRunner, sampling into numpy columns.

RLlib's runner spends most of ``sample()`` on per-env Python: it unbatches every step into per-env
items, runs each through its connector pieces and appends it to a ``SingleAgentEpisode``. This runner
keeps the step loop batched (one forward pass, the actions as RLlib's ``GetActions`` computes them,
Box actions unsquashed or clipped in one call, the pool stepped directly) and writes each step's batch
to a column; at the end of the call it cuts the columns into the episode chunks RLlib's runner would
have returned. Everything else (``sample()``'s metrics and callbacks, ``get_metrics``, state,
checkpoints) is the parent's.

Where the fast path cannot give RLlib's result, ``_sample`` is the parent's, and the log says why
once: connectors of the user's in either pipeline, ``on_episode_*`` callbacks, stateful modules,
``episodes_to_numpy=False``, action spaces other than Box/Discrete/MultiDiscrete, an env with another
autoreset mode, and ``sample(num_episodes=...)`` (or ``batch_mode="complete_episodes"``).

Owner of its state: the thread that calls ``sample()`` (a Ray actor's, or the driver's); the pool's
threads never see the columns.
"""

from __future__ import annotations

import gc
import logging
import math
import time
import uuid
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from gymnasium.wrappers.vector import DictInfoToList
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.connectors.connector_pipeline_v2 import ConnectorPipelineV2
from ray.rllib.connectors.module_to_env import GetActions
from ray.rllib.core import DEFAULT_AGENT_ID, DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.env.env_runner import ENV_STEP_FAILURE, NUM_ENV_STEP_FAILURES_LIFETIME
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.single_agent_episode import _REWARDS_BOX_SPACE, SingleAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.metrics import (
    ENV_STEP_TIMER,
    EPISODE_DURATION_SEC_MEAN,
    EPISODE_LEN_MAX,
    EPISODE_LEN_MEAN,
    EPISODE_LEN_MIN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    RLMODULE_INFERENCE_TIMER,
    WEIGHTS_SEQ_NO,
)
from ray.rllib.utils.numpy import convert_to_numpy
from ray.rllib.utils.spaces.space_utils import get_base_struct_from_space
from ray.rllib.utils.torch_utils import convert_to_torch_tensor

logger = logging.getLogger("ray.rllib")

# RLlib's default pipelines (AlgorithmConfig.build_*_connector, single agent): anything else is the user's.
_DEFAULT_ENV_TO_MODULE = (
    "AddObservationsFromEpisodesToBatch",
    "AddTimeDimToBatchAndZeroPad",
    "AddStatesFromEpisodesToBatch",
    "BatchIndividualItems",
    "NumpyToTensor",
)
_DEFAULT_MODULE_TO_ENV = (
    "GetActions",
    "TensorToNumpy",
    "UnBatchToIndividualItems",
    "RemoveSingleTsTimeRankFromBatch",
    "NormalizeAndClipActions",
    "ListifyDataForVectorEnv",
)
# What SingleAgentEnvRunner._log_episode_metrics logs per episode: key, and which of (length, return, seconds).
_EPISODE_METRICS = (
    (EPISODE_LEN_MEAN, 0),
    (EPISODE_RETURN_MEAN, 1),
    (EPISODE_DURATION_SEC_MEAN, 2),
    (("agent_episode_return_mean", DEFAULT_AGENT_ID), 1),
    (("module_episode_return_mean", DEFAULT_MODULE_ID), 1),
    (EPISODE_LEN_MIN, 0),
    (EPISODE_RETURN_MIN, 1),
    (EPISODE_LEN_MAX, 0),
    (EPISODE_RETURN_MAX, 1),
)
_EPISODE_CALLBACKS = ("on_episode_created", "on_episode_start", "on_episode_step", "on_episode_end")


class FastvecEnvRunner(SingleAgentEnvRunner):
    """A ``SingleAgentEnvRunner`` whose ``sample(num_timesteps=...)`` keeps per-env data in numpy columns
    and builds the episode chunks in bulk: the same chunks, metrics and RNG draws as RLlib's runner.

    Seeds: env ``i`` of the runner with ``worker_index`` ``w`` starts from ``config.seed + w * num_envs +
    i``, so no two envs of any runners share a stream (RLlib's ``seed + w``, with gymnasium's ``seed + i``
    per env, would give runner ``w``'s env ``i`` the stream of runner ``w + 1``'s env ``i - 1``).

    >>> config.env_runners(env_runner_cls=FastvecEnvRunner)   # fastvec.adapters.rllib.configure sets it
    """

    # What the parent's constructor makes, as it makes them (it declares the first two Optional: None where
    # there is no env or module, when this runner never samples its own way, see _static_fallback_reason).
    env: DictInfoToList
    module: TorchRLModule
    _env_to_module: ConnectorPipelineV2
    _module_to_env: ConnectorPipelineV2

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        seed = self.config.seed  # what the parent's self._seed comes from, when it is not None
        if seed is not None and self.num_envs:
            self._seed = int(seed + (self.worker_index or 0) * self.num_envs)
            if self.config.in_evaluation:
                self._seed += 1_000_000
        self._get_actions = GetActions()
        self._fallback_reason = self._static_fallback_reason()
        self._fallback_logged: set[str] = set()
        self._cols: _Columns | None = None
        # What the process holds once Ray, torch and the runner are built (some 400k objects) is
        # long-lived: frozen, the cyclic GC stops walking it in every full collection, which took one
        # sample() call in three or four to half speed (CartPole, 64 and 256 envs).
        gc.collect()
        gc.freeze()

    # -- when the fast path applies -------------------------------------------------------------

    def _static_fallback_reason(self) -> str | None:
        if self.env is None:
            return None  # nothing to sample; the parent says so
        if self.module is None:
            return "there is no RLModule (random actions only)"
        pool = self.env.unwrapped
        mode = getattr(pool, "metadata", {}).get("autoreset_mode")
        if mode is not gym.vector.AutoresetMode.NEXT_STEP:
            return f"the env's autoreset mode is {mode!r}, not next-step"
        if not self.episodes_to_numpy:
            return "episodes_to_numpy=False (the fast path builds numpy episodes)"
        if self.module.is_stateful():
            return "the RLModule is stateful (RNN state is carried per env by RLlib's connectors)"
        for name, pipeline, default in (
            ("env-to-module", self._env_to_module, _DEFAULT_ENV_TO_MODULE),
            ("module-to-env", self._module_to_env, _DEFAULT_MODULE_TO_ENV),
        ):
            names = tuple(type(c).__name__ for c in pipeline.connectors)
            if names != default:
                extra = [n for n in names if n not in default] or list(names)
                return f"the {name} pipeline has connectors of its own ({', '.join(extra)})"
        for which in _EPISODE_CALLBACKS:
            if getattr(self.config, f"callbacks_{which}", None) is not None or any(
                getattr(type(cb), which) is not getattr(RLlibCallback, which) for cb in self._callbacks
            ):
                return f"an {which} callback is set (it sees each episode step by step)"
        space = self.env.single_action_space
        if not isinstance(space, gym.spaces.Box | gym.spaces.Discrete | gym.spaces.MultiDiscrete):
            return f"the action space is {type(space).__name__} (the fast path takes Box and Discrete ones)"
        return None

    def _fall_back(self, reason: str) -> None:
        if reason not in self._fallback_logged:
            self._fallback_logged.add(reason)
            logger.info("FastvecEnvRunner samples with SingleAgentEnvRunner's loop: %s.", reason)

    def _sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list[SingleAgentEpisode]:
        reason = self._fallback_reason
        if reason is None and num_timesteps is None:
            reason = "sampling whole episodes (num_episodes or batch_mode='complete_episodes')"
        if reason is not None:
            self._fall_back(reason)
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

    # -- the fast path --------------------------------------------------------------------------

    def _reset_columns(self) -> _Columns:
        """All envs reset (seeded on the first reset): new episodes, as the parent's ``_reset_envs``."""
        self._ongoing_episodes_for_metrics.clear()
        self._shared_data = {}  # type: ignore[assignment]  # RLlib's EnvRunner declares it None, then sets {}
        obs, infos = self._try_env_reset(seed=self._seed if self._needs_initial_reset else None, options=None)
        self._needs_initial_reset = False
        spaces = self.env.single_observation_space, self.env.single_action_space
        self._cols = _Columns(self.num_envs, obs, infos, time.perf_counter(), *spaces)
        return self._cols

    def _step_env(self, actions: np.ndarray) -> Any:
        """``env.step`` on the wrapper under RLlib's ``DictInfoToList`` (infos stay a dict of arrays, turned
        into per-env dicts only where an episode is built); a failing step is handled as the parent's
        ``_try_env_step`` handles it (recreate the env and start again, or raise)."""
        try:
            return self.env.env.step(actions)
        except Exception as e:
            self.metrics.log_value(NUM_ENV_STEP_FAILURES_LIFETIME, 1, reduce="lifetime_sum")
            if not self.config.restart_failed_sub_environments:
                raise RuntimeError(f"RLlib {type(self).__name__}: the env's step failed: {e!r}") from e
            logger.exception("FastvecEnvRunner: the env's step failed; recreating the env and resetting it")
            self.make_env()
            return ENV_STEP_FAILURE

    def _sample_columns(
        self, num_timesteps: int, explore: bool, random_actions: bool, force_reset: bool
    ) -> list[SingleAgentEpisode]:
        if force_reset or self._needs_initial_reset or self._cols is None:
            self._reset_columns()
        module = self.module
        # TorchRLModule.forward_exploration/-inference put the module in eval mode around each call
        # (a recursive walk over its layers, twice a step): here once for the whole call.
        plain = (
            type(module).forward_exploration is TorchRLModule.forward_exploration
            and type(module).forward_inference is TorchRLModule.forward_inference
        )
        was_training = module.training if plain else False
        if plain:
            module.eval()
        try:
            return self._sample_loop(num_timesteps, explore, random_actions, plain)
        finally:
            if was_training:
                module.train()

    def _sample_loop(
        self, num_timesteps: int, explore: bool, random_actions: bool, plain: bool
    ) -> list[SingleAgentEpisode]:
        cols = self._cols
        assert cols is not None
        cols.begin(self.config.episode_lookback_horizon)
        module = self.module
        if explore:
            forward = module._forward_exploration if plain else module.forward_exploration
        else:
            forward = module._forward_inference if plain else module.forward_inference
        runners = self.config.num_env_runners or 1
        to_env_fn = action_map(self.env.single_action_space, self.config.normalize_actions, self.config.clip_actions)
        ts = steps = 0
        infer_s = step_s = 0.0
        while ts < num_timesteps:
            if random_actions:
                actions = self.env.action_space.sample()
                extra: dict[str, np.ndarray] = {}
                actions_for_env = actions
            else:
                t0 = time.perf_counter()
                t = (self.num_env_steps_sampled_lifetime // runners + ts) * runners if explore else None
                actions, actions_for_env, extra = self._policy(cols.obs, forward, explore, t, to_env_fn)
                infer_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            results = self._step_env(actions_for_env)
            step_s += time.perf_counter() - t0
            steps += 1
            if results is ENV_STEP_FAILURE:  # make_env() recreated the env (and asks for a seeded reset)
                ts = 0
                cols = self._reset_columns()
                cols.begin(self.config.episode_lookback_horizon)
                continue
            obs, rewards, terminated, truncated, infos = results
            ts += cols.add(actions, extra, obs, rewards, terminated, truncated, infos, time.perf_counter())
        if steps:
            self.metrics.log_value(ENV_STEP_TIMER, step_s / steps)
            self._log_env_steps(metric=self._metrics_num_try_env_step, num_steps=steps)
            if not random_actions:
                self.metrics.log_value(RLMODULE_INFERENCE_TIMER, infer_s / steps)
        done, ongoing = cols.episodes(self._weights_seq_no, self.env._convert_info_to_list)
        self._done_episodes_for_metrics.extend(done)
        for eps in ongoing:
            self._ongoing_episodes_for_metrics[eps.id_].append(eps)
        self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=ts)
        self._increase_sampled_metrics(ts, len(done))
        return done + ongoing

    def _policy(self, obs: np.ndarray, forward: Any, explore: bool, t: int | None, to_env: Any) -> tuple:
        """One batched forward pass and the actions as RLlib's ``GetActions`` draws them: the actions (for
        the episodes), the actions for the env (unsquashed or clipped) and the other model outputs."""
        batch = {Columns.OBS: _to_tensor(obs, self._device)}
        out = forward(batch, t=t) if explore else forward(batch)
        self._get_actions._get_actions(out, self.module, explore)
        out = _to_numpy(out)
        actions = out.pop(Columns.ACTIONS)
        actions_for_env = out.pop(Columns.ACTIONS_FOR_ENV, None)
        return actions, to_env(actions) if actions_for_env is None else actions_for_env, out

    def get_metrics(self) -> Any:
        """The parent's metrics, with the episode metrics logged only for the episodes their window holds:
        each is a mean, min or max over the last ``metrics_num_episodes_for_smoothing / num_env_runners``
        episodes, so the ones before those never count (RLlib logs every episode, 10 values each)."""
        done = self._done_episodes_for_metrics
        chunks = self._ongoing_episodes_for_metrics
        earlier = [chunks.pop(eps.id_, ()) for eps in done]
        window = max(1, math.ceil(self.config.metrics_num_episodes_for_smoothing / (self.config.num_env_runners or 1)))
        values = []
        for eps, before in list(zip(done, earlier, strict=True))[-window:]:
            length, ret, seconds = len(eps), eps.get_return(), eps.get_duration_s()
            for chunk in before:
                length += len(chunk)
                ret += chunk.get_return()
                seconds += chunk.get_duration_s()
            values.append((length, ret, seconds))
        done.clear()
        if values:
            # The first as the parent logs it (which makes the Stats objects); the others pushed to the same
            # Stats in the same order, without log_value's lookups (nine values an episode).
            self._log_episode_metrics(*values[0])
            stats = [(self.metrics._get_key(key), which) for key, which in _EPISODE_METRICS]
            for row in values[1:]:
                for st, which in stats:
                    st.push(row[which])
        return self.metrics.reduce()


def _to_tensor(obs: Any, device: Any) -> Any:
    """RLlib's ``convert_to_torch_tensor`` for one numpy batch (floats as float32), without its tree walk."""
    if not isinstance(obs, np.ndarray) or obs.dtype == object:
        return convert_to_torch_tensor(obs, device=device)
    tensor = torch.from_numpy(obs)
    if tensor.is_floating_point() and tensor.dtype != torch.float16:
        tensor = tensor.float()
    return tensor if device is None else tensor.to(device)


def _to_numpy(out: dict[str, Any]) -> dict[str, Any]:
    """RLlib's ``convert_to_numpy`` (floats to float32, signed ints to int32) for a flat dict of batched
    tensors, without its tree walk; anything else goes through RLlib's."""
    if not all(isinstance(v, torch.Tensor) and v.dim() > 0 for v in out.values()):
        return cast(dict[str, Any], convert_to_numpy(out))  # the same structure back
    result = {}
    for k, v in out.items():
        a = v.detach().cpu().numpy()
        if np.issubdtype(a.dtype, np.floating):
            a = a.astype(np.float32)
        elif np.issubdtype(a.dtype, int):
            a = a.astype(np.int32)
        result[k] = a
    return result


def action_map(space: gym.Space, normalize: bool, clip: bool) -> Any:
    """What RLlib's ``NormalizeAndClipActions`` does to each env's action, on the whole batch at once:
    Box actions unsquashed from [-1, 1] (``normalize_actions``) or clipped (``clip_actions``), integer
    ones shifted by the space's ``start`` when unsquashing (``unsquash_action``'s own arithmetic)."""
    if not (normalize or clip):
        return lambda a: a
    if isinstance(space, gym.spaces.Box):
        low, high = space.low, space.high
        if not normalize:
            return lambda a: np.clip(a, low, high)
        if not (np.all(space.bounded_below) and np.all(space.bounded_above)):
            return lambda a: a
        if space.dtype in (np.float32, np.float64):
            return lambda a: np.clip(low + (a + 1.0) * (high - low) / 2.0, low, high)
        if np.issubdtype(space.dtype, np.integer):
            return lambda a: low + a
        return lambda a: a
    return lambda a: a  # Discrete and MultiDiscrete: unsquash_action and clip_action leave them


class _Columns:
    """One sample() call's steps, a row per step, and what each env carries over from the last call.

    Rows: row 0 holds the observation every env starts the call with; row ``j >= 1`` is step ``j - 1``'s
    result. An env whose episode ended at a step gets its reset observation at the next one (next-step
    autoreset): that row starts a new episode and is not a timestep. Episode chunks are cut from the rows
    at the end of the call.
    """

    def __init__(
        self, num_envs: int, obs: np.ndarray, infos: list[dict], now: float, obs_space: gym.Space, act_space: gym.Space
    ) -> None:
        self.num_envs = num_envs
        self.build = _EpisodeBuilder(obs_space, act_space)
        self.obs = obs  # the latest observations: what the next forward pass takes
        # Per env, the ongoing episode: id, its t, and the lookback the next chunk starts with
        # (observations and infos: one more than the others). None: the env's next row is a reset.
        self.ids: list[str | None] = [uuid.uuid4().hex for _ in range(num_envs)]
        self.t = np.zeros(num_envs, np.int64)
        self.lookback: list[dict[str, Any]] = [
            {"obs": obs[i : i + 1], "infos": [infos[i]], "act": None, "rew": None, "extra": {}} for i in range(num_envs)
        ]
        self.start_time: list[float | None] = [now] * num_envs
        self.pending = np.zeros(num_envs, bool)  # ended at the last step: the next row is a reset

    def begin(self, lookback: int) -> None:
        self.horizon = lookback
        self.rows_obs = [self.obs]
        self.rows_act: list[np.ndarray] = []
        self.rows_extra: list[dict[str, np.ndarray]] = []
        self.rows_rew: list[np.ndarray] = []
        self.rows_term: list[np.ndarray] = []
        self.rows_trunc: list[np.ndarray] = []
        self.rows_reset: list[np.ndarray] = []
        self.rows_info: list[dict] = [{}]
        self.rows_time: list[float] = [time.perf_counter()]
        self.ended = self.pending.copy()

    def add(self, act, extra, obs, rew, term, trunc, infos, now: float) -> int:
        """Appends one step; returns its timesteps (envs that stepped, not reset)."""
        reset = self.ended
        self.rows_act.append(act)
        self.rows_extra.append(extra)
        self.rows_obs.append(obs)
        self.rows_rew.append(rew)
        self.rows_term.append(term)
        self.rows_trunc.append(trunc)
        self.rows_reset.append(reset)
        self.rows_info.append(infos)
        self.rows_time.append(now)
        self.ended = (term | trunc) & ~reset
        self.obs = obs
        return self.num_envs - int(np.count_nonzero(reset))

    def episodes(self, seq_no: int, info_rows) -> tuple[list, list]:
        """The chunks of this call: finished episodes in the order they finished, then the ongoing ones in
        env order (those with steps); carries each ongoing episode's lookback into the next call."""
        n, rows = self.num_envs, len(self.rows_act)
        obs = _ObsRows(self.rows_obs)
        col = {
            "act": np.stack(self.rows_act) if rows else None,
            "rew": np.stack(self.rows_rew) if rows else None,
            "extra": self._extra_columns(rows, n, seq_no),
            "infos": _LazyInfos(self.rows_info, info_rows),
        }
        if rows:
            term, trunc, reset = np.stack(self.rows_term), np.stack(self.rows_trunc), np.stack(self.rows_reset)
            done = (term | trunc) & ~reset
        times = self.rows_time
        finished: list[tuple[int, int, SingleAgentEpisode]] = []
        ongoing: list[SingleAgentEpisode] = []
        resets_of, ends_of = _rows_by_env(reset if rows else None, n), _rows_by_env(done if rows else None, n)
        for i in range(n):
            resets, ends = resets_of[i], ends_of[i]
            starts = resets if self.pending[i] else [0, *resets]
            for k, a in enumerate(starts):
                ended = k < len(ends)
                e = ends[k] if ended else rows
                flags = (bool(term[e - 1, i]), bool(trunc[e - 1, i])) if ended else (False, False)
                eps = self._chunk(i, a, e, obs, col, flags)
                # Durations as the parent times them: from the reset (or, in a chunk that continues an
                # episode, from its first step) to the last step.
                start = (self.start_time[i] if a == 0 else times[a]) or (times[1] if e > 0 else None)
                # (RLlib's SingleAgentEpisode declares both None, then sets them itself.)
                eps._start_time = start  # type: ignore[assignment]
                eps._last_step_time = times[e] if e > a else None  # type: ignore[assignment]
                if ended:
                    finished.append((e, i, eps))
                else:
                    if eps.t > 0:
                        ongoing.append(eps)
                    self._carry(i, eps)
            if rows:
                self.pending[i] = bool(ends) and ends[-1] == rows
                if self.pending[i]:
                    self.ids[i] = None
        finished.sort(key=lambda x: (x[0], x[1]))
        return [f[2] for f in finished], ongoing

    def _extra_columns(self, rows: int, n: int, seq_no: int) -> dict[str, np.ndarray | None]:
        """Each model output as a (rows, num_envs, ...) column; steps without it (random actions) get zeros,
        as do outputs the lookback has and this call's steps lack."""
        like: dict[str, np.ndarray] = {}
        for row in self.rows_extra:
            for k, v in row.items():
                like.setdefault(k, v)
        for lb in self.lookback:
            for k, v in lb["extra"].items():
                if k not in like and k != WEIGHTS_SEQ_NO:
                    like[k] = np.zeros((n, *v.shape[1:]), v.dtype)
        cols: dict[str, np.ndarray | None] = {}
        for k, v in like.items():
            zero = np.zeros_like(v)
            cols[k] = np.stack([row.get(k, zero) for row in self.rows_extra]) if rows else None
        cols[WEIGHTS_SEQ_NO] = np.full((rows, n), seq_no, np.int64)
        return cols

    def _chunk(self, i, a, e, obs, col, flags) -> SingleAgentEpisode:
        """Env ``i``'s episode from row ``a`` (its first observation) to row ``e``; an episode going on from
        the last call (``a == 0``) starts with the lookback it carried."""
        act, rew, extra = col["act"], col["rew"], col["extra"]
        steps = slice(a, e)  # the steps into rows a + 1 .. e
        if a == 0 and not self.pending[i]:
            lb = self.lookback[i]
            ident, t0 = self.ids[i], int(self.t[i])
            k = 0 if lb["rew"] is None else len(lb["rew"])
            o = obs.chunk(i, 1, e + 1, lb["obs"])
            inf = lb["infos"] + col["infos"].rows(i, 1, e + 1)
        else:
            lb, ident, t0, k = None, uuid.uuid4().hex, 0, 0
            o = obs.chunk(i, a, e + 1, None)
            inf = col["infos"].rows(i, a, e + 1)
        if act is None:  # no steps this call (num_timesteps=0): the lookback only
            space = self.build.act_space
            assert space.shape is not None  # Box, Discrete or MultiDiscrete (see _static_fallback_reason)
            ac = lb["act"][:0] if k else np.zeros((0, *space.shape), space.dtype)
            rw = lb["rew"][:0] if k else np.zeros(0, np.float32)
            ex: dict[str, np.ndarray] = {}
        else:
            ac, rw = act[steps, i], rew[steps, i]
            ex = {key: v[steps, i] for key, v in extra.items()}
        if k:
            ac = np.concatenate([lb["act"], ac])
            rw = np.concatenate([lb["rew"], rw])
            for key in set(ex) | set(lb["extra"]):
                before, after = lb["extra"].get(key), ex.get(key)
                if before is None:
                    assert after is not None  # the key is this chunk's
                    before = np.zeros((k, *after.shape[1:]), after.dtype)
                ex[key] = before if after is None else np.concatenate([before, after])
        return self.build(ident, o, inf, ac, rw, flags, ex, t0, k)

    def _carry(self, i: int, eps: SingleAgentEpisode) -> None:
        """What ``eps.cut(len_lookback_buffer=horizon)`` keeps for the next chunk: the last ``horizon``
        steps (lookback included) and the latest observation; the next chunk's clock starts at its first
        step."""
        n_rew = len(eps.rewards.data)
        k = min(self.horizon, n_rew)
        self.ids[i] = eps.id_
        self.t[i] = eps.t
        self.lookback[i] = {
            "obs": eps.observations.data[len(eps.observations.data) - k - 1 :],
            "infos": eps.infos.data[len(eps.infos.data) - k - 1 :],
            "act": eps.actions.data[n_rew - k :] if k else None,
            "rew": eps.rewards.data[n_rew - k :] if k else None,
            "extra": {key: v.data[n_rew - k :] for key, v in eps.extra_model_outputs.items()} if k else {},
        }
        self.start_time[i] = None


class _ObsRows:
    """A call's observation rows, cut into each chunk's observations. Small ones (classic control) are
    stacked once and a chunk is a view (its lookback joined on); large ones (frames) are stacked chunk by
    chunk from the rows, so each frame is copied once, not once into the stack and again behind a
    lookback (Pong at 64 envs: 0.5 GB a call)."""

    LARGE = 1024  # bytes of one env's observation

    def __init__(self, rows: list[np.ndarray]) -> None:
        self._rows = rows
        first = rows[0]
        large = isinstance(first, np.ndarray) and first.ndim and first[0].nbytes >= self.LARGE
        self._stacked = None if large else np.stack(rows)

    def chunk(self, i: int, start: int, stop: int, lookback: np.ndarray | None) -> np.ndarray:
        """Env ``i``'s observations of rows ``start`` to ``stop - 1``, after ``lookback`` (if any)."""
        if self._stacked is not None:
            view = self._stacked[start:stop, i]
            return view if lookback is None else np.concatenate([lookback, view])
        items = [row[i] for row in self._rows[start:stop]]
        return np.stack(items if lookback is None else [*lookback, *items])


def _rows_by_env(flags: np.ndarray | None, n: int) -> list[list[int]]:
    """For each env, the rows (1-based: step ``s`` is row ``s + 1``) where ``flags[step, env]`` is set."""
    out: list[list[int]] = [[] for _ in range(n)]
    if flags is not None:
        envs, steps = np.nonzero(flags.T)  # env-major, steps ascending within an env
        for env, row in zip(envs.tolist(), (steps + 1).tolist(), strict=True):
            out[env].append(row)
    return out


class _EpisodeBuilder:
    """``SingleAgentEpisode(...)`` with numpy data, without the constructor's per-buffer work: the space
    structs are worked out once per runner, not nine times per chunk (most of a chunk's cost in RLlib's
    constructor). The same attributes as the constructor sets (a test holds the two side by side)."""

    def __init__(self, obs_space: gym.Space, act_space: gym.Space) -> None:
        self.obs_space, self.act_space = obs_space, act_space
        self._structs = {
            "obs": get_base_struct_from_space(obs_space),
            "act": get_base_struct_from_space(act_space),
            "rew": get_base_struct_from_space(_REWARDS_BOX_SPACE),
            None: get_base_struct_from_space(None),
        }

    @staticmethod
    def _buffer(data: Any, lookback: int, space: gym.Space | None, struct: Any) -> InfiniteLookbackBuffer:
        # lookback <= len(data) here, so the constructor's min() is a no-op
        buffer = InfiniteLookbackBuffer.__new__(InfiniteLookbackBuffer)
        buffer.__dict__ = {
            "data": data,
            "lookback": lookback,
            "finalized": not isinstance(data, list),
            "_space": space,
            "_space_struct": struct,
        }
        return buffer

    def __call__(self, ident, obs, infos, actions, rewards, flags, extra, t_started: int, lookback: int):
        structs, none = self._structs, self._structs[None]
        eps = SingleAgentEpisode.__new__(SingleAgentEpisode)
        eps.id_ = ident
        eps.agent_id = eps.module_id = eps.multi_agent_episode_id = None
        eps.observations = self._buffer(obs, lookback, self.obs_space, structs["obs"])
        # (The constructor's own attributes; RLlib declares the two spaces None and sets them itself.)
        eps._observation_space = self.obs_space  # type: ignore[assignment]
        eps.infos = self._buffer(infos, lookback, None, none)
        eps.actions = self._buffer(actions, lookback, self.act_space, structs["act"])
        eps._action_space = self.act_space  # type: ignore[assignment]
        eps.rewards = self._buffer(rewards, lookback, _REWARDS_BOX_SPACE, structs["rew"])
        eps.is_terminated, eps.is_truncated = flags
        eps.extra_model_outputs = {k: self._buffer(v, lookback, None, none) for k, v in extra.items()}
        eps.t_started = t_started
        eps.t = len(rewards) - lookback + t_started
        eps._custom_data = {}
        eps._start_time = eps._last_step_time = None
        eps._last_added_observation = eps._last_added_infos = None
        return eps


class _LazyInfos:
    """Per-env info dicts, unbatched only for rows whose info is not empty."""

    def __init__(self, rows: list[dict], to_list) -> None:
        self._rows, self._to_list = rows, to_list
        self._any = any(rows)
        self._cache: dict[int, list[dict]] = {}

    def rows(self, i: int, start: int, stop: int) -> list[dict]:
        if not self._any:
            return [{} for _ in range(start, stop)]
        out: list[dict] = []
        for r in range(start, stop):
            info = self._rows[r]
            if not info:
                out.append({})
                continue
            if r not in self._cache:
                self._cache[r] = self._to_list(info)
            out.append(self._cache[r][i])
        return out
