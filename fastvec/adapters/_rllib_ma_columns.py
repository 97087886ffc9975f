"""One ``FastvecMultiAgentEnvRunner.sample()`` call over a pool whose agents never come and go, as numpy columns
(per agent, a row per step), cut at the end of the call into the ``MultiAgentEpisode`` chunks RLlib's
``MultiAgentEnvRunner`` would have returned; each ongoing episode's lookback is carried into the next call.

Which pools: those whose every agent is active in every row and whose agents end their episode together (the
native MPE family). There a ``MultiAgentEpisode`` is regular: each agent's ``SingleAgentEpisode`` has a step at
every env step, nothing hangs (no action without an observation, no reward before an agent's first observation),
and ``env_t_to_agent_t`` is the identity. :meth:`MultiAgentColumns.add` checks this at every step.

Owner: the runner that makes a ``MultiAgentColumns``, on the thread that calls ``sample()``.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from typing import Any, cast

import gymnasium as gym
import numpy as np
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.metrics import WEIGHTS_SEQ_NO

from fastvec.adapters._rllib_columns import (
    _EpisodeBuilder,
    after_lookback,
    carried_lookback,
    episode_spans,
    no_steps,
    output_columns,
    rows_by_env,
    set_clock,
)
from fastvec.batching import info_rows


class MultiAgentColumns:
    """One sample() call's steps, per agent a row per step, and what each env carries over from the last call.

    Rows: row 0 holds the observations every env starts the call with; row ``j >= 1`` is step ``j - 1``'s result.
    An env whose episode ended at a step gets its reset observations at the next one (next-step autoreset): that
    row starts a new episode and is not a timestep.
    """

    def __init__(
        self,
        agents: list[str],
        obs_spaces: dict[str, gym.Space],
        act_spaces: dict[str, gym.Space],
        mapping_fn: Any,
        obs: dict[str, np.ndarray],
        infos: dict[str, Any],
        now: float,
    ) -> None:
        self.agents = list(agents)
        self.num_envs = n = len(next(iter(obs.values())))
        self.obs_spaces, self.act_spaces = dict(obs_spaces), dict(act_spaces)
        self.mapping_fn = mapping_fn
        self.build = {a: _EpisodeBuilder(obs_spaces[a], act_spaces[a]) for a in self.agents}
        # The order RLlib's connectors put an env's agents in the batch: a set of the episode's agents that stepped
        # (get_agents_that_stepped), built from them in the order the episode holds them.
        order = list(set(dict.fromkeys(self.agents)))
        self.step_order = [self.agents.index(a) for a in order]
        self.module_ids: list[Any] = []  # the modules seen, indexed by self.modules
        self.modules = np.zeros((n, len(self.agents)), np.int64)  # per env and agent, its module's index
        # Per env, the ongoing episode (RLlib's object, filled when its chunk is cut) and the lookback the next
        # chunk starts with (per agent: observations and infos one more than the others). None: the env's next
        # row is a reset.
        first_shells = [self._new_episode() for _ in range(n)]  # (RLlib's runner makes every episode, then maps)
        for i, shell in enumerate(first_shells):
            self._map(i, shell)
        self.shells: list[MultiAgentEpisode | None] = list(first_shells)
        self.t = np.zeros(n, np.int64)
        self.sa_ids: list[dict[str, str]] = [{} for _ in range(n)]
        self.ma_lookback = np.zeros(n, np.int64)  # the ongoing chunk's env-step lookback (0 from a reset)
        first = _LazyInfos([infos], self.agents, n)
        self.lookback: list[dict[str, Any]] = [
            {
                a: {"obs": obs[a][i : i + 1], "infos": first.rows(a, i, 0, 1), "act": None, "rew": None, "extra": {}}
                for a in self.agents
            }
            for i in range(n)
        ]
        self.start_time: list[float | None] = [now] * n
        self.pending = np.zeros(n, bool)  # ended at the last step: the next row is a reset
        self.obs = obs

    def _new_episode(self) -> MultiAgentEpisode:
        """What RLlib's runner's ``_new_episode`` makes (the spaces of every possible agent)."""
        return MultiAgentEpisode(
            observation_space=cast(Any, dict(self.obs_spaces)),  # (RLlib's dicts, annotated as spaces)
            action_space=cast(Any, dict(self.act_spaces)),
            agent_to_module_mapping_fn=self.mapping_fn,
        )

    def _map(self, i: int, episode: MultiAgentEpisode) -> None:
        """Env ``i``'s agents mapped to modules as ``add_env_reset`` maps them (in observation order)."""
        for k, a in enumerate(self.agents):
            mid = episode.module_for(a)
            if mid not in self.module_ids:
                self.module_ids.append(mid)
            self.modules[i, k] = self.module_ids.index(mid)

    # -- the step loop -----------------------------------------------------------------------

    def begin(self, lookback: int) -> None:
        self.horizon = lookback
        self.rows_obs: list[dict[str, np.ndarray]] = [self.obs]
        self.rows_act: list[dict[str, np.ndarray]] = []
        self.rows_extra: list[dict[str, dict[str, np.ndarray]]] = []
        self.rows_rew: list[dict[str, np.ndarray]] = []
        self.rows_trunc: list[np.ndarray] = []  # (num_envs, agents)
        self.rows_all_trunc: list[np.ndarray] = []  # "__all__" truncated, as PoolVectorMultiAgentEnv sets it
        self.rows_reset: list[np.ndarray] = []
        self.rows_end: list[np.ndarray] = []  # the episode ended at this step
        self.rows_info: list[dict] = []
        self.rows_time: list[float] = [time.perf_counter()]
        self.new_shells: list[list[MultiAgentEpisode]] = [[] for _ in range(self.num_envs)]
        self.ended = self.pending.copy()

    def live(self) -> np.ndarray:
        """The envs due to act at the next step (the others' next row is their reset)."""
        return ~self.ended

    def module_batches(self, live: np.ndarray) -> list[tuple[Any, list[int], np.ndarray]]:
        """Per module, in the order RLlib's ``AgentToModuleMapping`` makes its batch (first appearance over envs,
        then agents in ``step_order``): the module id, its agents (indices, in step order) and which of the live
        envs' (env, agent) pairs are its rows (``(live envs, len(agents))``, row-major: the batch order)."""
        mods = self.modules[live][:, self.step_order]
        flat = mods.ravel()
        uniq, first = np.unique(flat, return_index=True)
        out = []
        for m in uniq[np.argsort(first)].tolist():
            hit = mods == m
            cols = np.flatnonzero(hit.any(axis=0))
            out.append((self.module_ids[m], [self.step_order[c] for c in cols.tolist()], hit[:, cols]))
        return out

    def add(self, act, extra, obs, rew, term, trunc, infos, now: float) -> int:
        """Appends one step's per-agent arrays; returns its timesteps (envs that stepped, not reset)."""
        reset = self.ended
        active = np.stack([infos["active"][a] for a in self.agents], axis=1)
        te = np.stack([term[a] for a in self.agents], axis=1)
        tr = np.stack([trunc[a] for a in self.agents], axis=1)
        done = te | tr
        over = done.all(axis=1)
        if not active.all() or (done.any(axis=1) != over)[~reset].any():
            raise RuntimeError(
                "FastvecMultiAgentEnvRunner: an agent of the pool left or ended before the others; this sampling "
                "path is only for pools whose agents never come and go (please report it)"
            )
        self.rows_act.append(act)
        self.rows_extra.append(extra)
        self.rows_obs.append(obs)
        self.rows_rew.append(rew)
        self.rows_trunc.append(tr)
        self.rows_all_trunc.append(np.asarray(tr.all(axis=1)))
        self.rows_reset.append(reset)
        self.rows_end.append(np.asarray(over & ~reset))
        self.rows_info.append(infos)
        self.rows_time.append(now)
        # Envs reset in this row start new episodes, their agents mapped in env order (as RLlib's add_env_reset).
        for i in np.flatnonzero(reset).tolist():
            shell = self._new_episode()
            self._map(i, shell)
            self.new_shells[i].append(shell)
        self.ended = over & ~reset
        self.obs = obs
        return self.num_envs - int(np.count_nonzero(reset))

    # -- the chunks ----------------------------------------------------------------------------

    def episodes(self, seq_no: int) -> tuple[list[MultiAgentEpisode], list[MultiAgentEpisode]]:
        """The chunks of this call: finished episodes in the order they finished, then the ongoing ones in env
        order (those with steps); carries each ongoing episode's lookback into the next call."""
        n, rows = self.num_envs, len(self.rows_act)
        cols = self._columns(rows, seq_no)
        infos = _LazyInfos([{}, *self.rows_info], self.agents, n)
        if rows:
            reset = np.stack(self.rows_reset)
            ends = np.stack(self.rows_end)
            trunc, all_trunc = np.stack(self.rows_trunc), np.stack(self.rows_all_trunc)
        times = self.rows_time
        finished: list[tuple[int, int, MultiAgentEpisode]] = []
        ongoing: list[MultiAgentEpisode] = []
        resets_of = rows_by_env(reset if rows else None, n)
        ends_of = rows_by_env(ends if rows else None, n)
        for i in range(n):
            shells = list(self.new_shells[i])
            for a, e, ended in episode_spans(bool(self.pending[i]), resets_of[i], ends_of[i], rows):
                shell = self.shells[i] if a == 0 and not self.pending[i] else shells.pop(0)
                assert shell is not None
                flags = None
                if ended:  # RLlib's: every agent done, so terminated; truncated where "__all__" was
                    flags = (trunc[e - 1, i], bool(all_trunc[e - 1, i]))
                eps = self._chunk(i, shell, a, e, cols, infos, flags)
                set_clock(eps, self.start_time[i], times, a, e)
                if ended:
                    finished.append((e, i, eps))
                else:
                    if eps.env_t > 0:
                        ongoing.append(eps)
                    self._carry(i, eps)
            if rows:
                self.pending[i] = bool(ends_of[i]) and ends_of[i][-1] == rows
                if self.pending[i]:
                    self.shells[i] = None
        finished.sort(key=lambda x: (x[0], x[1]))
        return [f[2] for f in finished], ongoing

    def _columns(self, rows: int, seq_no: int) -> dict[str, Any]:
        """Per agent, the call's observations ``(rows + 1, num_envs, ...)``, actions, rewards and model outputs
        ``(rows, num_envs, ...)``; steps without an output (random actions) get zeros."""
        out: dict[str, Any] = {}
        for a in self.agents:
            col: dict[str, Any] = {"obs": np.stack([r[a] for r in self.rows_obs])}
            if rows:
                col["act"] = np.stack([r[a] for r in self.rows_act])
                col["rew"] = np.stack([r[a] for r in self.rows_rew])
                rows_extra = [r.get(a, {}) for r in self.rows_extra]
                extra = output_columns(rows_extra, [lb[a]["extra"] for lb in self.lookback], self.num_envs)
                if extra:  # (RLlib's runner adds it with the model's outputs)
                    extra[WEIGHTS_SEQ_NO] = np.full((rows, self.num_envs), seq_no, np.int64)
                col["extra"] = extra
            out[a] = col
        return out

    def _chunk(self, i, shell, a, e, cols, infos, flags) -> MultiAgentEpisode:
        """Env ``i``'s episode from row ``a`` (its first observations) to row ``e`` in ``shell``; an episode going
        on from the last call (``a == 0``) starts with the lookback it carried."""
        carried = a == 0 and not self.pending[i]
        t0 = int(self.t[i]) if carried else 0
        k = 0
        agent_eps = {}
        for idx, agent in enumerate(self.agents):
            col = cols[agent]
            lb: Any = self.lookback[i][agent] if carried else None
            k = 0 if lb is None or lb["rew"] is None else len(lb["rew"])
            if lb is not None:
                o = np.concatenate([lb["obs"], col["obs"][1 : e + 1, i]])
                inf = lb["infos"] + infos.rows(agent, i, 1, e + 1)
            else:
                o = col["obs"][a : e + 1, i]
                inf = infos.rows(agent, i, a, e + 1)
            if "act" in col:
                ac, rw = col["act"][a:e, i], col["rew"][a:e, i]
                ex = {key: v[a:e, i] for key, v in col["extra"].items()}
            else:  # no steps this call (num_timesteps=0): the lookback only
                ac, rw, ex = no_steps(lb if k else None, self.act_spaces[agent], np.float64)
            if k:
                ac, rw, ex = after_lookback(lb, k, ac, rw, ex)
            sa_flags = (True, bool(flags[0][idx]) or flags[1]) if flags is not None else (False, False)
            ident = self.sa_ids[i].get(agent) if carried else None
            sa = self.build[agent](ident or uuid.uuid4().hex, o, inf, ac, rw, sa_flags, ex, t0, k)
            sa.agent_id, sa.module_id, sa.multi_agent_episode_id = agent, shell.module_for(agent), shell.id_
            sa._last_added_observation, sa._last_added_infos = o[-1], inf[-1]
            agent_eps[agent] = sa
        steps = len(next(iter(agent_eps.values())).rewards.data) - k
        # RLlib's cut asks for `horizon` steps back and pads with skips what the episode does not have: the chunk's
        # lookback is `horizon` env steps, its agents' `k`.
        lookback = int(self.ma_lookback[i]) if carried else 0
        shell.env_t_started, shell.env_t, shell._len_lookback_buffers = t0, t0 + steps, lookback
        shell.agent_t_started = defaultdict(int, dict.fromkeys(self.agents, t0))
        shell.env_t_to_agent_t = defaultdict(InfiniteLookbackBuffer)
        skips = [MultiAgentEpisode.SKIP_ENV_TS_TAG] * (lookback - k)
        for agent in self.agents:
            shell.env_t_to_agent_t[agent] = InfiniteLookbackBuffer([*skips, *range(t0 - k, t0 + steps + 1)], lookback)
        shell.is_terminated, shell.is_truncated = (True, flags[1]) if flags is not None else (False, False)
        shell.agent_episodes = agent_eps
        return shell

    def _carry(self, i: int, eps: MultiAgentEpisode) -> None:
        """What ``eps.cut(len_lookback_buffer=horizon)`` keeps for the next chunk (the last ``horizon`` steps,
        lookback included, and the latest observations), in the successor RLlib's ``cut`` makes: same id and
        modules, the mapping function called once per agent as ``cut`` calls it."""
        carry: dict[Any, Any] = {agent: carried_lookback(sa, self.horizon) for agent, sa in eps.agent_episodes.items()}
        successor = MultiAgentEpisode(
            id_=eps.id_,
            observation_space=cast(Any, eps.observation_space),
            action_space=cast(Any, eps.action_space),
            agent_module_ids={a: cast(Any, sa.module_id) for a, sa in eps.agent_episodes.items()},
            agent_to_module_mapping_fn=eps.agent_to_module_mapping_fn,
        )
        successor.env_t_started = successor.env_t = eps.env_t
        for agent in eps.agent_episodes:
            successor.agent_to_module_mapping_fn(agent, successor)
        self.shells[i] = successor
        self.lookback[i] = carry
        self.sa_ids[i] = {str(a): sa.id_ for a, sa in eps.agent_episodes.items()}  # each agent's keeps its id
        self.t[i] = eps.env_t
        self.ma_lookback[i] = self.horizon
        self.start_time[i] = None


class _LazyInfos:
    """Per agent and env, info dicts: the pool's per-agent info arrays unbatched only for rows that have any."""

    def __init__(self, rows: list[dict], agents: list[str], n: int) -> None:
        self._rows, self._n = rows, n
        self._any = {a: any(a in r and r[a] for r in rows) for a in agents}
        self._cache: dict[tuple[str, int], list[dict]] = {}

    def rows(self, agent: str, i: int, start: int, stop: int) -> list[dict]:
        if not self._any[agent]:
            return [{} for _ in range(start, stop)]
        out: list[dict] = []
        for r in range(start, stop):
            info = self._rows[r].get(agent)
            if not info:
                out.append({})
                continue
            if (agent, r) not in self._cache:
                self._cache[agent, r] = info_rows(info, self._n)
            out.append(self._cache[agent, r][i])
        return out
