"""Stateful fuzzing of fastvec.MultiAgentVectorEnv: random sequences of reset / step / async_reset / send / recv /
recv_rest / env calls / close with valid and invalid arguments, each result checked against a twin of every env.

Two machines: native MPE pools (several ids, discrete and continuous actions, options) and Python-env pools of
``Raising`` (tests/multiagent/ma_envs.py: agents of different spaces, ``b`` dying at step 3, ``c`` born at step 2,
and a step that raises, naming agent ``c``, when c's action is ``Raising.THROW``); sync and async, the three
autoreset modes, seeds, partial resets. Each env of the pool has a twin stepped with the same actions: for a native
pool a one-env native pool of the same options (so the check does not depend on numpy's arithmetic), for a Python
pool the env itself stepped in this process by ``ma_envs.Reference``. Every returned row must equal its twin's
(every agent's observation, reward, flags and ``infos["active"]``; same_step's final rows), every per-agent array
have its space's shape and dtype, and episode statistics match the rewards received.

From the twins the model knows which agents are alive in each env, so every action dict is known in advance to be
valid or not: an agent outside possible_agents, a live agent without an action, the wrong shape or dtype, NaN or an
out-of-range action for a live agent must be refused (KeyError, ValueError, TypeError) naming the agent (and the
env where one row is wrong), with nothing sent: the twins are not stepped, and the next valid call must match them.
Garbage in the rows of agents that are not alive is ignored (the contract), and must not change any result. An env
whose step raises: the receiving call raises its exception (the env's own type, naming agent ``c`` and, in a note,
the env id); then the README's recipe (reset the env) and on. After close every call raises ClosedError.

``FASTVEC_FUZZ_EXAMPLES=N`` runs N sequences of the native machine and N // 4 of the Python one (test_fuzz.py's
long-run notes apply).
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test
from test_fuzz import _EXAMPLES, _TIMEOUT, MODES, WATCHDOG, _settings, _short, bits_mask, draw_batch_size, env_bits

import fastvec
from fastvec.vector import ClosedError

# tests/multiagent's envs, by the module name the pool's forked workers find them under.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "multiagent"))
from ma_envs import AgentStepError, Raising, Reference

pytestmark = pytest.mark.versions  # gymnasium's spaces and numpy's casts (CI's variant passes run it)

IDLE, IN_FLIGHT = 1, 3
NATIVE_IDS = (
    "simple_v3",
    "simple_spread_v3",
    "simple_adversary_v3",
    "simple_speaker_listener_v4",
    "simple_tag_v3",
    "simple_world_comm_v3",
)


# -- rows: what one env returns, per agent ---------------------------------------------------------------------


class Row:
    """One env's row: ``obs`` (agent -> observation, for the agents that have one), ``rewards``, ``terminations``,
    ``truncations`` (agent -> value, absent: 0 / False), ``active`` (the agents with an observation); ``reset``: the
    row is a reset's; ``done``: the step ended the episode; ``final``: same_step's final step's row."""

    def __init__(self, obs, rewards=None, terms=None, truncs=None, *, reset=False, done=False, final=None):
        self.obs = dict(obs)
        self.active = set(self.obs)
        self.rewards = dict(rewards or {})
        self.terms = {a: bool(v) for a, v in (terms or {}).items()}
        self.truncs = {a: bool(v) for a, v in (truncs or {}).items()}
        self.reset, self.done, self.final = reset, done, final

    def alive(self) -> set[str]:
        """The agents due to act in the env's next step."""
        if self.final is not None:  # same_step: the row holds the new episode
            return set(self.active)
        return {a for a in self.active if not (self.terms.get(a) or self.truncs.get(a))}


def _from_reference(raw: dict, reset: bool = False) -> Row:
    final = raw.get("final")
    return Row(
        raw["obs"],
        raw["rewards"],
        raw["terminations"],
        raw["truncations"],
        reset=reset,
        final=None if final is None else _from_reference(final),
    )


class PythonTwin:
    """The env itself, stepped in this process as the pool must step it (``ma_envs.Reference``)."""

    def __init__(self, length: int, mode: str, max_steps: int | None) -> None:
        self.ref = Reference(Raising(length), mode, max_steps)
        self.spaces = {a: self.ref.env.action_space(a) for a in self.ref.env.possible_agents}

    def reset(self, seed: int | None) -> Row:
        return _from_reference(self.ref.reset(seed), reset=True)

    def step(self, actions: dict[str, Any]) -> Row:
        """Raises AgentStepError as the env does (before changing anything)."""
        one = {}
        for a, v in actions.items():  # as the pool hands them to the env: in the space's dtype
            space = self.spaces[a]
            one[a] = int(v) if isinstance(space, gym.spaces.Discrete) else np.asarray(v, dtype=space.dtype)
        autoreset = self.ref.needs_reset
        row = _from_reference(self.ref.step(one), reset=autoreset)
        row.done = not autoreset and (self.ref.needs_reset or row.final is not None)
        return row

    def close(self) -> None:
        pass


