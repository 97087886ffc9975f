"""RLlib's observation connectors on ``FastvecEnvRunner``'s batches.

RLlib's runner passes every env's latest observation (reset observations too) through its env-to-module
pipeline each step, env by env, and the connectors here (``MeanStdFilter``, ``FlattenObservations``, which
RLlib's example configs add) rewrite that observation in the episode. Here each step's batch goes through
the same connector objects in the same env order, so their outputs and their state (``get_state``,
``set_state``, ``merge_states``: what RLlib syncs across runners) are RLlib's own.

``FrameStackingEnvToModule`` (``atari_ppo.py``'s) leaves the episodes alone and gives the module each env's
last ``num_frames`` observations of its episode chunk, lookback included, zeros before them; here a
:class:`FrameStack` keeps those stacks for the batch (see there for RLlib's chunk boundaries).

Owner: the runner that builds an ``ObservationConnectors``, on the thread that calls ``sample()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
import numpy as np
from ray.rllib.connectors.common.flatten_observations import FlattenObservations
from ray.rllib.connectors.common.frame_stacking import FrameStacking
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.connectors.env_to_module.mean_std_filter import MeanStdFilter
from ray.rllib.utils.filter import RunningStat
from ray.rllib.utils.numpy import SMALL_NUMBER, flatten_inputs_to_1d_tensor


class ObservationConnectors:
    """The user's observation connectors at the head of an env-to-module pipeline, applied to a batch of
    observations (``num_envs`` rows) in pipeline order; ``observation_space`` is what the episodes hold.
    ``stack`` is the frame stack a last ``FrameStacking`` connector makes of them (None without one): what
    the module takes instead of the episodes' observations."""

    def __init__(self, connectors: list[ConnectorV2], obs_space: gym.Space) -> None:
        # (unsupported() has said every connector is one of these, and that a FrameStacking one is last)
        stacking = connectors[-1] if connectors and type(connectors[-1]) is FrameStacking else None
        rewriting = connectors[:-1] if stacking is not None else connectors
        self._steps: list[Callable[[Any], np.ndarray]] = [
            _mean_std(c) if isinstance(c, MeanStdFilter) else _flatten(cast(FlattenObservations, c)) for c in rewriting
        ]
        self.observation_space = rewriting[-1].observation_space if rewriting else obs_space
        self.stack = FrameStack(stacking.num_frames) if stacking is not None else None

    def __call__(self, obs: Any) -> np.ndarray:
        for step in self._steps:
            obs = step(obs)
        return obs


def unsupported(connectors: list[ConnectorV2]) -> str | None:
    """Why these connectors cannot run on batches (their name), or None when they can."""
    for k, c in enumerate(connectors):
        name = type(c).__name__
        if type(c) is FrameStacking:
            if c._multi_agent or c._as_learner_connector or k != len(connectors) - 1:
                return f"{name} (multi-agent, as a learner connector, or before another connector)"
        elif type(c) is MeanStdFilter:
            if c._multi_agent or not isinstance(c.input_observation_space, gym.spaces.Box):
                return f"{name} (multi-agent, or of a non-Box observation space)"
        elif type(c) is FlattenObservations:
            if c._multi_agent or c._as_learner_connector or c._keys_to_remove:
                return f"{name} (multi-agent, as a learner connector, or with keys_to_remove)"
        else:
            return name
    return None


