"""FastvecEnvRunner: RLlib's SingleAgentEnvRunner, sampling into numpy columns.

RLlib's runner spends most of ``sample()`` on per-env Python: it unbatches every step into per-env
items, runs each through its connector pieces and appends it to a ``SingleAgentEpisode``. This runner
keeps the step loop batched (one forward pass, the actions as RLlib's ``GetActions`` computes them,
Box actions unsquashed or clipped in one call, the pool stepped directly) and writes each step's batch
to a column; at the end of the call it cuts the columns into the episode chunks RLlib's runner would
have returned (:mod:`fastvec.adapters._rllib_columns`). Everything else (``sample()``'s metrics and
callbacks, ``get_metrics``, state, checkpoints) is the parent's.

Where the fast path cannot give RLlib's result, ``_sample`` is the parent's, and the log says why
once, as a warning (:mod:`fastvec.adapters._rllib_fallback`): connectors of the user's in either
pipeline (but for the observation and frame-stacking connectors of
:mod:`fastvec.adapters._rllib_connectors`), ``on_episode_*`` callbacks, stateful modules,
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
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from gymnasium.wrappers.vector import DictInfoToList
from ray.rllib.connectors.connector_pipeline_v2 import ConnectorPipelineV2
from ray.rllib.connectors.module_to_env import GetActions
from ray.rllib.core import DEFAULT_AGENT_ID, DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.env.env_runner import ENV_STEP_FAILURE, NUM_ENV_STEP_FAILURES_LIFETIME
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
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
)
from ray.rllib.utils.numpy import convert_to_numpy
from ray.rllib.utils.torch_utils import convert_to_torch_tensor

from fastvec.adapters import _rllib_connectors as obs_connectors
from fastvec.adapters._rllib_columns import SampleColumns
from fastvec.adapters._rllib_fallback import FAST_ACTION_SPACES, FallsBack, callbacks_reason, pipelines_reason

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


class FastvecEnvRunner(FallsBack, SingleAgentEnvRunner):
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
    _fallback_words = "FastvecEnvRunner samples with SingleAgentEnvRunner's loop"

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        seed = self.config.seed  # what the parent's self._seed comes from, when it is not None
        if seed is not None and self.num_envs:
            self._seed = int(seed + (self.worker_index or 0) * self.num_envs)
            if self.config.in_evaluation:
                self._seed += 1_000_000
        self._get_actions = GetActions()
        self._obs_connectors: obs_connectors.ObservationConnectors | None = None
        self._fallback_reason = self._static_fallback_reason()
        self._cols: SampleColumns | None = None
        # What the process holds once Ray, torch and the runner are built (some 400k objects) is
        # long-lived: frozen, the cyclic GC stops walking it in every full collection, which slowed
        # sample() calls (docs/performance.md).
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
        # The user's env-to-module connectors come first (AlgorithmConfig prepends them to the defaults).
        connectors = list(self._env_to_module.connectors)
        own = connectors[: max(0, len(connectors) - len(_DEFAULT_ENV_TO_MODULE))]
        unsupported = obs_connectors.unsupported(own)
        if unsupported is not None:
            return f"the env-to-module pipeline has a connector the fast path does not run ({unsupported})"
        self._obs_connectors = obs_connectors.ObservationConnectors(own, self.env.single_observation_space)
        reason = pipelines_reason(
            (
                ("env-to-module", [type(c).__name__ for c in connectors[len(own) :]], _DEFAULT_ENV_TO_MODULE),
                ("module-to-env", [type(c).__name__ for c in self._module_to_env.connectors], _DEFAULT_MODULE_TO_ENV),
            )
        ) or callbacks_reason(self.config, self._callbacks)
        if reason is not None:
            return reason
        space = self.env.single_action_space
        if not isinstance(space, FAST_ACTION_SPACES):
            return f"the action space is {type(space).__name__} (the fast path takes Box and Discrete ones)"
        return None

    def _sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list[SingleAgentEpisode]:
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

    # -- the fast path --------------------------------------------------------------------------

    def _reset_columns(self) -> SampleColumns:
        """All envs reset (seeded on the first reset): new episodes, as the parent's ``_reset_envs``."""
        self._ongoing_episodes_for_metrics.clear()
        self._shared_data = {}  # type: ignore[assignment]  # RLlib's EnvRunner declares it None, then sets {}
        obs, infos = self._try_env_reset(seed=self._seed if self._needs_initial_reset else None, options=None)
        self._needs_initial_reset = False
        assert self._obs_connectors is not None  # set where the fast path applies
        obs = self._obs_connectors(obs)
        if self._obs_connectors.stack is not None:
            self._obs_connectors.stack.reset(obs)
        spaces = self._obs_connectors.observation_space, self.env.single_action_space
        self._cols = SampleColumns(self.num_envs, obs, infos, time.perf_counter(), *spaces)
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
        obs_connectors_ = self._obs_connectors
        assert obs_connectors_ is not None
        stack = obs_connectors_.stack  # the module's input where a FrameStacking connector makes it
        if stack is not None:
            stack.begin(self.config.episode_lookback_horizon)
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
                inputs = cols.obs if stack is None else stack.frames
                actions, actions_for_env, extra = self._policy(inputs, forward, explore, t, to_env_fn)
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
            obs = obs_connectors_(obs)
            if stack is not None:
                stack.push(obs, cols.ended)  # (cols.ended: the envs whose row this step is a reset)
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