class NativeTwin:
    """A one-env native pool of the same env and options, in the same autoreset mode."""

    def __init__(self, env_id: str, kwargs: dict[str, Any], mode: str) -> None:
        self.env = fastvec.make(env_id, 1, num_threads=1, autoreset_mode=mode, **kwargs)
        self.mode = mode
        self.ended = False  # its last row ended an episode (next_step: its next step is the autoreset)

    def _obs(self, obs: dict, active: dict) -> dict:
        return {a: obs[a][0].copy() for a in self.env.possible_agents if active[a][0]}

    def reset(self, seed: int | None) -> Row:
        obs, infos = self.env.reset(seed=seed)
        self.ended = False
        return Row(self._obs(obs, infos["active"]), reset=True)

    def step(self, actions: dict[str, Any]) -> Row:
        obs, rewards, terms, truncs, infos = self.env.step({a: np.asarray(v)[None] for a, v in actions.items()})
        current = self._obs(obs, infos["active"])
        if self.ended and self.mode == "next_step":
            self.ended = False
            return Row(current, reset=True)
        agents = self.env.possible_agents
        row = Row(
            current,
            {a: float(rewards[a][0]) for a in agents},
            {a: terms[a][0] for a in agents},
            {a: truncs[a][0] for a in agents},
        )
        if "_final_obs" in infos and infos["_final_obs"][0]:
            row.final = Row(self._obs(infos["final_obs"], infos["final_active"]), row.rewards, row.terms, row.truncs)
            row.done = True
        else:
            row.done = self.ended = any(row.terms.values()) or any(row.truncs.values())
        return row

    def close(self) -> None:
        self.env.close()


# -- actions ---------------------------------------------------------------------------------------------------

# Hypothesis replays a sequence by replaying its draws, so a draw may not depend on the pool's results (async rows
# come back in completion order): each call draws a few choices of fixed shape and a seed, and numpy makes the
# actions from them for the rows and agents the model says.
SEEDS = st.integers(0, 2**32 - 1)
BAD_ACTIONS = st.sampled_from(["stranger", "missing", "rows", "trailing", "dtype", "nan", "range", "not a dict"])


def _valid(space: gym.Space, rng: np.random.Generator, rows: int, throws: bool) -> np.ndarray:
    """``rows`` random valid actions of ``space`` (MultiDiscrete: never Raising.THROW unless ``throws`` puts it in a
    row or two, now and then)."""
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(space.start, space.start + space.n, rows)
    if isinstance(space, gym.spaces.MultiDiscrete):
        out = rng.integers(0, space.nvec, (rows, *space.shape))
        throw = np.all(out == Raising.THROW, axis=1)
        out[throw, 0] = 0
        how = rng.integers(16)
        if throws and how < 2 and rows:
            r = rng.integers(rows)
            out[[r, (r + 1) % rows][: how + 1]] = Raising.THROW
        return out
    assert isinstance(space, gym.spaces.Box)
    wide = rng.integers(4) == 0  # outside the box: clipped where the env clips (MPE), passed on (a Python env)
    low, high = (space.low - 0.5, space.high + 0.5) if wide else (space.low, space.high)
    return rng.uniform(low, high, (rows, *space.shape))


def _form(space: gym.Space, arr: np.ndarray, rng: np.random.Generator) -> Any:
    """``arr`` in one of the forms a caller may give: dtypes, or a list."""
    if isinstance(space, gym.spaces.Box):
        form = ("float32", "float64", "list")[rng.integers(3)]
    else:
        form = ("int64", "int32", "uint8", "list")[rng.integers(4)]
    return arr.tolist() if form == "list" else arr.astype(form)


def _garbage(space: gym.Space, arr: np.ndarray, dead: np.ndarray) -> np.ndarray:
    """``arr`` with refusable values in the rows ``dead`` (of agents that are not alive there: ignored)."""
    arr = np.array(arr, dtype=np.float64 if isinstance(space, gym.spaces.Box) else np.int64)
    arr[dead] = np.nan if isinstance(space, gym.spaces.Box) else 99
    return arr


# -- the machine -----------------------------------------------------------------------------------------------


