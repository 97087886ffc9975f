"""One ``FastvecEnvRunner.sample()`` call as numpy columns, a row per step, cut at the end of the call into
the ``SingleAgentEpisode`` chunks RLlib's runner would have returned (finished episodes, then ongoing ones),
each ongoing episode's lookback carried into the next call.

Owner: the runner that makes a ``SampleColumns``, on the thread that calls ``sample()``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.env.single_agent_episode import _REWARDS_BOX_SPACE, SingleAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.metrics import WEIGHTS_SEQ_NO
from ray.rllib.utils.spaces.space_utils import get_base_struct_from_space


class SampleColumns:
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
        resets_of, ends_of = rows_by_env(reset if rows else None, n), rows_by_env(done if rows else None, n)
        for i in range(n):
            for a, e, ended in episode_spans(bool(self.pending[i]), resets_of[i], ends_of[i], rows):
                flags = (bool(term[e - 1, i]), bool(trunc[e - 1, i])) if ended else (False, False)
                eps = self._chunk(i, a, e, obs, col, flags)
                set_clock(eps, self.start_time[i], times, a, e)
                if ended:
                    finished.append((e, i, eps))
                else:
                    if eps.t > 0:
                        ongoing.append(eps)
                    self._carry(i, eps)
            if rows:
                self.pending[i] = bool(ends_of[i]) and ends_of[i][-1] == rows
                if self.pending[i]:
                    self.ids[i] = None
        finished.sort(key=lambda x: (x[0], x[1]))
        return [f[2] for f in finished], ongoing

    def _extra_columns(self, rows: int, n: int, seq_no: int) -> dict[str, np.ndarray | None]:
        """Each model output as a (rows, num_envs, ...) column (see :func:`output_columns`)."""
        cols = output_columns(self.rows_extra, [lb["extra"] for lb in self.lookback], n)
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
            ac, rw, ex = no_steps(lb if k else None, self.build.act_space, np.float32)
        else:
            ac, rw = act[steps, i], rew[steps, i]
            ex = {key: v[steps, i] for key, v in extra.items()}
        if k:
            ac, rw, ex = after_lookback(lb, k, ac, rw, ex)
        return self.build(ident, o, inf, ac, rw, flags, ex, t0, k)

    def _carry(self, i: int, eps: SingleAgentEpisode) -> None:
        """What ``eps.cut(len_lookback_buffer=horizon)`` keeps for the next chunk: the last ``horizon``
        steps (lookback included) and the latest observation; the next chunk's clock starts at its first
        step."""
        self.ids[i] = eps.id_
        self.t[i] = eps.t
        self.lookback[i] = carried_lookback(eps, self.horizon)
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


# -- cutting chunks from columns: what the single- and multi-agent columns share ------------------------------


def rows_by_env(flags: np.ndarray | None, n: int) -> list[list[int]]:
    """For each env, the rows (1-based: step ``s`` is row ``s + 1``) where ``flags[step, env]`` is set."""
    out: list[list[int]] = [[] for _ in range(n)]
    if flags is not None:
        envs, steps = np.nonzero(flags.T)  # env-major, steps ascending within an env
        for env, row in zip(envs.tolist(), (steps + 1).tolist(), strict=True):
            out[env].append(row)
    return out


def episode_spans(pending: bool, resets: list[int], ends: list[int], rows: int) -> list[tuple[int, int, bool]]:
    """One env's episodes in a call of ``rows`` steps, in order: (the row of its first observation, the row of
    its last, whether it ended). ``resets``/``ends``: the env's rows that start/end an episode; ``pending``:
    its first row is a reset (its last episode ended at the last call's end), else row 0 goes on with the
    episode of the last call."""
    starts = resets if pending else [0, *resets]
    return [(a, ends[k] if k < len(ends) else rows, k < len(ends)) for k, a in enumerate(starts)]


def set_clock(eps: Any, carried_start: float | None, times: list[float], a: int, e: int) -> None:
    """A chunk's clock as the parent runner times it: from the reset (or, in a chunk that goes on with an
    episode, from its first step: ``carried_start`` None) to its last step. ``times``: each row's time."""
    # (RLlib's episodes declare both None, then set them themselves.)
    eps._start_time = (carried_start if a == 0 else times[a]) or (times[1] if e > 0 else None)
    eps._last_step_time = times[e] if e > a else None


def output_columns(rows: list[dict[str, np.ndarray]], lookbacks: list[dict[str, np.ndarray]], n: int) -> dict:
    """Each model output of a call's ``rows`` (per step, output -> ``(num_envs, ...)``) as a ``(steps, num_envs,
    ...)`` column (None without steps); steps without it (random actions) get zeros, as do outputs only the
    carried ``lookbacks`` have (but the weights' sequence number, which each chunk's steps get anew)."""
    like: dict[str, np.ndarray] = {}
    for row in rows:
        for k, v in row.items():
            like.setdefault(k, v)
    for extra in lookbacks:
        for k, v in extra.items():
            if k not in like and k != WEIGHTS_SEQ_NO:
                like[k] = np.zeros((n, *v.shape[1:]), v.dtype)
    cols: dict[str, np.ndarray | None] = {}
    for k, v in like.items():
        zero = np.zeros_like(v)
        cols[k] = np.stack([row.get(k, zero) for row in rows]) if rows else None
    return cols


def carried_lookback(eps: SingleAgentEpisode, horizon: int) -> dict[str, Any]:
    """What ``cut(len_lookback_buffer=horizon)`` keeps of an episode chunk for the next one: its last
    ``horizon`` steps (lookback included) and the latest observation and info."""
    n_rew = len(eps.rewards.data)
    k = min(horizon, n_rew)
    return {
        "obs": eps.observations.data[len(eps.observations.data) - k - 1 :],
        "infos": eps.infos.data[len(eps.infos.data) - k - 1 :],
        "act": eps.actions.data[n_rew - k :] if k else None,
        "rew": eps.rewards.data[n_rew - k :] if k else None,
        "extra": {key: v.data[n_rew - k :] for key, v in eps.extra_model_outputs.items()} if k else {},
    }


def no_steps(lookback: dict[str, Any] | None, act_space: gym.Space, reward_dtype: Any) -> tuple:
    """A chunk's actions, rewards and model outputs in a call without steps (``num_timesteps=0``): empty, of
    the carried ``lookback``'s dtypes where it has steps."""
    if lookback is not None:
        return lookback["act"][:0], lookback["rew"][:0], {}
    return np.zeros((0, *(act_space.shape or ())), act_space.dtype), np.zeros(0, reward_dtype), {}


def after_lookback(lookback: dict[str, Any], k: int, ac: np.ndarray, rw: np.ndarray, ex: dict) -> tuple:
    """A chunk's actions, rewards and model outputs after the ``k`` steps its ``lookback`` carried; an output
    on one side only gets zeros on the other."""
    ac = np.concatenate([lookback["act"], ac])
    rw = np.concatenate([lookback["rew"], rw])
    ex = dict(ex)
    for key in set(ex) | set(lookback["extra"]):
        before, after = lookback["extra"].get(key), ex.get(key)
        if before is None:
            assert after is not None  # the key is this chunk's
            before = np.zeros((k, *after.shape[1:]), after.dtype)
        ex[key] = before if after is None else np.concatenate([before, after])
    return ac, rw, ex


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
