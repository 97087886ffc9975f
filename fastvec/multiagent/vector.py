"""fastvec.MultiAgentVectorEnv: many multi-agent envs stepped by one pool, batched per agent.

The façade runs over a plain :class:`fastvec.VectorEnv` (the backend: it resets, seeds, steps, autoresets, keeps
episode statistics and runs env calls as for any env) and a rows translator
(:class:`fastvec.multiagent.rows.RowsTranslator`) that knows how that backend's single env carries the agents. It
adds what is multi-agent: per-agent dicts of batched arrays (agent-major, as AgileRL's ``AsyncPettingZooVecEnv``
returns them: heterogeneous spaces need no padding), the agents alive in each env (which the actions are checked
against before anything is sent), ``same_step``'s final observations per agent, time-limit truncations per agent
and per-agent episode returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from fastvec._args import check_env_ids
from fastvec.multiagent.as_one_env import ACTING
from fastvec.multiagent.native_rows import NativeRows
from fastvec.multiagent.rows import AgentRows, RowsTranslator
from fastvec.vector import Seed, VectorEnv

_STEP_KEYS_REPLACED = ("final_obs", "_final_obs")  # the backend's, replaced by per-agent ones (same_step)


class MultiAgentVectorEnv:
    """``num_envs`` multi-agent envs stepped by a fastvec pool; made by :func:`fastvec.make` from a callable
    returning a PettingZoo ParallelEnv or AEC env or an RLlib MultiAgentEnv (or an MPE id).

    >>> env = fastvec.make(lambda: mpe2.simple_spread_v3.parallel_env(), 4, seed=0)
    >>> obs, infos = env.reset()
    >>> actions = {a: np.zeros(4, np.int64) for a in env.possible_agents}
    >>> obs, rewards, terminations, truncations, infos = env.step(actions)
    >>> obs["agent_0"].shape, rewards["agent_0"].shape, infos["active"]["agent_0"].shape
    ((4, 18), (4,), (4,))

    Every per-agent value is a dict agent -> array with a first axis of B rows (``num_envs`` in sync mode, a batch
    of ``batch_size`` envs in async mode, ``infos["env_id"]`` saying which): observations in the agent's space's
    shape and dtype (zeros where it has none), float64 rewards, bool terminations and truncations, and
    ``infos["active"]`` (the agent has an observation in this row). An agent needs an action where it is active
    and neither terminated nor truncated, or, in ``same_step`` mode, where it is active in a row whose episode
    ended (``infos["_final_obs"]``: the returned observation is the new episode's); rows of other agents are
    ignored, and an agent alive in no row may be left out of ``actions``.
    """

    def __init__(self, backend: VectorEnv, rows: RowsTranslator, *, episode_stats: bool = False) -> None:
        """Over ``backend`` (made with ``episode_stats=True`` when ``episode_stats``: its episode ends, returns and
        lengths are the ones reported) and its translator ``rows``; what :func:`fastvec.make` does for you."""
        self.backend = backend  #: the fastvec.VectorEnv whose single env is one multi-agent env
        self._rows = rows
        self.num_envs = backend.num_envs
        self.batch_size = backend.batch_size
        self.sync = backend.sync
        self.num_threads = backend.num_threads
        self.max_episode_steps = backend.max_episode_steps
        self.possible_agents: list[str] = list(rows.possible_agents)
        self.single_observation_spaces: dict[str, gym.Space] = dict(rows.observation_spaces)
        self.single_action_spaces: dict[str, gym.Space] = dict(rows.action_spaces)
        self.metadata = {k: v for k, v in backend.metadata.items() if not k.startswith("fastvec.")}
        self.render_mode = backend.render_mode
        self.autoreset_mode: AutoresetMode = backend.autoreset_mode
        self._episode_stats = episode_stats
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self._hidden = (*_STEP_KEYS_REPLACED, *rows.consumed_info_keys)  # backend info keys not passed on
        for a, space in self.single_action_spaces.items():
            if not isinstance(
                space, (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
            ):
                backend.close()
                raise TypeError(
                    f"agent {a!r} has action space {space}: fastvec's multi-agent envs take Box, Discrete, "
                    "MultiDiscrete and MultiBinary action spaces"
                )
        self._filler = {a: _filler(s) for a, s in self.single_action_spaces.items()}
        # Per env and agent: due to act in the env's next step (the caller owns it; updated by every batch).
        self._alive = np.zeros((self.num_envs, len(self.possible_agents)), dtype=bool)
        self._all_ids = np.arange(self.num_envs, dtype=np.int32)
        # Per env and agent: the return so far, for a backend that keeps none (AgentRows.returns None).
        self._sums = np.zeros(self._alive.shape)
        # Per env: sent (or reset) and not received. A sync pool's receiving call returns the rows of every env in
        # flight, in env order and without env_id (EnvPool's step of some envs): these say which envs they are.
        self._sent = np.zeros(self.num_envs, dtype=bool)
        # Per env, as the pool counts them for its time limit: steps in the episode, a reset on its way, and whether
        # the last row ended the episode (next_step: the next step is its autoreset; not in same_step mode, whose
        # ended rows hold the new episode). What _resync needs when a dropped batch's rows are lost.
        self._elapsed = np.zeros(self.num_envs, dtype=np.int64)
        self._resetting = np.zeros(self.num_envs, dtype=bool)
        self._over = np.zeros(self.num_envs, dtype=bool)

    # -- PettingZoo-style spaces ----------------------------------------------

    def observation_space(self, agent: str) -> gym.Space:
        """The single-env observation space of ``agent``."""
        return self.single_observation_spaces[self._agent(agent)]

    def action_space(self, agent: str) -> gym.Space:
        """The single-env action space of ``agent``."""
        return self.single_action_spaces[self._agent(agent)]

    def _agent(self, agent: Any) -> str:
        if agent not in self._index:
            raise KeyError(f"agent {agent!r} is not one of possible_agents {self.possible_agents}")
        return cast(str, agent)

    # -- sync --------------------------------------------------------------

    def reset(
        self, *, seed: Seed = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Resets every env (or, with ``options={"reset_mask": mask}`` / ``{"env_id": ids}``, some) as
        :meth:`fastvec.VectorEnv.reset` does: ``seed=s`` seeds env ``i`` with ``s + i``, a list one seed per env."""
        obs, info = self.backend.reset(seed=seed, options=options)
        if not options or (options.get("reset_mask") is None and options.get("env_id") is None):
            self._sent[:] = False  # (a reset of every env drops what was in flight)
        return self._reset_result(obs, info, options or {})

    def step(self, actions: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
        """Steps every env (sync mode); ``actions``: agent -> array of ``num_envs`` rows."""
        if not self.sync:
            self.backend.check_open()
            raise ValueError(
                "step(actions) steps every env and needs batch_size == num_envs; in async mode use "
                "send(actions, env_id) and recv()"
            )
        joined = self._actions(actions, self._all_ids)
        try:
            result = self.backend.step(joined)
        except Exception:
            self._resync(self._all_ids)
            raise
        return self._result(*result)

    # -- async -------------------------------------------------------------

    def async_reset(self, seed: Seed = None, env_id: Any = None, options: dict[str, Any] | None = None) -> None:
        """Starts a reset of every env (or of the envs ``env_id``); :meth:`recv` returns the rows."""
        self.backend.async_reset(seed=seed, env_id=env_id, options=options)
        ids = self._all_ids if env_id is None else env_id
        if env_id is None:
            self._sent[:] = False
        self._sent[ids] = True
        self._resetting[ids] = True
        self._sums[ids] = 0.0

    def send(self, actions: Mapping[str, Any], env_id: Any = None) -> None:
        """Queues a step of each env in ``env_id`` (every env if None); ``actions``: agent -> one row per env."""
        self.backend.check_open()
        ids = self._all_ids if env_id is None else check_env_ids(env_id, self.num_envs)
        self.backend.send(self._actions(actions, ids), env_id)
        self._sent[ids] = True

    def recv(self, timeout: float | None = None) -> tuple[dict[str, Any], ...]:
        """The first ``batch_size`` envs to finish (``infos["env_id"]`` says which)."""
        try:
            result = self.backend.recv(timeout)
        except Exception as exc:
            self._env_raised(exc)
            raise
        return self._result(*result)

    def recv_rest(self, timeout: float | None = None) -> tuple[dict[str, Any], ...]:
        """The envs still in flight when they are fewer than ``batch_size``."""
        try:
            result = self.backend.recv_rest(timeout)
        except Exception as exc:
            self._env_raised(exc)
            raise
        return self._result(*result)

    # -- env calls, close ------------------------------------------------------

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Calls ``name`` on every multi-agent env (an attribute is returned as it is), in env order."""
        return self.backend.call(name, *args, **kwargs)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every multi-agent env, in env order."""
        return self.backend.get_attr(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Sets attribute ``name`` of every multi-agent env (a list: one value per env)."""
        self.backend.set_attr(name, values)

    def env_call(
        self,
        kind: str,
        name: str,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        env_ids: Any = None,
    ) -> list[Any]:
        """:meth:`fastvec.VectorEnv.env_call` on the multi-agent envs (``set_outer`` sets the multi-agent env's
        attribute too: the pool's wrapper around it is not the user's)."""
        return self.backend.env_call("set" if kind == "set_outer" else kind, name, args, kwargs, env_ids)

    def render(self) -> tuple[Any, ...] | None:
        """Each multi-agent env's ``render()``, in env order (None when the envs have no render mode)."""
        return self.backend.render()

    def close(self) -> None:
        """Closes the pool (idempotent)."""
        self.backend.close()

    @property
    def closed(self) -> bool:
        return self.backend.closed

    @property
    def fixed_agents(self) -> bool:
        """Whether every agent has an observation in every row and all end their episodes together, always: a
        native family's pool (MPE), whose agents never come and go (what RLlib's batched runner relies on)."""
        return isinstance(self._rows, NativeRows)

    def __enter__(self) -> MultiAgentVectorEnv:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- helpers ----------------------------------------------------------

    def _actions(self, actions: Mapping[str, Any], ids: np.ndarray) -> Any:
        """``actions`` checked against the agents alive in envs ``ids`` and filled; the backend's batch."""
        self.backend.check_open()
        if not isinstance(actions, Mapping):
            raise TypeError(f"actions must be a dict agent -> array, got {type(actions).__name__}")
        for key in actions:
            if key not in self._index:
                raise KeyError(f"actions: agent {key!r} is not one of possible_agents {self.possible_agents}")
        alive = self._alive[ids]
        rows = len(ids)
        full = {}
        for i, a in enumerate(self.possible_agents):
            need = alive[:, i]
            if a not in actions:
                if need.any():
                    envs = ids[need].tolist()
                    raise KeyError(
                        f"actions: agent {a!r} is alive in env(s) {envs[:8]}{' ...' if len(envs) > 8 else ''} "
                        "and has no action"
                    )
                full[a] = np.broadcast_to(self._filler[a], (rows, *self._filler[a].shape))
                continue
            full[a] = _check(a, self.single_action_spaces[a], actions[a], need, self._filler[a], ids)
        return self._rows.join(full)

    def _env_raised(self, exc: Exception) -> None:
        """After a receiving call raised: if it was an env's exception (it names the env) in sync mode, every env in
        flight has left it (the batch's rows dropped), and the agents each env will act with next must be asked."""
        if self.sync and getattr(exc, "env_id", None) is not None:
            stepped = np.flatnonzero(self._sent)
            self._sent[:] = False
            self._resync(stepped)

    def _resync(self, stepped: np.ndarray) -> None:
        """After a sync batch raised (an env's exception: its rows are dropped, the other envs of ``stepped`` have
        stepped or reset), asks each env which agents it will give actions to next: the rows that told the façade
        are lost. An env the pool's time limit truncated in that step has none (next_step: its next step is the
        autoreset; disabled: it must be reset); in same_step mode the pool has reset it, and it says. A backend whose
        envs cannot say (a native one, whose agents do not come and go) keeps what it had."""
        if self.backend.closed:
            return
        try:
            acting = self.backend.env_call("get", ACTING)
        except Exception:
            return
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        limit = self.max_episode_steps or 0
        for e in np.asarray(stepped).tolist():
            agents = acting[e] or ()
            if self._resetting[e] or (self._over[e] and self.autoreset_mode == AutoresetMode.NEXT_STEP):
                self._elapsed[e], self._over[e] = 0, False
            else:
                self._elapsed[e] += 1
                if limit and self._elapsed[e] >= limit:
                    if same_step:
                        self._elapsed[e] = 0
                    else:
                        agents, self._over[e] = (), True
                elif not agents and not same_step:  # the env's own end
                    self._over[e] = True
            self._resetting[e] = False
            self._alive[e] = [a in agents for a in self.possible_agents]

    def _reset_result(
        self, obs: Any, info: dict[str, Any], options: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A reset's result (the backend checked ``options``): every env's rows, in env order, unless
        ``options["env_id"]`` listed some (their rows, in that order); with a ``reset_mask``, the others' rows
        report their current observation, and their agents stay as they were."""
        agents = self._rows.split(obs, info)
        infos = self._infos(info, agents)
        active = self._stack(agents.active)
        ids: np.ndarray
        if options.get("reset_mask") is not None:
            ids = np.flatnonzero(np.asarray(options["reset_mask"]))
            active = active[ids]
        elif options.get("env_id") is not None:
            ids = np.asarray(options["env_id"], dtype=np.int64).reshape(-1)
        else:
            ids = self._all_ids
        self._alive[ids] = active
        self._sums[ids] = 0.0
        self._elapsed[ids], self._resetting[ids], self._over[ids] = 0, False, False
        return agents.obs, infos

    def _result(
        self, obs: Any, reward: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, info: dict[str, Any]
    ) -> tuple[dict[str, Any], ...]:
        rows = self._rows
        cur = rows.split(obs, info)
        rewards, terms, truncs = cur.rewards, cur.terminations, cur.truncations
        env_rows = info.get("env_id")
        if env_rows is None:  # sync: every env in flight, in env order (all, after step or a send of all)
            env_rows = np.flatnonzero(self._sent) if self._sent.any() else self._all_ids
            self._sent[:] = False
        else:
            self._sent[env_rows] = False
        infos = self._infos(info, cur)
        ended = terminated | truncated
        final_active = cur.active  # who had a final observation where an episode ended
        returns = cur.returns
        final = None
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        if same_step and "_final_obs" in info:
            done = info["_final_obs"]
            final = rows.split_final(info["final_obs"], info.get("final_info"), done)
            rewards = {a: np.where(done, final.rewards[a], rewards[a]) for a in rewards}
            terms = {a: np.where(done, final.terminations[a], terms[a]) for a in terms}
            truncs = {a: np.where(done, final.truncations[a], truncs[a]) for a in truncs}
            final_active = {a: np.where(done, final.active[a], cur.active[a]) for a in cur.active}
            if final.returns is not None and returns is not None:
                returns = {a: np.where(done, final.returns[a], returns[a]) for a in returns}
            infos["final_obs"] = final.obs
            infos["_final_obs"] = done.copy()
            infos["final_active"] = final.active
        if truncated.any():  # the pool's time limit (or the env's end) truncates every agent still there
            truncs = {a: truncs[a] | (truncated & final_active[a] & ~terms[a]) for a in truncs}
        alive = self._stack(cur.active)
        if not same_step or final is None:
            alive &= ~(self._stack(terms) | self._stack(truncs))
        else:  # rows whose episode ended hold the new episode: its agents are due to act
            done_step = ~infos["_final_obs"][:, None]
            alive &= ~((self._stack(terms) | self._stack(truncs)) & done_step)
        self._alive[env_rows] = alive
        self._count(env_rows, ended)
        if returns is None:  # kept here: the rewards received (the final step's where an episode ended)
            sums = self._sums
            sums[env_rows] += self._stack(rewards)
            returns = {a: sums[env_rows, i] for i, a in enumerate(self.possible_agents)}
            sums[env_rows[ended]] = 0.0
        if self._episode_stats and "_episode_return" in info and returns is not None:
            mask = info["_episode_return"]
            infos["episode_agent_returns"] = {a: np.where(mask, returns[a], 0.0) for a in returns}
            infos["_episode_agent_returns"] = mask.copy()
        return cur.obs, rewards, terms, truncs, infos

    def _count(self, env_rows: np.ndarray, ended: np.ndarray) -> None:
        """The episode steps of the envs of a batch's rows (``ended``: the row ended an episode), as the pool counts
        them: a reset's row (asked for, or next_step's autoreset) starts again from 0."""
        reset = self._resetting[env_rows]
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            reset |= self._over[env_rows]
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            reset |= ended  # (the row holds the new episode)
            self._over[env_rows] = False
        else:
            self._over[env_rows] = ended & ~reset
        self._elapsed[env_rows] = np.where(reset, 0, self._elapsed[env_rows] + 1)
        self._resetting[env_rows] = False

    def _infos(self, info: dict[str, Any], agents: AgentRows) -> dict[str, Any]:
        infos = {k: v for k, v in info.items() if k not in self._hidden}
        if self._rows.consumed_info_keys and isinstance(infos.get("final_info"), dict):
            hidden = self._rows.consumed_info_keys
            infos["final_info"] = {k: v for k, v in infos["final_info"].items() if k not in hidden}
        infos["active"] = agents.active
        return infos

    def _stack(self, per_agent: dict[str, np.ndarray]) -> np.ndarray:
        """``(B, A)`` from per-agent ``(B,)`` arrays (a transposed view: np.stack costs more than what it stacks)."""
        return np.array([per_agent[a] for a in self.possible_agents]).T


def _filler(space: gym.Space) -> np.ndarray:
    """A valid action of ``space``, the row of an agent that is not alive (the env never sees it)."""
    if isinstance(space, gym.spaces.Discrete):
        return np.asarray(space.start, dtype=space.dtype)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return np.asarray(space.start, dtype=space.dtype).copy()
    if isinstance(space, gym.spaces.Box):
        return np.clip(np.zeros(space.shape, space.dtype), space.low, space.high).astype(space.dtype)
    return np.zeros(space.shape or (), dtype=space.dtype)


def _check(
    agent: str, space: gym.Space, value: Any, need: np.ndarray, filler: np.ndarray, ids: np.ndarray
) -> np.ndarray:
    """Agent ``agent``'s actions for rows whose envs are ``ids``, checked where ``need`` (alive), others filled."""
    arr = np.asarray(value)
    rows = len(need)
    shape = (rows, *(space.shape or ()))
    if arr.shape != shape:
        raise ValueError(f"actions[{agent!r}] must have shape {shape} for {space}, got {arr.shape}")
    if isinstance(space, gym.spaces.Box):
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"actions[{agent!r}] for {space} must be real numbers, got dtype {arr.dtype}")
        live = arr[need]
        if arr.dtype.kind == "f" and not np.isfinite(live).all():
            bad = int(ids[need][np.flatnonzero(~np.isfinite(live.reshape(len(live), -1)).all(axis=1))[0]])
            raise ValueError(f"actions[{agent!r}] must be finite, got a non-finite value for env {bad}")
    else:
        if arr.dtype.kind not in "iub":
            raise TypeError(f"actions[{agent!r}] for {space} must be integers, got dtype {arr.dtype}")
        if isinstance(space, gym.spaces.Discrete):
            low: Any = int(space.start)
            high: Any = low + int(space.n)
        elif isinstance(space, gym.spaces.MultiDiscrete):
            low, high = space.start, space.start + space.nvec
        else:
            low, high = 0, 2
        bad_rows = (arr < low) | (arr >= high)
        if arr.ndim > 1:
            bad_rows = np.any(bad_rows, axis=tuple(range(1, arr.ndim)))
        bad_rows &= need
        if bad_rows.any():
            r = int(np.flatnonzero(bad_rows)[0])
            raise ValueError(f"actions[{agent!r}] = {arr[r]} for env {int(ids[r])} is out of range for {space}")
    if need.all():
        return arr
    mask = need.reshape((rows,) + (1,) * (arr.ndim - 1))
    return np.where(mask, arr, filler).astype(space.dtype if arr.dtype.kind in "iub" else arr.dtype, copy=False)