class MultiAgentMachine(RuleBasedStateMachine):
    """Shared rules; subclasses say which pools to make (``_draw_config``) and their twins (``_twin``)."""

    native = True
    sequences = calls = env_errors = refusals = 0

    def __init__(self) -> None:
        super().__init__()
        type(self).sequences += 1
        self.env: Any = None
        self.twins: list[Any] = []
        self.closed = True

    # -- configuration ---------------------------------------------------------------------------------------

    def _draw_config(self, data: st.DataObject) -> tuple[Any, int, dict[str, Any], dict[str, Any]]:
        """(env_id, num_envs, pool keywords, env keywords)."""
        raise NotImplementedError

    def _twin(self) -> Any:
        raise NotImplementedError

    def _make(self, data: st.DataObject) -> None:
        env_id, n, pool, options = self._draw_config(data)
        self.config = (env_id, pool, options)
        what = f"fastvec.make({_short(env_id)}, {n}, **{_short({**pool, **options})})"
        _, env = self._call(what, lambda: fastvec.make(env_id, n, episode_stats=True, **pool, **options), set())
        assert isinstance(env, fastvec.MultiAgentVectorEnv), f"{what} made a {type(env).__name__}"
        self.env, self.closed = env, False
        self.n, self.batch, self.mode = n, env.batch_size, pool.get("autoreset_mode", "next_step")
        self.sync = self.batch == n
        self.agents = list(env.possible_agents)
        self.obs_spaces = {a: env.observation_space(a) for a in self.agents}
        self.act_spaces = {a: env.action_space(a) for a in self.agents}
        for twin in self.twins:
            twin.close()
        self.twins = [self._twin() for _ in range(n)]
        self.state = np.full(n, IDLE, np.uint8)
        self.expect: list[Row | None] = [None] * n  # the row a pending call returns for each env in flight
        self.raising = np.zeros(n, bool)  # in flight, and its step raises
        self.broken = np.zeros(n, bool)  # it raised: refused until reset
        self.kept: np.ndarray | None = None  # envs an async exception kept in flight: the next batch has them
        self.last: list[Row | None] = [None] * n
        self.alive: list[set[str]] = [set() for _ in range(n)]
        self.ended = np.zeros(n, bool)  # its episode ended and it was not reset (disabled: it must be)
        self.returns = [dict.fromkeys(self.agents, 0.0) for _ in range(n)]
        self.elapsed = np.zeros(n, np.int64)
        # The first reset: make's seed s seeds env i with s + i.
        seed = pool["seed"]
        self._full_reset(None, "reset() after make", [seed + e for e in range(n)])

    # -- calls -----------------------------------------------------------------------------------------------

    def _call(self, what: str, fn, errors: set, env_error: bool = False) -> tuple[bool, Any]:
        """Runs ``fn``: it must succeed when ``errors`` is empty, else raise one of ``errors``; or (``env_error``) raise
        an env's AgentStepError. Returns (True, result) or (False, exception)."""
        type(self).calls += 1
        with WATCHDOG.call(what):
            try:
                result = fn()
            except Exception as exc:
                if env_error and type(exc) is AgentStepError:
                    return False, exc
                if not errors:
                    raise AssertionError(f"{what} is valid but raised {type(exc).__name__}: {exc}") from exc
                if not any(isinstance(exc, e) for e in errors):
                    raise AssertionError(
                        f"{what} raised {type(exc).__name__} ({exc}); expected one of {[e.__name__ for e in errors]}"
                    ) from exc
                type(self).refusals += 1
                return False, exc
        assert not errors, f"{what} should have raised one of {[e.__name__ for e in errors]}"
        return True, result

    def sendable(self) -> np.ndarray:
        ok = (self.state == IDLE) & ~self.broken
        if self.mode == "disabled":
            ok &= ~self.ended
        return ok

    @property
    def in_flight(self) -> int:
        return int((self.state == IN_FLIGHT).sum())

    # -- the model follows a row -------------------------------------------------------------------------------

    def _apply(self, e: int, row: Row) -> None:
        """Env ``e`` produced ``row`` (returned, or lost to another env's exception): the model moves on."""
        if row.reset:
            self.returns[e] = dict.fromkeys(self.agents, 0.0)
            self.elapsed[e] = 0
            self.ended[e] = False
            self.broken[e] = False
        else:
            self.elapsed[e] += 1
            for a in self.agents:
                self.returns[e][a] += row.rewards.get(a, 0.0)
            self.ended[e] = row.done and row.final is None
            if row.final is not None:  # same_step: the row holds the new episode
                self.returns[e] = dict.fromkeys(self.agents, 0.0)
                self.elapsed[e] = 0
        self.alive[e] = row.alive()
        self.last[e] = row
        self.state[e] = IDLE
        self.expect[e] = None

    def _check_arrays(self, what: str, result: tuple, rows: int) -> None:
        """Every per-agent array has its space's shape and dtype; ``infos["active"]`` is a bool row per agent."""
        obs, infos = result[0], result[-1]
        for a in self.agents:
            space = self.obs_spaces[a]
            o = obs[a]
            assert isinstance(o, np.ndarray) and o.shape == (rows, *space.shape) and o.dtype == space.dtype, (
                f"{what}: obs[{a!r}] {getattr(o, 'dtype', None)} {getattr(o, 'shape', None)}, space {space}"
            )
            active = infos["active"][a]
            assert active.dtype == np.bool_ and active.shape == (rows,), f"{what}: active[{a!r}] {active!r}"
        if len(result) == 5:
            for name, values, dtype in (("rewards", result[1], np.float64), ("terminations", result[2], np.bool_)):
                for a in self.agents:
                    v = values[a]
                    assert v.dtype == dtype and v.shape == (rows,), f"{what}: {name}[{a!r}] {v.dtype} {v.shape}"
            for a in self.agents:
                v = result[3][a]
                assert v.dtype == np.bool_ and v.shape == (rows,), f"{what}: truncations[{a!r}] {v.dtype} {v.shape}"
            assert set(result[1]) == set(self.agents) and set(result[2]) == set(self.agents)

    def _check_row(self, what: str, e: int, r: int, result: tuple, want: Row) -> None:
        """Row ``r`` (env ``e``) of a batch equals the twin's row ``want``."""
        obs, infos = result[0], result[-1]
        where = f"{what}: env {e} (row {r})"
        for a in self.agents:
            got = obs[a][r]
            if a in want.active:
                assert np.array_equal(got, np.asarray(want.obs[a])), (
                    f"{where}: obs[{a!r}] {got} != twin's {want.obs[a]}"
                )
            else:
                assert not np.any(got), f"{where}: obs[{a!r}] of an agent without one is {got}"
            assert infos["active"][a][r] == (a in want.active), (
                f"{where}: active[{a!r}] is {infos['active'][a][r]}, twin's agents {sorted(want.active)}"
            )
        if len(result) == 2:
            return
        _, rewards, terms, truncs, infos = result
        for a in self.agents:
            assert rewards[a][r] == want.rewards.get(a, 0.0), (
                f"{where}: reward[{a!r}] {rewards[a][r]} != {want.rewards}"
            )
            assert terms[a][r] == want.terms.get(a, False), f"{where}: terminations[{a!r}] != twin's {want.terms}"
            assert truncs[a][r] == want.truncs.get(a, False), f"{where}: truncations[{a!r}] != twin's {want.truncs}"
        if self.mode == "same_step":
            has_final = bool(infos["_final_obs"][r]) if "_final_obs" in infos else False
            assert has_final == (want.final is not None), f"{where}: _final_obs is {has_final}"
            if want.final is not None:
                for a in self.agents:
                    got = infos["final_obs"][a][r]
                    present = a in want.final.active
                    assert infos["final_active"][a][r] == present, f"{where}: final_active[{a!r}]"
                    if present:
                        assert np.array_equal(got, np.asarray(want.final.obs[a])), f"{where}: final_obs[{a!r}]"
        # episode statistics, where (and only where) an episode ended
        ended = bool(infos["_episode_agent_returns"][r]) if "_episode_agent_returns" in infos else False
        assert ended == want.done, f"{where}: _episode_agent_returns is {ended}, the twin's episode ended: {want.done}"
        if ended:
            assert infos["episode_length"][r] == self.elapsed[e] + 1, (
                f"{where}: episode_length {infos['episode_length'][r]}, expected {self.elapsed[e] + 1}"
            )
            total = 0.0
            for a in self.agents:
                expected = self.returns[e][a] + want.rewards.get(a, 0.0)
                assert infos["episode_agent_returns"][a][r] == expected, (
                    f"{where}: episode_agent_returns[{a!r}] {infos['episode_agent_returns'][a][r]!r}, sum {expected!r}"
                )
                total += expected
            assert infos["episode_return"][r] == pytest.approx(total, rel=1e-12, abs=1e-12), f"{where}: episode_return"

    def _take(self, what: str, result: tuple, ids: np.ndarray) -> None:
        """A batch of rows of envs ``ids``, each in flight with an expected row: checked and applied."""
        for r, e in enumerate(ids.tolist()):
            assert self.state[e] == IN_FLIGHT, f"{what}: returned env {e}, which was not in flight"
            assert not self.raising[e], f"{what}: returned a row of env {e}, whose step raised"
            want = self.expect[e]
            assert want is not None
            self._check_row(what, e, r, result, want)
            self._apply(e, want)

    def _ids_of(self, what: str, infos: dict, rows: int) -> np.ndarray:
        if self.sync:  # every env in flight, in env order (EnvPool's step of some envs: a send of some)
            assert "env_id" not in infos, f"{what}: a sync pool's infos have env_id"
            ids = np.flatnonzero(self.state == IN_FLIGHT)
            assert len(ids) == rows, f"{what}: {rows} rows, {len(ids)} envs in flight"
            return ids
        ids = infos["env_id"]
        assert ids.dtype == np.int32 and ids.shape == (rows,) and len(set(ids.tolist())) == rows, f"{what}: {ids!r}"
        return ids

    # -- resets ----------------------------------------------------------------------------------------------

    def _reset_twins(self, ids: np.ndarray, seeds: list[int | None]) -> None:
        """The twins of ``ids`` reset with ``seeds`` (one each); those envs are in flight with their reset rows."""
        for e, s in zip(ids.tolist(), seeds, strict=True):
            self.state[e] = IN_FLIGHT
            self.raising[e] = self.broken[e] = False
            self.expect[e] = self.twins[e].reset(s)

    def _full_reset(self, seed: Any, what: str, per_env: list[int | None]) -> None:
        ok, result = self._call(what, lambda: self.env.reset(seed=seed), {ClosedError} if self.closed else set())
        if not ok:
            return
        self.state[:] = IDLE
        self.kept = None
        self._reset_twins(np.arange(self.n), per_env)
        self._check_arrays(what, result, self.n)
        ids = self._ids_of(what, result[1], self.n)  # (async: env_id, in env order)
        assert ids.tolist() == list(range(self.n)), f"{what}: rows not in env order: {ids}"
        self._take(what, result, np.arange(self.n))

    @initialize(data=st.data())
    def make_pool(self, data):
        self._make(data)

    @rule(data=st.data())
    def reset(self, data):
        if self.closed:
            return
        kind = data.draw(st.sampled_from(["full", "full", "mask", "env_id", "bad seed"]), label="reset")
        pick = bits_mask(data.draw(env_bits(self.n), label="envs"), self.n)
        base = data.draw(st.one_of(st.none(), st.integers(0, 2**40)), label="seed")
        seeds = [None if base is None else base + e for e in range(self.n)]
        if kind == "bad seed":
            self._call("reset(seed=-1)", lambda: self.env.reset(seed=-1), {ValueError})
            self._follow_up()
            return
        if kind == "full" or not self.sync:  # (partial resets need batch_size == num_envs)
            self._full_reset(base, f"reset(seed={base})", seeds)
            return
        ids = np.flatnonzero(pick)
        if not len(ids):
            return
        if self.in_flight:  # (a sync pool's send of some envs)
            what = f"reset(options={{'env_id': {ids.tolist()}}}) with envs in flight"
            self._refused(what, lambda: self.env.reset(options={"env_id": ids}), {RuntimeError}, [])
            return
        if kind == "mask":
            options: dict[str, Any] = {"reset_mask": pick}
            seed: Any = seeds  # one per env of the pool
        else:
            ids = np.random.default_rng(base or 0).permutation(ids)
            options = {"env_id": ids.tolist()}
            seed = [seeds[e] for e in ids]  # one per listed env
        what = f"reset(seed={_short(seed)}, options={_short(options)})"
        _, result = self._call(what, lambda: self.env.reset(seed=seed, options=options), set())
        self._reset_twins(ids, [seeds[e] for e in ids])
        if kind == "mask":
            self._check_arrays(what, result, self.n)
            for e in np.flatnonzero(~pick).tolist():  # the others report their current observations
                self._check_row(what, e, e, result, Row(self.last[e].obs))
            self._take(what, (_rows(result[0], ids), _info_rows(result[1], ids)), ids)
        else:
            self._check_arrays(what, result, len(ids))
            self._take(what, result, ids)

    # -- actions ---------------------------------------------------------------------------------------------

    @staticmethod
    def _choices(data: st.DataObject, valid: bool) -> tuple[int, str | None, int]:
        """What actions will be (drawn before the state decides for which envs: see SEEDS)."""
        seed = data.draw(SEEDS, label="actions seed")
        kind = None if valid else data.draw(BAD_ACTIONS, label="mistake")
        return seed, kind, data.draw(st.integers(0, 63), label="agent")

    def _actions(self, choices: tuple[int, str | None, int], ids: np.ndarray) -> tuple[Any, set, list[str]]:
        """Actions for the envs ``ids`` (one row each) from ``choices`` (a seed, the mistake to make if any, an
        agent), the errors they deserve (none: valid) and what the message must name (the agent; the env, or the
        envs, where a row is wrong)."""
        seed, kind, agent_pick = choices
        rng = np.random.default_rng(seed)
        rows = len(ids)
        alive = {a: np.array([e < self.n and a in self.alive[e] for e in ids.tolist()], bool) for a in self.agents}
        actions: dict[str, Any] = {}
        for a in self.agents:
            arr = _valid(self.act_spaces[a], rng, rows, throws=not self.native)
            if rng.integers(4) == 0 and (~alive[a]).any():
                arr = _garbage(self.act_spaces[a], arr, ~alive[a])
            elif rng.integers(8) == 0 and not alive[a].any():
                continue  # an agent alive nowhere may be left out
            elif rows:
                arr = _form(self.act_spaces[a], arr, rng)
            actions[a] = arr
        if kind is None:
            return actions, set(), []
        target = self.agents[agent_pick % len(self.agents)]
        space = self.act_spaces[target]
        box = isinstance(space, gym.spaces.Box)
        live_rows = np.flatnonzero(alive[target])
        if kind == "stranger":
            actions["zed"] = np.zeros(rows, np.int64)
            return actions, {KeyError}, ["'zed'"]
        if kind == "not a dict":
            return list(actions.values()), {TypeError}, ["dict"]
        if kind == "missing":
            actions.pop(target, None)
            if not len(live_rows):
                return actions, set(), []
            return actions, {KeyError}, [repr(target), f"env(s) {ids[live_rows][:8].tolist()}"]
        good = np.asarray(_valid(space, rng, rows, False), dtype=np.float32 if box else np.int64)
        if kind == "rows":
            actions[target] = np.concatenate([good, good[:1]]) if rows else np.zeros((1, *good.shape[1:]), good.dtype)
            return actions, {ValueError}, [repr(target)]
        if kind == "trailing":
            actions[target] = good[..., None]
            return actions, {ValueError}, [repr(target)]
        if kind == "dtype":
            actions[target] = good.astype(np.complex64) if box else good.astype(np.float32)
            return actions, {TypeError}, [repr(target)]
        if not len(live_rows):  # a bad value where the agent is not alive: ignored
            actions[target] = _garbage(space, good, np.ones(rows, bool))
            return actions, set(), []
        r = int(live_rows[agent_pick % len(live_rows)])
        bad = good.astype(np.float64 if box else np.int64)
        if box:  # NaN or infinity
            bad.reshape(rows, -1)[r, 0] = np.nan if kind == "nan" else np.inf
        else:  # out of range
            bad.reshape(rows, -1)[r, 0] = -1 if kind == "nan" else 10**6
        actions[target] = bad
        return actions, {ValueError}, [repr(target), f"env {int(ids[r])}"]

    def _refused(self, what: str, fn, errors: set, names: list[str]) -> None:
        """``fn`` is refused with one of ``errors`` whose message names each of ``names``; then a valid call works."""
        _, exc = self._call(what, fn, errors)
        for name in names:
            assert name in str(exc), f"{what}: the refusal does not name {name}: {exc}"
        self._follow_up()

    def _send_twins(self, ids: np.ndarray, actions: dict[str, Any]) -> None:
        """The envs ``ids`` step with row k of ``actions`` each: their twins step (or raise) now."""
        for k, e in enumerate(ids.tolist()):
            one = {a: np.asarray(v)[k] for a, v in actions.items() if a in self.alive[e]}
            self.state[e] = IN_FLIGHT
            try:
                self.expect[e] = self.twins[e].step(one)
                self.raising[e] = False
            except AgentStepError:
                self.expect[e], self.raising[e] = None, True

    # -- step / send / recv ----------------------------------------------------------------------------------

    @rule(data=st.data())
    def step(self, data):
        """A sync step of every env, with valid actions or one mistake."""
        if self.closed:
            return
        valid = data.draw(st.integers(0, 2), label="valid?") > 0
        ids = np.arange(self.n)
        actions, errors, names = self._actions(self._choices(data, valid), ids)
        what = f"step({_short(actions)})"
        if not self.sync:
            self._refused(what + " of an async pool", lambda: self.env.step(actions), {ValueError}, ["send"])
        elif errors:
            self._refused(what, lambda: self.env.step(actions), errors, names)
        elif self.in_flight or not self.sendable().all():  # sent some envs; disabled: an ended env to reset
            self._refused(what + " with an env to reset", lambda: self.env.step(actions), {RuntimeError}, [])
        else:
            self._send_twins(ids, actions)
            self._receive(what, lambda: self.env.step(actions), self.n)

    def _receive(self, what: str, fn, rows: int) -> None:
        """A receiving call of ``rows`` rows: its rows, or an env's exception (which it must raise when it takes every
        env in flight and one of them raises)."""
        raising = self.raising & (self.state == IN_FLIGHT)
        ok, result = self._call(what, fn, set(), env_error=raising.any())
        if not ok:
            self._env_raised(what, result, rows == self.in_flight)
            return
        self._check_arrays(what, result, rows)
        ids = self._ids_of(what, result[4], rows)
        if self.kept is not None:
            missing = np.flatnonzero(self.kept & ~np.isin(np.arange(self.n), ids))
            assert not len(missing), f"{what}: envs {missing.tolist()} kept in flight are not in batch {ids.tolist()}"
            self.kept = None
        self._take(what, result, ids)

    def _env_raised(self, what: str, exc: BaseException, whole: bool) -> None:
        type(self).env_errors += 1
        e = getattr(exc, "env_id", None)
        assert isinstance(e, int) and self.raising[e] and self.state[e] == IN_FLIGHT, f"{what}: env_id {e}: {exc}"
        text = " ".join([str(exc), *getattr(exc, "__notes__", ())])
        assert f"env {e}" in text and "agent 'c'" in text, f"{what}: the exception does not name env {e}, agent c"
        if self.sync:  # the batch's rows are dropped: every env that raised is broken, the others have stepped
            for f in np.flatnonzero(self.state == IN_FLIGHT).tolist():
                if self.raising[f]:
                    self.state[f], self.raising[f], self.broken[f], self.expect[f] = IDLE, False, True, None
                else:
                    self._apply(f, self.expect[f])
        else:  # only env e leaves flight; the batch's other envs come with the next receiving call
            self.state[e], self.raising[e], self.broken[e], self.expect[e] = IDLE, False, True, None
            if self.kept is not None:
                self.kept &= self.state == IN_FLIGHT
            elif whole:
                self.kept = self.state == IN_FLIGHT
        one = {a: _valid(s, np.random.default_rng(e), 1, False) for a, s in self.act_spaces.items()}
        _, refusal = self._call(f"send to env {e}, which raised", lambda: self.env.send(one, [e]), {RuntimeError})
        assert "raised an exception earlier" in str(refusal), f"send to env {e} after its exception: {refusal}"
        self._recover(what)

    def _recover(self, what: str) -> None:
        """The README's recipe: reset the envs that raised."""
        broken = np.flatnonzero(self.broken)
        if self.sync:
            options = {"env_id": broken.tolist()}
            ok, result = self._call(
                f"reset(options={options}) after {what}", lambda: self.env.reset(options=options), set()
            )
            self._reset_twins(broken, [None] * len(broken))
            self._check_arrays("reset(env_id)", result, len(broken))
            self._take("reset(env_id)", result, broken)
            return
        e = int(broken[0])
        self._call(f"async_reset(env_id=[{e}]) after {what}", lambda: self.env.async_reset(env_id=[e]), set())
        self._reset_twins(np.array([e]), [None])

    def _follow_up(self) -> None:
        """A valid call after a refusal: the pool is usable, and the twins still agree."""
        if self.closed:
            return
        if self.in_flight >= self.batch:
            self._recv("follow-up recv()")
        elif not self.sync and self.in_flight:
            self._recv_rest("follow-up recv_rest()")
        elif self.sync and self.sendable().all():
            actions = {
                a: np.asarray(_valid(s, np.random.default_rng(0), self.n, False)) for a, s in self.act_spaces.items()
            }
            self._send_twins(np.arange(self.n), actions)
            self._receive("follow-up step()", lambda: self.env.step(actions), self.n)
        else:
            self._full_reset(None, "follow-up reset()", [None] * self.n)

    def _recv(self, what: str) -> None:
        if self.in_flight < self.batch:
            self._call(what, self.env.recv, {RuntimeError})
            return
        self._receive(what, self.env.recv, self.batch)

    def _recv_rest(self, what: str) -> None:
        rows = self.in_flight
        if rows == 0 or rows >= self.batch:
            self._call(what, self.env.recv_rest, {RuntimeError})
            return
        self._receive(what, self.env.recv_rest, rows)

    @rule(data=st.data())
    def send(self, data):
        """send(actions, env_id) to some envs, valid or with one mistake in the actions or the ids."""
        if self.closed:
            return
        pick = bits_mask(data.draw(env_bits(self.n), label="envs"), self.n)
        valid = data.draw(st.integers(0, 3), label="valid?") > 0
        bad_ids = data.draw(st.sampled_from([None] * 6 + ["busy", "range", "twice"]), label="bad ids")
        choices = self._choices(data, valid or bad_ids is not None)  # (one mistake at a time)
        sendable = self.sendable()
        ids = np.flatnonzero(pick & sendable)
        if bad_ids == "range":
            ids = np.append(ids, self.n)
        elif bad_ids == "twice" and len(ids):
            ids = np.append(ids, ids[0])
        elif bad_ids == "busy" and not sendable.all():
            ids = np.append(ids, np.flatnonzero(~sendable)[0])
        else:
            bad_ids = None
        actions, errors, names = self._actions(choices, ids)
        what = f"send({_short(actions)}, {ids.tolist()})"
        if bad_ids is not None:  # (the ids are checked before the actions; a busy env by the pool)
            errors = {RuntimeError} if bad_ids == "busy" else {ValueError}
            self._refused(what, lambda: self.env.send(actions, ids), errors, [])
        elif errors:
            self._refused(what, lambda: self.env.send(actions, ids), errors, names)
        else:
            self._call(what, lambda: self.env.send(actions, ids), set())
            self._send_twins(ids, actions)

    @rule()
    def recv(self):
        if self.closed:
            return
        self._recv("recv()")

    @rule()
    def recv_rest(self):
        if self.closed:
            return
        self._recv_rest("recv_rest()")

    @rule(data=st.data())
    def async_reset(self, data):
        if self.closed:
            return
        pick = bits_mask(data.draw(env_bits(self.n), label="envs"), self.n)
        base = data.draw(st.one_of(st.none(), st.integers(0, 2**40)), label="seed")
        if data.draw(st.booleans(), label="every env?"):
            self._call(f"async_reset(seed={base})", lambda: self.env.async_reset(seed=base), set())
            self.state[:] = IDLE
            self.kept = None
            self._reset_twins(np.arange(self.n), [None if base is None else base + e for e in range(self.n)])
            return
        ids = np.flatnonzero(pick & (self.state == IDLE))
        seeds = [None if base is None else base + k for k in range(len(ids))]
        what = f"async_reset(seed={seeds}, env_id={ids.tolist()})"
        self._call(what, lambda: self.env.async_reset(seed=seeds, env_id=ids), set())
        self._reset_twins(ids, seeds)

    @rule(data=st.data(), count=st.integers(1, 20))
    def valid_calls(self, data, count):
        """A run of valid calls as a training loop makes them, so that episodes end, agents die and are born."""
        for _ in range(count):
            choices = self._choices(data, True)  # (drawn whatever the call: async rows come in any order)
            if self.closed:
                return
            if self.in_flight >= self.batch:
                self._recv("recv()")
            elif self.in_flight:  # (sync: after a send of some envs)
                self._recv_rest("recv_rest()")
            elif self.mode == "disabled" and self.ended.any() and not self.in_flight:
                ids = np.flatnonzero(self.ended)
                if self.sync:
                    what = f"reset(options={{'env_id': {ids.tolist()}}})"
                    _, result = self._call(what, lambda i=ids: self.env.reset(options={"env_id": i}), set())
                    self._reset_twins(ids, [None] * len(ids))
                    self._take(what, result, ids)
                else:
                    what = f"async_reset(env_id={ids.tolist()})"
                    self._call(what, lambda i=ids: self.env.async_reset(env_id=i), set())
                    self._reset_twins(ids, [None] * len(ids))
            elif self.sync:
                ids = np.arange(self.n)
                actions, *_ = self._actions(choices, ids)
                self._send_twins(ids, actions)
                self._receive(f"step({_short(actions)})", lambda a=actions: self.env.step(a), self.n)
            else:
                ids = np.flatnonzero(self.sendable())
                if not len(ids):
                    self._call("async_reset()", self.env.async_reset, set())
                    self.state[:] = IDLE
                    self._reset_twins(np.arange(self.n), [None] * self.n)
                    continue
                actions, *_ = self._actions(choices, ids)
                what = f"send({_short(actions)}, {ids.tolist()})"
                self._call(what, lambda a=actions, i=ids: self.env.send(a, i), set())
                self._send_twins(ids, actions)

    # -- env calls, close ---------------------------------------------------------------------------------------

    @rule(name=st.sampled_from(["possible_agents", "max_num_agents", "no_such_attribute"]))
    def get_attr(self, name):
        if self.closed:
            self._call(f"get_attr({name!r}) after close", lambda: self.env.get_attr(name), {ClosedError})
            return
        if self.in_flight and not self.native:  # (a native env has no Python object that could be busy)
            self._call(f"get_attr({name!r}) with envs in flight", lambda: self.env.get_attr(name), {RuntimeError})
            return
        if name == "no_such_attribute":
            self._call(f"get_attr({name!r})", lambda: self.env.get_attr(name), {AttributeError})
            return
        _, got = self._call(f"get_attr({name!r})", lambda: self.env.get_attr(name), set())
        want = self.agents if name == "possible_agents" else len(self.agents)
        assert got == (want,) * self.n, f"get_attr({name!r}) is {got}"

    @rule(data=st.data())
    def close(self, data):
        if self.closed:
            what = data.draw(st.sampled_from(["reset", "step", "send", "recv", "async_reset", "close"]), label="call")
            calls = {
                "reset": self.env.reset,
                "step": lambda: self.env.step({}),
                "send": lambda: self.env.send({}, []),
                "recv": self.env.recv,
                "async_reset": self.env.async_reset,
            }
            if what == "close":
                self._call("close() of a closed pool", self.env.close, set())
            else:
                self._call(f"{what}() after close", calls[what], {ClosedError})
            if data.draw(st.booleans(), label="make another?"):
                self._make(data)
            return
        if data.draw(st.integers(0, 5), label="close?") != 0:
            return
        self._call("close()", self.env.close, set())
        self.closed = True
        assert self.env.closed

    @invariant()
    def closed_flag_matches(self):
        if self.env is not None:
            assert self.env.closed == self.closed

    def teardown(self) -> None:
        if self.env is not None:
            self.env.close()
        for twin in self.twins:
            twin.close()