class FrameStack:
    """RLlib's ``FrameStacking`` env-to-module connector over a batch: per env, the last ``num_frames``
    observations of its episode chunk (its lookback included) joined on the last axis, oldest first, zeros
    where the chunk has fewer. RLlib cuts a chunk at each ``sample()`` call's end, keeping ``lookback + 1``
    observations (``episode_lookback_horizon``), so the stacks of a call's second step on see no further
    back than that (its first step takes the stacks the last call ended with). ``frames`` is a new array
    each step: the module's input for the step, never written again.

    Owner: the runner's ``ObservationConnectors``, on the thread that calls ``sample()``."""

    def __init__(self, num_frames: int) -> None:
        self.num_frames = num_frames
        self.frames = np.empty(0)
        self._count = np.zeros(0, np.int64)  # per env: observations of its chunk, up to num_frames
        self._keep: int | None = None  # a cut to make before the next push

    def reset(self, obs: np.ndarray) -> None:
        """Every env starts an episode with ``obs``."""
        self.frames = np.zeros((*obs.shape[:-1], self.num_frames), obs.dtype)
        self.frames[..., -1] = obs[..., 0]
        self._count = np.ones(len(obs), np.int64)
        self._keep = None

    def begin(self, lookback: int) -> None:
        """A new call: RLlib's chunks go on with ``lookback + 1`` observations."""
        self._keep = lookback + 1

    def push(self, obs: np.ndarray, new_episode: np.ndarray) -> None:
        """Each env's next observation; rows of ``new_episode`` start an episode with it (a reset)."""
        old, count = self.frames, self._count
        if self._keep is not None:
            cut = count > self._keep
            if cut.any():
                old = old.copy()
                old[cut, ..., : self.num_frames - self._keep] = 0
                count[cut] = self._keep
            self._keep = None
        frames = np.empty_like(old)
        frames[..., :-1] = old[..., 1:]
        frames[..., -1] = obs[..., 0]
        count += 1
        if new_episode.any():
            frames[new_episode, ..., :-1] = 0
            count[new_episode] = 1
        np.minimum(count, self.num_frames, out=count)
        self.frames = frames


def _mean_std(connector: MeanStdFilter) -> Callable[[np.ndarray], np.ndarray]:
    """RLlib's ``MeanStdFilter.__call__`` over a batch: its filter, env by env, as the runner calls it (each
    env's observation pushed into the running stats, then normalized by them: the order is the result)."""

    def apply(obs: np.ndarray) -> np.ndarray:
        if connector._filters is None:
            connector._init_new_filters()
        assert connector._filters is not None
        filt, update = connector._filters[None], connector._update_stats
        out = np.empty_like(obs)
        if filt.no_preprocessor or not isinstance(filt.running_stats, RunningStat):
            for i in range(len(obs)):
                out[i] = filt(obs[i], update=update)
        else:
            stats = (filt.running_stats, filt.buffer) if update else ()
            for i in range(len(obs)):
                out[i] = _normalize(filt, obs[i], stats)
        return out

    return apply


def _normalize(filt: Any, x: np.ndarray, stats: tuple) -> np.ndarray:
    """``filt(x, update=bool(stats))`` for one Box observation: each running stat pushed as RLlib's
    ``RunningStat.push`` pushes (the same operations on the same dtypes, a step computed once where RLlib
    computes it twice: the same values), then ``x`` normalized by the running stats as ``filt`` does. Most
    of the filter's cost in RLlib is the call around these operations, not the arithmetic."""
    for rs in stats:
        rs.num_pushes += 1
        rs.num_pushes_delta += 1
        if rs.num_pushes == 1:
            rs.mean_array[...] = x
            rs.mean_delta_array[...] = x
        else:
            delta = x - rs.mean_array
            step = delta / rs.num_pushes
            rs.mean_array[...] += step
            rs.mean_delta_array[...] += step
            spread = delta * (x - rs.mean_array)
            rs.sum_sq_diff_array[...] += spread
            rs.sum_sq_diff_delta_array[...] += spread
    rs = filt.running_stats
    y = x
    if filt.demean:
        y = y - rs.mean_array
    if filt.destd:
        y = y / (rs.std + SMALL_NUMBER)
    if filt.clip:
        y = np.clip(y, -filt.clip, filt.clip)
    return y


def _flatten(connector: FlattenObservations) -> Callable[[Any], np.ndarray]:
    """RLlib's ``FlattenObservations.__call__`` over a batch: the same function RLlib flattens each env's
    observation with, on the batch axis (one-hot codes, reshapes and float32 casts are per element)."""
    struct = connector._input_obs_base_struct

    def apply(obs: Any) -> np.ndarray:
        return np.asarray(flatten_inputs_to_1d_tensor(inputs=obs, spaces_struct=struct, batch_axis=True))

    return apply