def _rows(batch: dict, ids: np.ndarray) -> dict:
    return {a: v[ids] for a, v in batch.items()}


def _info_rows(infos: dict, ids: np.ndarray) -> dict:
    return {"active": {a: v[ids] for a, v in infos["active"].items()}}


# -- the two pools ---------------------------------------------------------------------------------------------


class NativeMpeMachine(MultiAgentMachine):
    """Native MPE pools: several ids, discrete and continuous actions, agents of different spaces (adversaries,
    speaker and listener), episodes of a few steps (max_cycles)."""

    native = True

    def _draw_config(self, data):
        env_id = data.draw(st.sampled_from(NATIVE_IDS), label="env")
        n = data.draw(st.integers(1, 6), label="num_envs")
        pool: dict[str, Any] = {
            "autoreset_mode": data.draw(st.sampled_from(MODES), label="mode"),
            "seed": data.draw(st.integers(0, 2**40), label="seed"),
        }
        batch = draw_batch_size(data, n)
        if batch is not None:
            pool["batch_size"] = batch
        threads = data.draw(st.one_of(st.none(), st.integers(1, 2)), label="num_threads")
        if threads is not None:
            pool["num_threads"] = threads
        options: dict[str, Any] = {
            "continuous_actions": data.draw(st.booleans(), label="continuous_actions"),
            "max_cycles": data.draw(st.integers(1, 8), label="max_cycles"),
        }
        if env_id == "simple_spread_v3":
            options["N"] = data.draw(st.integers(1, 4), label="N")
        return env_id, n, pool, options

    def _twin(self):
        env_id, _, options = self.config
        return NativeTwin(env_id, options, self.mode)


class PythonPoolMachine(MultiAgentMachine):
    """Python-env pools of ``Raising`` (agents that come and go, different spaces, a step that raises)."""

    native = False

    def _draw_config(self, data):
        n = data.draw(st.integers(1, 3), label="num_envs")
        self.length = data.draw(st.integers(3, 8), label="episode length")
        pool: dict[str, Any] = {
            "autoreset_mode": data.draw(st.sampled_from(MODES), label="mode"),
            "seed": data.draw(st.integers(0, 2**40), label="seed"),
            "num_workers": data.draw(st.integers(1, min(n, 2)), label="num_workers"),
            "start_method": "fork",  # (fast; the workers find ma_envs as this process imported it)
        }
        batch = draw_batch_size(data, n)
        if batch is not None:
            pool["batch_size"] = batch
        limit = data.draw(st.one_of(st.none(), st.integers(1, 10)), label="max_episode_steps")
        if limit is not None:
            pool["max_episode_steps"] = limit
        return functools.partial(Raising, self.length), n, pool, {}

    def _twin(self):
        return PythonTwin(self.length, self.mode, self.config[1].get("max_episode_steps"))


def _run(machine: type[MultiAgentMachine], examples: int, steps: int) -> None:
    machine.sequences = machine.calls = machine.env_errors = machine.refusals = 0
    start = time.perf_counter()
    try:
        run_state_machine_as_test(machine, settings=_settings(examples, steps))
    finally:
        print(
            f"{machine.__name__}: {machine.sequences} sequences, {machine.calls} calls, {machine.refusals} refusals, "
            f"{machine.env_errors} env exceptions, {time.perf_counter() - start:.1f} s"
        )


@pytest.mark.slow
@pytest.mark.timeout(_TIMEOUT)
def test_native_mpe_pools():
    _run(NativeMpeMachine, _EXAMPLES or 40, 30)


@pytest.mark.slow
@pytest.mark.timeout(_TIMEOUT)
def test_python_multiagent_pools():
    _run(PythonPoolMachine, max(1, _EXAMPLES // 4) if _EXAMPLES else 12, 30)
