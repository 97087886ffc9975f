"""Stateful fuzzing of both pools: random sequences of make / reset / step / async_reset / send / recv /
recv_rest / close with valid and invalid arguments, checked against a model of every env's state.

The model knows, for each env, whether it was never reset, is idle or is in flight (a send puts the envs it
names in flight, also some envs of one of the native pool's blocks), whether its next row is a reset,
how many steps its episode has run and whether that episode ended. So every call is known in advance
to be valid (it must succeed) or invalid (it must raise one of the exceptions that fit its mistakes:
ValueError, TypeError or RuntimeError, never anything else), and every result is checked: observations
inside ``single_observation_space``, finite rewards of the pool's dtype (float32 native, float64 MuJoCo and
Python envs), bool flags, ``info["env_id"]`` rows that were in flight and are distinct, reset rows that are
resets, truncation exactly at ``max_episode_steps``, episode statistics when and only when an episode ends
(``episode_return`` exactly the float64 sum of the rewards received). After every refused call a valid
follow-up call must succeed: a refusal never breaks the pool.

Envs that raise: native ``_Debug-v0`` with ``throw_on_action=3`` and the Python ``Thrower`` raise in a step
whose action is 3, drawn now and then for one env or two neighbours (one block's, often). The model knows
which envs in flight will raise. A receiving call (step, recv, recv_rest, recv_ready) either returns rows,
none of them a raising env's, or raises the env's exception (``fastvec._core.EnvError``, or the Python env's
own type) with an ``env_id`` naming one of them; it must raise when it takes every env in flight with one
of them. In async mode only that env leaves flight, broken (a step of it is refused until it is reset); the
batch's other envs stay in flight and the next receiving call returns them (checked when the batch was every
env in flight). In sync mode the step's rows are dropped, every raising env is broken, and the others have
stepped (the model replays their step: the debug envs' reward is the action, their observation
[steps since reset, last action]). Then the README's recipe: reset the env (``async_reset(env_id=[e])``, or
a partial reset of the broken envs in sync mode), and go on with every env in play.

Four machines: native classic-control pools (sync and async; also closed, or stepped, from a second
thread; ``_Debug-v0`` too), native MuJoCo pools, a tiny native Atari pool (Pong-v5, one to three envs) and
Python-env pools (worker processes; CartPole, Pendulum, Blackjack, Thrower). A call that hangs for
``CALL_TIMEOUT`` seconds fails the run with every thread's stack and the calls before it: a hang inside
native code cannot be interrupted by pytest-timeout's signal method.

``FASTVEC_FUZZ_EXAMPLES=N`` runs N sequences of the native classic machine and N // 10 of each of the
others; CI runs the defaults (250, 20 and 20: under a minute on 2 cores). A long local run (``-s`` prints
each machine's sequence and call counts; hypothesis keeps every sequence, about 0.3 MB each, so split
runs of many thousands):

    FASTVEC_FUZZ_EXAMPLES=8400 pytest tests/fuzz/test_fuzz.py -s -o faulthandler_timeout=0

Each bug the fuzzer found is fixed, and pinned by a regression test at the end of this file.
"""

from __future__ import annotations

import faulthandler
import functools
import gc
import os
import sys
import threading
import time
import warnings
import weakref
from collections import deque
from contextlib import contextmanager
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from envs_for_tests import THROW, Thrower, ThrowerError  # THROW: the action on which _Debug-v0 and Thrower raise
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import fastvec
from fastvec._args import ResetNeeded
from fastvec.pyenv import EnvError
from fastvec.vector import ClosedError

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)

CALL_TIMEOUT = 60.0  # seconds one pool call may take before the run is declared hung
_EXAMPLES = int(os.environ.get("FASTVEC_FUZZ_EXAMPLES", "0") or 0)
DOCUMENTED = (ValueError, TypeError, RuntimeError, FileNotFoundError, EnvError, fastvec._core.EnvError)

FRESH, IDLE, IN_FLIGHT = 0, 1, 3
MODES = ("next_step", "same_step", "disabled")
# The registry's classic-control envs, and a strategy for each of their options from its C++ option table.
CLASSIC_IDS = tuple(e for e in fastvec.list_envs() if not fastvec.registry.lookup(e).family)


def _option_strategy(o: fastvec.registry.OptionSpec) -> st.SearchStrategy:
    if o.kind == "bool":
        return st.booleans()
    if o.kind == "int":
        return st.integers(int(max(o.low, -1000)), int(min(o.high, max(o.low, -1000) + 64)))
    return st.floats(max(o.low, o.default - 10), min(o.high, o.default + 10))


CLASSIC_OPTIONS = {
    e: {o.name: _option_strategy(o) for o in fastvec.registry.lookup(e).option_specs} for e in CLASSIC_IDS
}
ATARI_OPTIONS = {
    "frame_skip": st.integers(1, 5),
    "stack_num": st.integers(1, 4),
    "img_height": st.sampled_from([84, 42, 210]),
    "img_width": st.sampled_from([84, 42, 160]),
    "noop_max": st.integers(0, 30),
    "gray_scale": st.booleans(),
    "episodic_life": st.booleans(),
    "reward_clip": st.booleans(),
    "use_fire_reset": st.booleans(),
    "repeat_action_probability": st.floats(0.0, 1.0),
    "full_action_space": st.booleans(),
}
# (id, backend): Python envs of every space kind the fuzzer covers (Box/Discrete, Box actions, Tuple observations).
PYTHON_ENVS = (("CartPole-v1", "python"), ("Pendulum-v1", "python"), ("Blackjack-v1", "python"))


# -- hang detection ----------------------------------------------------------------------------


class _Watchdog:
    """Ends the process (exit code 1) with every thread's stack and the last calls when one call takes
    longer than CALL_TIMEOUT. Pool waits release the GIL, so this thread runs while a call hangs."""

    def __init__(self) -> None:
        self.log: deque[str] = deque(maxlen=40)
        self.current: tuple[float, str] | None = None
        threading.Thread(target=self._watch, name="fuzz-watchdog", daemon=True).start()

    @contextmanager
    def call(self, what: str):
        self.log.append(what)
        self.current = (time.monotonic(), what)
        try:
            yield
        finally:
            self.current = None

    def _watch(self) -> None:
        while True:
            time.sleep(1.0)
            current = self.current
            if current is not None and time.monotonic() - current[0] > CALL_TIMEOUT:
                err = sys.__stderr__
                print(f"\n*** fuzz: {current[1]} hung for {CALL_TIMEOUT:.0f} s; the calls before it:", file=err)
                for line in self.log:
                    print("    " + line, file=err)
                faulthandler.dump_traceback(file=err, all_threads=True)
                err.flush()
                os._exit(1)


WATCHDOG = _Watchdog()

ALLOWED_CPUS = os.sched_getaffinity(0)


def _set_every_threads_affinity(cpus: set[int]) -> None:
    """As ``taskset -a -p``: every thread of this process."""
    for t in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(t), cpus)
        except ProcessLookupError:  # ended meanwhile
            pass


def _short(value: Any) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 160 else text[:157] + "..."


# -- the model ---------------------------------------------------------------------------------


class Model:
    """What the pool must be doing: per env its state, what its next row is, its episode's progress."""

    def __init__(self, env: Any, native: bool, mode: str, episode_length: int | None = None) -> None:
        self.native = native
        self.n = env.num_envs
        self.batch = env.batch_size
        self.sync = self.batch == self.n
        self.mode = mode
        self.limit = env.max_episode_steps
        self.closed = False
        self.state = np.full(self.n, FRESH, np.uint8)
        self.resetting = np.zeros(self.n, bool)  # the env's pending row is a reset
        self.ended = np.zeros(self.n, bool)  # its last step ended an episode (it resets next, or must be reset)
        self.elapsed = np.zeros(self.n, np.int64)
        self.ret = np.zeros(self.n, np.float64)
        self.last_obs: list[Any] = [None] * self.n
        # Envs that raise (THROW): the episode length of _Debug-v0 / Thrower, None for the others.
        self.episode_length = episode_length
        self.throws = episode_length is not None
        self.action = np.zeros(self.n, np.int64)  # the last action sent to each env (envs that raise)
        self.raising = np.zeros(self.n, bool)  # in flight, and its step raises
        self.broken = np.zeros(self.n, bool)  # idle, it raised: a step of it is refused until it is reset
        # The envs kept in flight by an env's exception in async mode, when the model knows which (the batch was
        # every env in flight): the next receiving call returns them (or raises one of them that raised too).
        self.kept: np.ndarray | None = None

    @property
    def in_flight(self) -> int:
        return int((self.state == IN_FLIGHT).sum())

    def sendable(self) -> np.ndarray:
        ok = (self.state == IDLE) & ~self.broken
        if self.mode == "disabled":
            ok &= ~self.ended
        return ok

    def send(self, ids: np.ndarray, reset: bool, actions: Any = None) -> None:
        """The envs sent are in flight: a block sent for some of its envs runs for those only. ``actions``
        (envs that raise): the actions sent, one per env of ``ids``; an env raises if its action is THROW and
        its row is a step, not the reset of an ended episode (next_step)."""
        ids = np.asarray(ids, np.int64).reshape(-1)
        self.state[ids] = IN_FLIGHT
        self.resetting[ids] = reset
        self.raising[ids] = False
        if reset:
            self.broken[ids] = False
        elif self.throws:
            acts = np.asarray(actions).reshape(-1).astype(np.int64)
            self.action[ids] = acts
            self.raising[ids] = (acts == THROW) & ~(self.ended[ids] & (self.mode == "next_step"))

    def drain(self) -> None:
        """Every env in flight is idle, its row dropped (with any exception of its step, and kept rows)."""
        self.state[self.state == IN_FLIGHT] = IDLE
        self.raising[:] = False
        self.kept = None

    def replay_dropped_step(self, e: int) -> None:
        """Env ``e`` stepped in a sync batch whose rows were dropped (another env raised): its step as
        _Debug-v0 and Thrower take it (reward = action, obs = [steps since reset, last action], termination at
        episode_length), or its reset when its row was one."""
        if self.resetting[e] or (self.mode == "next_step" and self.ended[e]):
            self.elapsed[e], self.ret[e], self.ended[e], self.broken[e] = 0, 0.0, False, False
            obs = [0, 0]
        else:
            a = int(self.action[e])
            self.elapsed[e] += 1
            self.ret[e] += float(a)
            obs = [int(self.elapsed[e]), a]
            if self.elapsed[e] >= self.episode_length or (self.limit is not None and self.elapsed[e] >= self.limit):
                if self.mode == "same_step":
                    self.elapsed[e], self.ret[e] = 0, 0.0
                    obs = [0, 0]
                else:
                    self.ended[e] = True
        self.last_obs[e] = np.array(obs, np.float32)
        self.state[e] = IDLE
        self.resetting[e] = False


# -- argument strategies -----------------------------------------------------------------------


def _space_row(space: gym.Space, obs: Any, i: int) -> Any:
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_space_row(s, o, i) for s, o in zip(space.spaces, obs, strict=True))
    if isinstance(space, gym.spaces.Dict):
        return {k: _space_row(s, obs[k], i) for k, s in space.spaces.items()}
    # a row of a scalar Box field (dm_control's walker height) is a numpy scalar, which Box.contains warns about
    return np.asarray(obs[i]) if isinstance(space, gym.spaces.Box) else obs[i]


def check_obs(space: gym.Space, obs: Any, rows: int, what: str) -> None:
    if isinstance(space, gym.spaces.Box):
        assert isinstance(obs, np.ndarray), f"{what}: obs is a {type(obs).__name__}"
        assert obs.shape == (rows, *space.shape), f"{what}: obs shape {obs.shape}, expected {(rows, *space.shape)}"
        assert obs.dtype == space.dtype, f"{what}: obs dtype {obs.dtype}, expected {space.dtype}"
        inside = ((obs >= space.low) & (obs <= space.high)).reshape(rows, int(np.prod(space.shape))).all(axis=1)
        assert inside.all(), f"{what}: row {np.flatnonzero(~inside)[0]} outside {space}: {obs[~inside][0]}"
        return
    for i in range(rows):
        row = _space_row(space, obs, i)
        assert space.contains(row), f"{what}: row {i} {row!r} outside {space}"


# Hypothesis replays and shrinks a sequence by replaying its draws, so what is drawn (how many values, from
# which strategy) may depend only on earlier draws, never on the pool's results: async rows come back in
# completion order and unseeded episodes end at random steps. Every draw below has a shape fixed by the
# pool's configuration (num_envs, spaces); the current state only interprets what was drawn.


@functools.cache
def seeds_valid(n: int) -> st.SearchStrategy:
    one = st.integers(0, 2**64 - 1)
    base = st.integers(0, 2**64 - n)  # an int seeds env i with seed + i, which stays below 2**64
    return st.one_of(
        st.none(),
        base,
        base.map(np.uint64),
        base.map(lambda s: np.array(s, np.uint64)),  # a 0-d array is an int
        st.lists(st.one_of(st.none(), one), min_size=n, max_size=n),
        st.lists(st.integers(0, 2**62), min_size=n, max_size=n).map(lambda s: np.array(s, np.int64)),
    )


@functools.cache
def seeds_invalid(n: int) -> st.SearchStrategy:
    """(seed, errors): one mistake each."""
    return st.sampled_from(
        [
            (-1, {ValueError}),
            (2**64, {ValueError}),
            (2**64 - n + 1 if n > 1 else 2**64, {ValueError}),  # env n - 1 would get seed + n - 1 >= 2**64
            (1.5, {TypeError}),
            ("7", {TypeError}),
            (True, {TypeError}),
            (b"12", {TypeError}),
            ({"a": 1}, {TypeError}),
            (np.array(1.5), {TypeError}),
            ([0] * (n + 1), {ValueError}),
            ([1.5] * n, {TypeError}),
            ([-1] * n, {ValueError}),
            ([None] * (n - 1) + [2**64], {ValueError}),
            (["x"] * n, {TypeError}),
        ]
    )


@functools.cache
def seed_lists(n: int) -> st.SearchStrategy:
    """None, or n per-env seeds (the caller keeps as many as it resets)."""
    return st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 2**64 - 1)), min_size=n, max_size=n))


@functools.cache
def env_bits(n: int) -> st.SearchStrategy:
    """A set of envs, as bits; the caller keeps those its call needs (e.g. the idle ones)."""
    return st.integers(0, 2**n - 1)


def bits_mask(bits: int, n: int) -> np.ndarray:
    return (bits >> np.arange(n)) & 1 == 1


@functools.cache
def _int_rows(lo: int, hi: int, n: int) -> st.SearchStrategy:
    return st.lists(st.integers(lo, hi), min_size=n, max_size=n)


@functools.cache
def _float_rows(size: int, wide: bool) -> st.SearchStrategy:
    return st.lists(st.floats(-1e6, 1e6) if wide else st.floats(-1.0, 1.0), min_size=size, max_size=size)


DISCRETE_FORMS = st.sampled_from(["int64", "int32", "int8", "uint8", "uint16", "list"])
BOX_FORMS = st.sampled_from(["float32", "float64", "float16", "flat", "list", "int"])
BAD_DISCRETE = st.sampled_from(
    [
        "short",
        "long",
        "column",
        "scalar",
        "float",
        "str",
        "none",
        "low",
        "high",
        "huge",
        "uint64",
        "bool",
        "ragged",
        "tensor",
    ]
)
BAD_BOX = st.sampled_from(
    ["nan", "inf", "-inf", "overflow", "short", "long", "trailing", "str", "complex", "bool", "scalar", "tensor"]
)


def _grad_tensor(rows: int, native: bool) -> tuple[Any, set]:
    """A torch tensor that requires grad: numpy cannot take it (the message says .detach())."""
    import torch

    return torch.zeros(max(rows, 1), requires_grad=True), {TypeError} if native else {TypeError, RuntimeError}


# How often a valid action draw of envs that raise has THROW: for one env (1 in 16) or two neighbours (1 in 16).
THROWS = st.integers(0, 15)


def draw_actions(
    data: st.DataObject,
    space: gym.Space,
    n: int,
    rows: int,
    native: bool,
    valid: bool,
    exact: bool = False,
    throws: bool = False,
) -> tuple[Any, set]:
    """Actions for ``rows`` (at most ``n + 1``: an env listed twice) of the pool's ``n`` envs, and the errors
    they deserve (empty: valid). The draws are the same for any ``rows``. ``exact``: the env takes float64
    actions as they come (MuJoCo's), so a huge finite value is an action, not an overflow (and not drawn: its
    control cost is an infinite reward, as gymnasium's). ``throws``: the env raises on THROW, its last action:
    valid actions have it now and then only, in one row or in two neighbouring rows."""
    row = data.draw(st.integers(0, max(n - 1, 0)), label="row") % max(rows, 1)
    if isinstance(space, gym.spaces.Discrete):
        lo, k = int(space.start), int(space.n)
        if valid:
            values = data.draw(_int_rows(lo, lo + k - 1 - throws, n + 1), label="actions")[:rows]
            if throws:
                how = data.draw(THROWS, label="throw?")
                if how < 2 and rows:
                    values[row] = THROW
                    if how == 1:
                        values[(row + 1) % rows] = THROW
            form = data.draw(DISCRETE_FORMS, label="form")
            if form == "list" and rows:
                return values, set()
            return np.array(values, dtype=np.int64 if form == "list" else form), set()
        kind = data.draw(BAD_DISCRETE, label="bad actions")
        if not native and kind in ("low", "high", "huge"):
            kind = "short"  # (the Python-env pool passes values outside the space to the env, which decides)
        good = np.full(rows, lo, np.int64)
        if kind == "short" and rows > 0:
            return good[1:], {ValueError}
        if kind in ("short", "long"):
            return np.full(rows + 1, lo, np.int64), {ValueError}
        if kind == "column":
            return good.reshape(rows, 1), {ValueError}
        if kind == "scalar":
            return lo, {ValueError}
        if kind == "float":
            return good.astype(np.float32), {TypeError}
        if kind == "str":
            return np.array(["left"] * rows, dtype=str) if rows else "left", {TypeError, ValueError}
        if kind == "none":
            return [None] * rows if rows else None, {TypeError, ValueError}
        if kind in ("low", "high", "huge"):
            if rows == 0:
                return np.zeros(1, np.int64), {ValueError}
            bad = good.copy()
            bad[row] = {"low": lo - 1, "high": lo + k, "huge": 2**40}[kind]
            return bad, {ValueError}
        if kind == "uint64":  # not to be read as -1
            if rows == 0:
                return np.zeros(1, np.uint64), {ValueError}
            bad = good.astype(np.uint64)
            bad[row] = 2**64 - 1
            return bad, {ValueError}
        if kind == "tensor":
            return _grad_tensor(rows, native)
        if kind == "bool":
            # Native: a bool array is not an integer array. The Python-env pool takes bools as 0/1.
            return np.ones(rows, bool), ({TypeError} if native else set())
        return [[lo]] + [lo, lo] + [lo] * max(0, rows - 3), {TypeError, ValueError}  # ragged
    assert isinstance(space, gym.spaces.Box)
    shape = (rows, *space.shape)
    if valid:
        per_env = int(np.prod(space.shape))
        wide = data.draw(st.booleans(), label="outside the bounds")
        flat = data.draw(_float_rows((n + 1) * per_env, wide), label="actions")[: rows * per_env]
        arr = np.array(flat, np.float64).reshape(shape)
        form = data.draw(BOX_FORMS, label="form")
        if form == "flat" and space.shape == (1,):
            return arr.reshape(rows).astype(np.float32), set()
        if form == "list" and rows:
            return arr.tolist(), set()
        if form == "int":
            return np.rint(np.clip(arr, -1, 1)).astype(np.int32), set()
        if form == "float16":
            return np.clip(arr, -1, 1).astype(np.float16), set()
        return arr.astype(np.float64 if form == "float64" else np.float32), set()
    kind = data.draw(BAD_BOX, label="bad actions")
    if not native and kind in ("nan", "inf", "-inf"):
        kind = "overflow"  # (the Python-env pool passes NaN and infinities to the env; 1e300 it cannot hold)
    if kind == "overflow" and exact:
        kind = "inf"
    good = np.zeros(shape, np.float32)
    if kind == "tensor":
        return _grad_tensor(rows, native)
    if kind in ("nan", "inf", "-inf", "overflow"):
        if rows == 0:
            return np.zeros((1, *space.shape), np.float32), {ValueError}
        bad = good.astype(np.float64)  # overflow: finite as float64, inf as the float32 the env receives
        bad.reshape(rows, -1)[row, 0] = -1e300 if kind == "overflow" else float(kind)
        return bad, {ValueError}
    if kind == "short" and rows > 0:
        return good[1:], {ValueError}
    if kind in ("short", "long"):
        return np.zeros((rows + 1, *space.shape), np.float32), {ValueError}
    if kind == "trailing":
        return np.zeros((rows, *space.shape, 2), np.float32), {ValueError}
    if kind == "str":
        return np.full(shape, "x"), {TypeError}
    if kind == "complex":
        return good.astype(np.complex64), {TypeError}
    if kind == "bool":
        # Native: bools are not real numbers. The Python-env pool takes them as 0.0/1.0.
        return good.astype(bool), ({TypeError} if native else set())
    return 0.5, {ValueError}


def simple_actions(space: gym.Space, rows: int) -> np.ndarray:
    if isinstance(space, gym.spaces.Discrete):
        return np.full(rows, int(space.start), np.int64)
    return np.zeros((rows, *space.shape), np.float32)


# -- the machine -------------------------------------------------------------------------------


class PoolMachine(RuleBasedStateMachine):
    """Shared rules; subclasses say which pools to make (``_draw_config``) and which bad make calls to try."""

    native = True
    exact_actions = False  # the envs take float64 actions as they come (see draw_actions)
    reward_dtype = np.float32  # float64 for envs whose rewards are (MuJoCo's, Python envs')
    env_exception: type = fastvec._core.EnvError  # what a receiving call raises for an env's exception
    fixed_pool = False  # costly pools (Atari, Python envs): a new one only after the old one is closed
    background_calls = 500  # calls a thread makes in the threaded rules (Atari steps are slow)
    sequences = 0  # sequences run (each is one instance), shrinking included
    calls = 0
    env_errors = 0  # env exceptions raised by receiving calls (sync, async)

    def __init__(self) -> None:
        super().__init__()
        type(self).sequences += 1
        self.env: Any = None
        self.model: Model | None = None
        self.ops_since_make = 0
        self.recoveries = 0
        self.threads_before = len(os.listdir("/proc/self/task"))

    # -- calls and their expected outcome --------------------------------------------------

    def _call(self, what: str, fn, errors: set, env_error: bool = False) -> Any:
        """Runs ``fn``: it must succeed when ``errors`` is empty, else raise exactly one of ``errors``; or
        (``env_error``) raise an env's exception (``env_exception`` with an ``env_id``).
        Returns (True, result) or (False, exception)."""
        type(self).calls += 1
        with WATCHDOG.call(what):
            try:
                result = fn()
            except BaseException as exc:
                if env_error and type(exc) is self.env_exception and hasattr(exc, "env_id"):
                    return False, exc
                if not isinstance(exc, DOCUMENTED):
                    raise AssertionError(
                        f"{what} raised an undocumented {type(exc).__module__}.{type(exc).__name__}: {exc}"
                    ) from exc
                if not errors:
                    raise AssertionError(f"{what} is valid but raised {type(exc).__name__}: {exc}") from exc
                # A closed pool's ClosedError (gymnasium's ClosedEnvironmentError) is the model's RuntimeError.
                if (RuntimeError if type(exc) is ClosedError else type(exc)) not in errors:
                    raise AssertionError(
                        f"{what} raised {type(exc).__name__} ({exc}); expected one of "
                        f"{sorted(e.__name__ for e in errors)}"
                    ) from exc
                return False, exc
        assert not errors, f"{what} should have raised one of {sorted(e.__name__ for e in errors)}"
        return True, result

    def _closed_errors(self, errors: set) -> set:
        """A closed pool refuses every call with RuntimeError (or an argument error found first)."""
        return errors | {RuntimeError} if self.model.closed else errors

    # -- results -----------------------------------------------------------------------------

    def _check_rows(
        self, what: str, obs: Any, info: dict, rows: int, rew=None, term=None, trunc=None, sync_ids=None
    ) -> np.ndarray:
        """Checks a batch; returns its env ids: info["env_id"] in async mode, where only it has them; in sync
        mode (no env_id key) the rows are every env in env order, or ``sync_ids`` for a reset of those."""
        env = self.env
        check_obs(env.single_observation_space, obs, rows, what)
        if self.model.batch == self.model.n:
            assert "env_id" not in info, f"{what}: a sync pool's info has env_id"
            ids = np.arange(rows, dtype=np.int32) if sync_ids is None else np.asarray(sync_ids, dtype=np.int32)
        else:
            ids = info["env_id"]
        assert isinstance(ids, np.ndarray) and ids.shape == (rows,) and ids.dtype == np.int32, f"{what}: env_id {ids!r}"
        assert ((ids >= 0) & (ids < self.model.n)).all(), f"{what}: env_id out of range: {ids}"
        assert len(set(ids.tolist())) == rows, f"{what}: env_id not distinct: {ids}"
        if rew is not None:
            assert rew.shape == (rows,) and rew.dtype == self.reward_dtype, f"{what}: reward {rew.dtype} {rew.shape}"
            assert np.isfinite(rew).all(), f"{what}: reward not finite: {rew}"
            for name, flag in (("terminated", term), ("truncated", trunc)):
                assert flag.shape == (rows,) and flag.dtype == np.bool_, f"{what}: {name} {flag.dtype} {flag.shape}"
        return ids

    def _take_rows(
        self,
        what: str,
        ids: np.ndarray,
        obs: Any,
        info: dict,
        rew=None,
        term=None,
        trunc=None,
        observed: np.ndarray | None = None,
    ) -> None:
        """Checks returned rows against the model and makes their envs idle. ``rew is None``: a reset's rows;
        ``observed``: rows of envs that were not reset but report their current observation."""
        m = self.model
        done_mask = info.get("_episode_return", np.zeros(len(ids), bool))
        if rew is None or observed is not None:
            assert not done_mask.any(), f"{what}: a reset reports episode statistics: {info}"
        for r, e in enumerate(ids.tolist()):
            row_obs = _space_row(self.env.single_observation_space, obs, r)
            if observed is not None and observed[e]:
                assert m.state[e] == IDLE, f"{what}: env {e} observed while {m.state[e]}"
                if m.last_obs[e] is not None:
                    assert _tree_equal(row_obs, m.last_obs[e]), (
                        f"{what}: env {e} was not reset but its observation changed: {m.last_obs[e]} -> {row_obs}"
                    )
                continue
            assert m.state[e] == IN_FLIGHT, f"{what}: returned env {e}, which was not in flight (state {m.state[e]})"
            assert not m.raising[e], f"{what}: returned a row of env {e}, whose step raised"
            reset_row = rew is None or m.resetting[e] or (m.mode == "next_step" and m.ended[e])
            if reset_row:
                if rew is not None:
                    assert rew[r] == 0 and not term[r] and not trunc[r], (
                        f"{what}: env {e} reset but its row has reward {rew[r]}, flags {term[r]} {trunc[r]}"
                    )
                assert not done_mask[r], f"{what}: env {e} reset but reports an episode end"
                m.elapsed[e], m.ret[e], m.ended[e], m.broken[e] = 0, 0.0, False, False
            else:
                m.elapsed[e] += 1
                m.ret[e] += float(rew[r])
                want_trunc = m.limit is not None and m.elapsed[e] >= m.limit
                assert trunc[r] == want_trunc, (
                    f"{what}: env {e} at step {m.elapsed[e]} (limit {m.limit}) has truncated={trunc[r]}"
                )
                done = bool(term[r] or trunc[r])
                assert done_mask[r] == done, f"{what}: env {e} done={done} but _episode_return={done_mask[r]}"
                if done:
                    assert info["episode_length"][r] == m.elapsed[e], (
                        f"{what}: env {e} episode_length {info['episode_length'][r]}, expected {m.elapsed[e]}"
                    )
                    # Exact: the pools sum each reward as the caller receives it (float32 ones as float64, exact),
                    # in float64 and in step order, as the model does (float32 rewards: the native pools'
                    # count_block adds double(reward); float64: MuJoCo's, and Python envs' float(reward)).
                    assert info["episode_return"][r] == m.ret[e], (
                        f"{what}: env {e} episode_return {info['episode_return'][r]!r}, rewards summed {m.ret[e]!r}"
                    )
                    if m.mode == "same_step":
                        assert info["_final_obs"][r], f"{what}: env {e} ended without final_obs"
                        final = info["final_obs"][r]
                        if isinstance(final, dict):  # a scalar field is a numpy scalar: Box.contains warns of it
                            final = {k: np.asarray(v) for k, v in final.items()}
                        assert self.env.single_observation_space.contains(final), (
                            f"{what}: final_obs {final!r} outside {self.env.single_observation_space}"
                        )
                        m.elapsed[e], m.ret[e] = 0, 0.0
                    else:
                        m.ended[e] = True
                elif m.mode == "same_step" and "_final_obs" in info:
                    assert not info["_final_obs"][r], f"{what}: env {e} did not end but has final_obs"
            m.state[e] = IDLE
            m.resetting[e] = False
            m.last_obs[e] = _copy_tree(row_obs)

    # -- lifecycle -------------------------------------------------------------------------

    def _draw_config(self, data: st.DataObject) -> tuple[str, int, dict]:
        raise NotImplementedError

    def _draw_bad_make(self, data: st.DataObject) -> tuple[tuple, dict, set]:
        raise NotImplementedError

    def _make(self, data: st.DataObject) -> None:
        env_id, num_envs, kwargs = self._draw_config(data)
        episode_length = kwargs.pop("_throws", None)  # an env that raises on THROW: its episode length
        what = f"fastvec.make({env_id!r}, {num_envs}, **{_short(kwargs)})"
        kwargs["episode_stats"] = True  # the model checks every ended episode's statistics
        _, env = self._call(what, lambda: fastvec.make(env_id, num_envs, **kwargs), set())
        self.env = env
        mode = kwargs.get("autoreset_mode", "next_step")
        self.model = Model(env, self.native, mode, episode_length)
        self.ops_since_make = 0
        if kwargs.get("max_episode_steps") is not None:
            assert env.max_episode_steps == kwargs["max_episode_steps"]
        if not self.native:
            # The Python-env pool passes a step of an env never reset to the env, as gymnasium's vector envs do
            # (the gymnasium envs here raise ResetNeeded, and the others in the batch step): tests/pyenv/test_pyenv.py
            # covers it; the model starts these pools reset.
            self._full_reset(None, "reset() after make")

    def _close_pool(self, how: str) -> None:
        env = self.env
        pids = [] if self.native else env.worker_pids
        if how == "gc":  # dropping the last reference closes the pool
            self.env = None
            alive = weakref.ref(env)
            del env
            if alive() is not None:
                gc.collect()
            assert alive() is None, "the pool outlived its last reference"
        else:
            self._call("close()", env.close, set())
            if how == "twice":
                self._call("close() again", env.close, set())
            assert env.closed
        self.model.closed = True
        if pids:
            deadline = time.monotonic() + 2.0
            while any(os.path.exists(f"/proc/{p}") for p in pids) and time.monotonic() < deadline:
                time.sleep(0.01)
            alive = [p for p in pids if os.path.exists(f"/proc/{p}")]
            assert not alive, f"worker processes {alive} outlived close ({how})"

    @initialize(data=st.data())
    def make_pool(self, data):
        self._make(data)
        if data.draw(st.booleans(), label="start with reset()?"):
            self._full_reset(None, "reset()")

    @precondition(lambda self: self.model.closed or (not self.fixed_pool and self.ops_since_make >= 15))
    @rule(data=st.data())
    def make_another_pool(self, data):
        if not self.model.closed:
            self._close_pool("close")
        self._make(data)

    @rule(data=st.data())
    def make_with_a_bad_argument(self, data):
        args, kwargs, errors = self._draw_bad_make(data)
        what = f"fastvec.make(*{_short(args)}, **{_short(kwargs)})"
        self._call(what, lambda: fastvec.make(*args, **kwargs), errors)
        self._follow_up()

    @precondition(lambda self: self.ops_since_make >= 10 or self.model.closed)
    @rule(how=st.sampled_from(["close", "twice", "gc"]), data=st.data())
    def close(self, how, data):
        if self.env is None:
            return
        if self.model.closed:
            self._call("close() of a closed pool", self.env.close, set())
            return
        self._close_pool(how)
        if how == "gc" or data.draw(st.booleans(), label="make another now?"):
            self._make(data)

    def teardown(self) -> None:
        if self.env is not None and not self.model.closed:
            self._close_pool("close")
        self.env = None
        if self.narrowed is not None:
            _set_every_threads_affinity(ALLOWED_CPUS)
        if self.native:  # a joined thread may linger in /proc for a moment after pthread_join returns
            deadline = time.monotonic() + 2.0
            while len(os.listdir("/proc/self/task")) > self.threads_before and time.monotonic() < deadline:
                time.sleep(0.001)
            after = len(os.listdir("/proc/self/task"))
            assert after <= self.threads_before, f"threads: {self.threads_before} before, {after} after closing"

    @invariant()
    def closed_flag_matches(self):
        if self.env is not None:
            assert self.env.closed == self.model.closed

    # -- the user narrows the threads' affinity (taskset -a -p) ----------------------------------

    narrowed: set[int] | None = None  # the CPUs every thread was narrowed to, while narrowed

    # With nothing in flight: sched_setaffinity has no compare-and-set, and a narrowing that lands between a
    # worker's read and write of its own affinity (microseconds, while it moves off a CPU another thread of its
    # pool steps on: cpu_spread.hpp) is lost; between calls no worker moves. (Checked in the rule, after its draw,
    # not as a precondition: which envs an async recv returns depends on timing, so the number in flight can
    # differ when Hypothesis replays the same choices, and a precondition that differs is "Inconsistent data
    # generation" (FlakyStrategyDefinition; seen once with a CPU-bound loop on one core).)
    @precondition(lambda self: self.native and len(ALLOWED_CPUS) > 1)
    @rule(data=st.data())
    def narrow_every_threads_affinity(self, data):
        """Every thread of the process narrowed to some CPUs, or widened back (a pool's threads undid a
        narrowing made after its construction: Reliability III)."""
        cpus = data.draw(st.sets(st.sampled_from(sorted(ALLOWED_CPUS)), min_size=1), label="narrow every thread to")
        if not (self.model.closed or self.model.in_flight == 0):
            return
        _set_every_threads_affinity(cpus)
        self.narrowed = None if cpus == ALLOWED_CPUS else cpus

    @invariant()
    def threads_stay_within_the_narrowed_affinity(self):
        if self.narrowed is None:
            return
        for t in os.listdir("/proc/self/task"):
            try:
                cpus = os.sched_getaffinity(int(t))
            except ProcessLookupError:  # ended meanwhile
                continue
            assert cpus <= self.narrowed, f"thread {t} runs on {sorted(cpus)}, narrowed to {sorted(self.narrowed)}"

    # -- the valid follow-up after a refusal -------------------------------------------------

    def _follow_up(self) -> None:
        """A call the model knows is valid must succeed: refusals leave the pool usable."""
        m = self.model
        if self.env is None or m.closed:
            return
        if m.in_flight >= m.batch:
            self._recv("follow-up recv()")
        elif not m.sync and m.in_flight > 0:
            self._recv_rest("follow-up recv_rest()")
        elif m.sync and m.sendable().all():
            self._step(simple_actions(self.env.single_action_space, m.n), None, set(), "follow-up step(actions)")
        else:
            self._full_reset(None, "follow-up reset()")

    # -- reset -------------------------------------------------------------------------------

    def _full_reset(self, seed: Any, what: str, errors: set = frozenset()) -> None:
        m = self.model
        ok, result = self._call(what, lambda: self.env.reset(seed=seed), self._closed_errors(set(errors)))
        if not ok:
            return
        obs, info = result
        ids = self._check_rows(what, obs, info, m.n)
        assert ids.tolist() == list(range(m.n)), f"{what}: rows not in env order: {ids}"
        m.drain()
        m.state[:] = IN_FLIGHT
        self._take_rows(what, ids, obs, info)

    @rule(data=st.data())
    def reset(self, data):
        self.ops_since_make += 1
        m = self.model
        if self.env is None:
            return
        kind = data.draw(st.sampled_from(["full", "bad seed", "mask", "mask", "env_id", "bad options"]), label="reset")
        if kind == "full":
            self._full_reset(data.draw(seeds_valid(m.n), label="seed"), "reset(seed)")
        elif kind == "bad seed":
            seed, errors = data.draw(seeds_invalid(m.n), label="bad seed")
            self._full_reset(seed, f"reset(seed={_short(seed)})", errors)
            self._follow_up()
        elif kind == "bad options":
            self._bad_partial_reset(data)
        else:
            self._partial_reset(data, kind)

    def _bad_partial_reset(self, data: st.DataObject) -> None:
        m = self.model
        # (a Python env's reset takes any other key: only native envs refuse one)
        bad = data.draw(
            st.sampled_from(
                (["unknown key"] if self.native else [])
                + [
                    "both keys",
                    "mask list",
                    "mask int",
                    "mask shape",
                    "mask empty",
                    "id range",
                    "id twice",
                    "id float",
                    "id 2-D",
                    "not a dict",
                    "a str",
                ]
            ),
            label="bad options",
        )
        full = np.ones(m.n, bool)
        options, errors = {
            "unknown key": ({"colour": 1}, {ValueError}),
            "both keys": ({"reset_mask": full, "env_id": [0]}, {ValueError}),
            "mask list": ({"reset_mask": full.tolist()}, {TypeError}),
            "mask int": ({"reset_mask": full.astype(np.int8)}, {TypeError}),
            "mask shape": ({"reset_mask": np.ones(m.n + 1, bool)}, {ValueError}),
            "mask empty": ({"reset_mask": np.zeros(m.n, bool)}, {ValueError}),
            "id range": ({"env_id": [m.n]}, {ValueError}),
            "id twice": ({"env_id": [0, 0]}, {ValueError}),
            "id float": ({"env_id": [0.0]}, {TypeError}),
            "id 2-D": ({"env_id": [[0]]}, {TypeError}),
            "not a dict": ([("colour", 1, 2)], {TypeError}),
            "a str": ("abc", {TypeError}),
        }[bad]
        if not m.sync and bad not in ("not a dict", "a str"):
            errors = errors | {ValueError}  # partial resets need batch_size == num_envs, checked first
        what = f"reset(options={_short(options)})"
        self._call(what, lambda: self.env.reset(options=options), self._closed_errors(errors))
        self._follow_up()

    def _mask_reset(self, mask: np.ndarray) -> None:
        m = self.model
        what = f"reset(options={{'reset_mask': {mask.tolist()}}})"
        _, (obs, info) = self._call(what, lambda: self.env.reset(options={"reset_mask": mask}), set())
        got = self._check_rows(what, obs, info, m.n)
        assert got.tolist() == list(range(m.n)), f"{what}: rows not in env order: {got}"
        m.state[mask] = IN_FLIGHT
        self._take_rows(what, got, obs, info, observed=~mask)

    def _reset_no_env(self, form: str, kind: str) -> None:
        """A partial reset of no env. An empty reset_mask is a ValueError; an empty env_id list is not
        specified: an empty result, ValueError or RuntimeError (envs busy) will do, as long as the pool stays
        usable."""
        m = self.model
        if kind == "mask":
            options = {"reset_mask": np.zeros(m.n, bool)}
            self._call(
                f"reset(options={_short(options)})",
                lambda: self.env.reset(options=options),
                self._closed_errors({ValueError}),
            )
        else:
            options = {"env_id": [] if form in ("list", "scalar") else np.zeros(0, dtype=form)}
            what = f"reset(options={_short(options)})"
            with WATCHDOG.call(what):
                try:
                    obs, info = self.env.reset(options=options)
                except (ValueError, RuntimeError):
                    pass
                else:
                    assert not m.closed, f"{what} succeeded on a closed pool"
                    self._check_rows(what, obs, info, 0)
        self._follow_up()

    def _partial_reset(self, data: st.DataObject, kind: str) -> None:
        m = self.model
        listed = np.flatnonzero(bits_mask(data.draw(env_bits(m.n), label="envs"), m.n))
        listed = np.random.default_rng(data.draw(st.integers(0, 9), label="order")).permutation(listed)
        form = data.draw(st.sampled_from(["list", "int32", "uint8", "scalar"]), label="ids form")
        seed = data.draw(seed_lists(m.n), label="seeds")
        bad_seed = data.draw(st.sampled_from([None] * 5 + ["int", "int range", "count", "float"]), label="bad seed")
        mask = ids = None
        if len(listed) == 0:
            self._reset_no_env(form, kind)
            return
        if kind == "mask":
            mask = np.zeros(m.n, bool)
            mask[listed] = True
            options = {"reset_mask": mask}
        else:
            if form == "scalar":
                listed = listed[:1]
            ids = listed
            options = {
                "env_id": int(ids[0]) if form == "scalar" else (ids.tolist() if form == "list" else ids.astype(form))
            }
        # Seeds as gymnasium takes them: with reset_mask one per env of the pool, with env_id one per listed env;
        # or an int (env i gets seed + i, which must stay below 2**64).
        count = m.n if mask is not None else len(listed)
        if seed is not None:
            seed = seed[:count]
        errors = set()
        if bad_seed is not None:
            seed, errors = {
                "int": (7, set()),
                "int range": (2**64 - 1 if m.n > 1 else 2**64, {ValueError}),
                "count": ([0] * (count + 1), {ValueError}),
                "float": ([1.5] * count, {TypeError}),
            }[bad_seed]
            errors = set(errors)
        others = np.ones(m.n, bool)
        others[listed] = False
        if not m.sync:
            errors.add(ValueError)
        elif m.in_flight:
            errors.add(RuntimeError)
        elif (m.state[others] == FRESH).any() and mask is not None:
            errors.add(RuntimeError)  # a mask reset returns the others' rows: each must have been reset once
        what = f"reset(seed={_short(seed)}, options={_short(options)})"
        ok, result = self._call(what, lambda: self.env.reset(seed=seed, options=options), self._closed_errors(errors))
        if not ok:
            self._follow_up()
            return
        obs, info = result
        if mask is not None:
            got = self._check_rows(what, obs, info, m.n)
            assert got.tolist() == list(range(m.n)), f"{what}: rows not in env order: {got}"
            m.state[mask] = IN_FLIGHT
            self._take_rows(what, got, obs, info, observed=~mask)
        else:
            got = self._check_rows(what, obs, info, len(ids), sync_ids=ids)
            assert got.tolist() == ids.tolist(), f"{what}: rows {got}, expected {ids}"
            m.state[ids] = IN_FLIGHT
            self._take_rows(what, got, obs, info)

    # -- step / send / recv ------------------------------------------------------------------

    def _step(self, actions: Any, env_id: Any, errors: set, what: str) -> None:
        """step(actions) or step(actions, env_id); ``errors`` are those of the arguments and states."""
        m = self.model
        ids = np.arange(m.n) if env_id is None else np.asarray(env_id).reshape(-1)
        if errors or m.closed:
            self._call(what, lambda: self.env.step(actions, env_id), self._closed_errors(errors))
            return
        m.send(ids, reset=False, actions=actions)
        if m.in_flight < m.batch:  # the send happens, then recv refuses to wait forever
            self._call(what, lambda: self.env.step(actions, env_id), {RuntimeError})
            return
        self._receive(what, lambda: self.env.step(actions, env_id), m.batch)

    def _receive(self, what: str, fn, rows: int, errors: set = frozenset(), sync_ids=None) -> None:
        """A receiving call (step, recv, recv_rest, recv_ready) of ``rows`` rows, refused with ``errors`` (if
        any). When an env in flight raises, the call may raise its exception instead (it must, when it takes
        every env in flight): the model then follows the pool and recovers as the README says."""
        m = self.model
        raising = m.raising & (m.state == IN_FLIGHT)
        env_error = not errors and not m.closed and raising.any()
        ok, result = self._call(what, fn, self._closed_errors(set(errors)), env_error)
        if not ok:
            if env_error and type(result) is self.env_exception:
                self._env_raised(what, result, rows == m.in_flight)
            return
        obs, rew, term, trunc, info = result
        got = self._check_rows(what, obs, info, rows, rew, term, trunc, sync_ids=sync_ids)
        if m.sync and sync_ids is None:
            assert got.tolist() == list(range(m.n)), f"{what}: rows not in env order: {got}"
        if m.kept is not None:
            missing = np.flatnonzero(m.kept & ~np.isin(np.arange(m.n), got))
            assert not len(missing), (
                f"{what}: envs {missing.tolist()}, kept in flight by the last env's exception, are not in this batch"
                f" {got.tolist()}"
            )
            m.kept = None
        self._take_rows(what, got, obs, info, rew, term, trunc)

    def _env_raised(self, what: str, exc: BaseException, whole: bool) -> None:
        """A receiving call raised env ``exc.env_id``'s exception (``whole``: its batch was every env in flight)."""
        m = self.model
        type(self).env_errors += 1
        e = exc.env_id
        assert isinstance(e, int) and 0 <= e < m.n, f"{what}: {type(exc).__name__}.env_id is {e!r}"
        assert m.state[e] == IN_FLIGHT and m.raising[e], (
            f"{what} raised {type(exc).__name__} for env {e} (in flight: {m.state[e] == IN_FLIGHT}), whose step "
            f"does not raise: {exc}"
        )
        text = " ".join([str(exc), *getattr(exc, "__notes__", ())])  # (a Python env's: in a note)
        assert f"env {e}" in text, f"{what}: the exception does not name env {e}: {text}"
        in_flight = np.flatnonzero(m.state == IN_FLIGHT)
        if m.sync:  # the batch is every env in flight: its rows are dropped, every env that raised is broken
            for f in in_flight.tolist():
                if m.raising[f]:
                    m.state[f], m.raising[f], m.broken[f], m.resetting[f] = IDLE, False, True, False
                else:
                    m.replay_dropped_step(f)
            m.kept = None
        else:  # only env e leaves flight; the batch's other rows wait for the next receiving call
            m.state[e], m.raising[e], m.broken[e] = IDLE, False, True
            kept = (m.state == IN_FLIGHT) if whole else None
            m.kept = None if m.kept is None else m.kept & (m.state == IN_FLIGHT)  # (envs kept before: still first)
            if kept is not None:
                m.kept = kept
        # The env that raised refuses a step until it is reset.
        ok, refusal = self._call(
            f"send to env {e}, which raised", lambda: self.env.send(np.zeros(1, np.int64), [e]), {RuntimeError}
        )
        assert "raised an exception earlier" in str(refusal), f"send to env {e} after its exception: {refusal}"
        self._recover(what)

    def _recover(self, what: str) -> None:
        """The README's recipe after an env's exception: reset the envs that raised, every env stays in play."""
        m = self.model
        broken = np.flatnonzero(m.broken)
        self.recoveries += 1
        if not m.sync:
            e = int(broken[0])
            self._call(f"async_reset(env_id=[{e}]) after {what}", lambda: self.env.async_reset(env_id=[e]), set())
            m.send(np.array([e]), reset=True)
            # Then, mostly, the recipe's next receiving call: it returns the kept envs (their rows must not be lost).
            how = self.recoveries % 4
            if how == 3:
                return
            if m.in_flight >= m.batch:
                self._recv_ready(f"recv_ready({m.batch})") if how == 2 else self._recv("recv()")
            elif m.in_flight:
                self._recv_ready(f"recv_ready({m.in_flight})") if how == 2 else self._recv_rest("recv_rest()")
            return
        assert not m.in_flight, f"{what}: envs {np.flatnonzero(m.state == IN_FLIGHT)} in flight after a sync batch"
        others = ~m.broken
        if self.recoveries % 2:
            if (m.state[others] == FRESH).any():  # a mask reset needs the others reset once (env_id's does not)
                self._full_reset(None, f"reset() after {what}")
            else:
                self._mask_reset(m.broken.copy())  # the others' rows: their observations after the dropped step
        else:
            options = {"env_id": broken.tolist()}
            ok, (obs, info) = self._call(
                f"reset(options={options}) after {what}", lambda: self.env.reset(options=options), set()
            )
            got = self._check_rows("reset(env_id)", obs, info, len(broken), sync_ids=broken)
            m.state[broken] = IN_FLIGHT
            self._take_rows("reset(env_id)", got, obs, info)

    def _id_errors(self, ids: Any) -> set:
        """The errors env ids deserve in send (a 1-D int array, or a mistake)."""
        m = self.model
        arr = np.asarray(ids)
        if arr.ndim == 0 and arr.dtype.kind in "iu":
            arr = arr.reshape(1)  # one env
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
            return {TypeError}
        arr = arr.astype(np.int64)
        if ((arr < 0) | (arr >= m.n)).any():
            return {ValueError}
        errors = set()
        if len(np.unique(arr)) != len(arr):
            errors.add(ValueError)
        if not m.sendable()[arr].all():
            errors |= self._state_errors(arr)
        return errors

    def _state_errors(self, ids: np.ndarray) -> set:
        """The errors of a step of ``ids``, some of which are not awaiting an action: a RuntimeError, and the native
        pool's ResetNeeded (also a RuntimeError) when one was never reset (Python machines reset at make)."""
        return {RuntimeError, ResetNeeded} if (self.model.state[ids] == FRESH).any() else {RuntimeError}

    def _draw_ids(self, data: st.DataObject, valid: bool) -> tuple[Any, int]:
        """Env ids for send (and their row count): some of the envs awaiting an action, or a mistake."""
        m = self.model
        pick = bits_mask(data.draw(env_bits(m.n), label="envs"), m.n)
        form = data.draw(st.sampled_from(["int32", "int64", "uint16", "list"]), label="ids form")
        kind = data.draw(
            st.sampled_from(["busy", "busy", "range", "negative", "twice", "float", "2-D", "wraps", "uint64"]),
            label="bad env_id",
        )
        sendable = m.sendable()
        if valid:
            ids = np.flatnonzero(pick & sendable)
            if form == "list" and len(ids):
                return ids.tolist(), len(ids)
            return ids.astype(form.replace("list", "int64")), len(ids)
        busy = np.flatnonzero(pick & ~sendable)
        if kind == "busy" and not len(busy):
            busy = np.flatnonzero(~sendable)[:1]
        if kind == "busy" and len(busy):
            ids = np.concatenate([busy, np.flatnonzero(pick & sendable)])
            return ids.tolist(), len(ids)
        first = int(np.argmax(sendable))
        return {
            "busy": ([m.n], 1),
            "range": ([m.n], 1),
            "negative": ([-1], 1),
            "twice": ([first, first], 2),
            "float": (np.array([float(first)]), 1),
            "2-D": (np.array([[first]]), 1),
            "wraps": ([2**32 + first], 1),  # not env `first` modulo 2**32
            "uint64": (np.array([2**64 - 1], np.uint64), 1),
        }[kind]

    @rule(data=st.data())
    def step(self, data):
        self.ops_since_make += 1
        m = self.model
        if self.env is None:
            return
        space = self.env.single_action_space
        kind = data.draw(
            st.sampled_from(["all", "all", "all", "bad actions", "with env_id", "bad env_id"]), label="step"
        )
        errors: set = set()
        env_id = None
        if kind in ("all", "bad actions"):
            actions, errors = draw_actions(
                data, space, m.n, m.n, self.native, kind == "all", self.exact_actions, m.throws
            )
            errors = set(errors)
            if not m.sync:
                errors.add(ValueError)
            elif not m.sendable().all():
                errors |= self._state_errors(np.arange(m.n))
        else:
            if m.sync:
                env_id = np.random.default_rng(data.draw(st.integers(0, 9), label="order")).permutation(m.n)
                rows = m.n
                if kind == "bad env_id":
                    env_id, rows = env_id[1:], m.n - 1
                    errors.add(ValueError)  # a sync step steps every env
                else:
                    errors |= self._id_errors(env_id)
            else:
                env_id, rows = self._draw_ids(data, kind == "with env_id")
                errors |= self._id_errors(env_id)
            actions, action_errors = draw_actions(
                data, space, m.n, rows, self.native, True, self.exact_actions, m.throws
            )
            errors |= action_errors
        what = f"step({_short(actions)}, env_id={_short(env_id)})"
        self._step(actions, env_id, errors, what)
        if errors:
            self._follow_up()

    @rule(data=st.data())
    def send(self, data):
        self.ops_since_make += 1
        m = self.model
        if self.env is None:
            return
        valid_ids = data.draw(st.integers(0, 3), label="ids valid?") > 0
        env_id, rows = self._draw_ids(data, valid_ids)
        all_envs = valid_ids and data.draw(st.integers(0, 5), label="env_id=None?") == 0
        if all_envs:
            env_id, rows = None, m.n
        valid_actions = data.draw(st.integers(0, 3), label="actions valid?") > 0
        actions, errors = draw_actions(
            data, self.env.single_action_space, m.n, rows, self.native, valid_actions, self.exact_actions, m.throws
        )
        errors = set(errors) | self._id_errors(np.arange(m.n) if all_envs else env_id)
        what = f"send({_short(actions)}, {_short(env_id)})"
        ok, _ = self._call(what, lambda: self.env.send(actions, env_id), self._closed_errors(errors))
        if ok:
            ids = np.arange(m.n) if all_envs else np.asarray(env_id, dtype=np.int64).reshape(-1)
            m.send(ids, reset=False, actions=actions)
        else:
            self._follow_up()

    def _recv(self, what: str) -> None:
        m = self.model
        errors = {RuntimeError} if m.in_flight < m.batch else set()
        self._receive(what, self.env.recv, m.batch, errors)

    def _recv_rest(self, what: str) -> None:
        m = self.model
        rows = m.in_flight
        # (a sync pool takes the rows of a partial send too: EnvPool's step of some envs)
        errors = {RuntimeError} if rows == 0 or rows >= m.batch else set()
        # (a sync pool's rows: the envs sent, in env order)
        sync_ids = np.flatnonzero(m.state == IN_FLIGHT) if m.sync else None
        # (its rows: every env in flight, as _check_rows and _take_rows find: as many, distinct, in flight)
        self._receive(what, self.env.recv_rest, rows, errors, sync_ids=sync_ids)

    def _recv_ready(self, what: str) -> None:
        """recv_ready(rows) of an async pool: a whole batch (rows = batch_size), or every env in flight when they
        are fewer (Tianshou's use); with no timeout, so the rows are known."""
        m = self.model
        rows = m.batch if m.in_flight >= m.batch else m.in_flight
        errors = {RuntimeError} if rows == 0 else set()
        self._receive(what, lambda: self.env.recv_ready(rows if rows else 1, None), rows, errors)

    @rule()
    def recv(self):
        self.ops_since_make += 1
        if self.env is None:
            return
        refused = self.model.in_flight < self.model.batch
        self._recv("recv()")
        if refused:
            self._follow_up()

    @rule()
    def recv_rest(self):
        self.ops_since_make += 1
        if self.env is None:
            return
        self._recv_rest("recv_rest()")
        self._follow_up()

    @precondition(lambda self: self.model is not None and not self.model.sync)
    @rule()
    def recv_ready(self):
        self.ops_since_make += 1
        if self.env is None:
            return
        self._recv_ready("recv_ready()")
        self._follow_up()

    @rule(data=st.data(), count=st.integers(1, 25))
    def valid_calls(self, data, count):
        """A run of valid calls as a training loop makes them, so that episodes end and truncate."""
        m = self.model
        if self.env is None or m.closed:
            return
        space = self.env.single_action_space
        for _ in range(count):
            self.ops_since_make += 1
            actions, _ = draw_actions(data, space, m.n, m.n, self.native, True, self.exact_actions, m.throws)
            send_all = data.draw(st.booleans(), label="send every idle env?")
            first = data.draw(st.integers(0, m.n - 1), label="else from")
            rest = data.draw(st.integers(0, 3), label="recv_rest if it may?") == 0
            ready = data.draw(st.integers(0, 3), label="recv_ready for recv?") == 0
            sendable = np.flatnonzero(m.sendable())
            if m.in_flight >= m.batch:
                if ready and not m.sync:
                    self._recv_ready(f"recv_ready({m.batch})")
                else:
                    self._recv("recv()")
            elif not m.sync and 0 < m.in_flight < m.batch and rest:
                if ready:
                    self._recv_ready(f"recv_ready({m.in_flight})")
                else:
                    self._recv_rest("recv_rest()")
            elif m.sync and len(sendable) == m.n:
                self._step(actions, None, set(), f"step({_short(actions)})")
            elif not m.sync and len(sendable) and m.in_flight + len(sendable) >= m.batch:
                ids = sendable if send_all else sendable[first % len(sendable) :]
                some = actions[ids] if isinstance(actions, np.ndarray) else [actions[e] for e in ids]
                self._call(f"send({_short(some)}, {ids.tolist()})", lambda a=some, i=ids: self.env.send(a, i), set())
                m.send(ids, reset=False, actions=some)
            elif not m.sync and m.in_flight:
                self._recv_rest("recv_rest()")
            elif m.sync and m.mode == "disabled" and (m.state == IDLE).all() and m.ended.any():
                self._mask_reset(m.ended.copy())  # gymnasium's loop for autoreset_mode="disabled"
            elif m.sync:
                self._full_reset(None, "reset()")
            else:
                self._call("async_reset()", self.env.async_reset, set())
                m.drain()
                m.send(np.arange(m.n), reset=True)

    # -- threads (native pools are documented to be safe to call from several threads) -----------

    def _background(self, work, outcomes: list) -> threading.Thread:
        """Runs ``work`` until it raises; records what it raised (results are checked on the way)."""
        space = self.env.single_observation_space

        def loop():
            try:
                for _ in range(self.background_calls):
                    obs, rew, term, trunc, info = work()
                    check_obs(space, obs, len(rew), "a step on another thread")
                    assert np.isfinite(rew).all() and rew.dtype == self.reward_dtype
            except BaseException as exc:
                outcomes.append(exc)

        thread = threading.Thread(target=loop, name="fuzz-stepper", daemon=True)
        thread.start()
        return thread

    def _join(self, threads: list[threading.Thread], outcomes: list, what: str) -> None:
        for t in threads:
            t.join(CALL_TIMEOUT)
        assert not any(t.is_alive() for t in threads), f"{what}: a thread is still in a pool call"
        for exc in outcomes:
            if type(exc) not in (RuntimeError, ClosedError):  # ClosedError: a RuntimeError too
                raise AssertionError(f"{what}: another thread got {type(exc).__name__}: {exc}") from exc

    @precondition(lambda self: self.native)
    @rule(delay=st.sampled_from([0.0, 1e-4, 1e-3, 5e-3]))
    def close_while_another_thread_steps(self, delay):
        """close() while another thread steps (sync) or waits in recv (async): that thread gets its results
        or RuntimeError, never a crash or a hang."""
        self.ops_since_make += 1
        m, env = self.model, self.env
        if env is None or m.closed:
            return
        if m.sync:
            self._full_reset(None, "reset()")
            actions = simple_actions(env.single_action_space, m.n)
            work = lambda: env.step(actions)  # noqa: E731
        else:
            self._call("async_reset()", env.async_reset, set())
            work = env.recv
        outcomes: list = []
        with WATCHDOG.call(f"close() {delay} s after another thread started stepping"):
            thread = self._background(work, outcomes)
            time.sleep(delay)
            env.close()
            self.model.closed = True
            self._join([thread], outcomes, "close() while another thread steps")

    @precondition(lambda self: self.native)
    @rule()
    def step_from_two_threads(self):
        """Two threads step one sync pool (or recv/send an async one) at once: each call succeeds or is refused
        with RuntimeError; afterwards reset() brings the pool (and the model) back to a known state."""
        self.ops_since_make += 1
        m, env = self.model, self.env
        if env is None or m.closed:
            return
        self._full_reset(None, "reset()")
        space = env.single_action_space
        if m.sync:
            actions = simple_actions(space, m.n)
            work = lambda: env.step(actions)  # noqa: E731
        else:

            def work():
                result = env.recv()
                ids = result[4]["env_id"]
                env.send(simple_actions(space, len(ids)), ids)
                return result

            env.send(simple_actions(space, m.n), None)
        outcomes: list = []
        with WATCHDOG.call("two threads stepping"):
            threads = [self._background(work, outcomes) for _ in range(2)]
            self._join(threads, outcomes, "two threads stepping")
        m.drain()
        m.state[:] = IDLE  # every env has been reset once; the reset below resynchronises the model
        self._full_reset(None, "reset() after two threads stepped")

    @rule(data=st.data())
    def async_reset(self, data):
        self.ops_since_make += 1
        m = self.model
        if self.env is None:
            return
        kinds = ["all", "all", "bad seed", "some", "some", "some bad"]
        kind = data.draw(st.sampled_from(kinds), label="async_reset")
        if kind in ("all", "bad seed"):
            seed, errors = (
                (data.draw(seeds_valid(m.n), label="seed"), set())
                if kind == "all"
                else data.draw(seeds_invalid(m.n), label="bad seed")
            )
            what = f"async_reset(seed={_short(seed)})"
            ok, _ = self._call(what, lambda: self.env.async_reset(seed=seed), self._closed_errors(set(errors)))
            if ok:
                m.drain()
                m.send(np.arange(m.n), reset=True)
            else:
                self._follow_up()
            return
        # Reset some envs (idle, or never reset), each with a seed or not.
        pick = bits_mask(data.draw(env_bits(m.n), label="envs"), m.n)
        seeds = data.draw(seed_lists(m.n), label="seeds")
        bad = data.draw(st.sampled_from(["busy", "range", "twice", "float", "seed range", "seed count"]), label="bad")
        resettable = (m.state == IDLE) | (m.state == FRESH)
        if kind == "some":
            ids = np.flatnonzero(pick & resettable)
            env_id: Any = ids
            seed = None if seeds is None else seeds[: len(ids)]
            errors: set = set()
        else:
            first = int(np.argmax(resettable))
            busy = np.flatnonzero(~resettable).tolist()
            env_id, seed, errors = {
                "busy": (busy[:1] or [m.n], None, {RuntimeError} if busy else {ValueError}),
                "range": ([m.n], None, {ValueError}),
                "twice": ([first, first], None, {ValueError}),
                "float": ([float(first)], None, {TypeError}),
                "seed range": ([first], 2**64, {ValueError}),
                "seed count": ([first], [1, 2], {ValueError}),
            }[bad]
            if not resettable[first]:  # every env is busy: that may be found first
                errors = errors | {RuntimeError}
        what = f"async_reset(seed={_short(seed)}, env_id={_short(env_id)})"
        ok, _ = self._call(what, lambda: self.env.async_reset(seed=seed, env_id=env_id), self._closed_errors(errors))
        if ok:
            m.send(np.asarray(env_id, np.int64).reshape(-1), reset=True)
        else:
            self._follow_up()


def _tree_equal(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return all(_tree_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return all(_tree_equal(a[k], b[k]) for k in a)
    return np.array_equal(a, b)


def _copy_tree(a: Any) -> Any:
    if isinstance(a, tuple):
        return tuple(_copy_tree(x) for x in a)
    if isinstance(a, dict):
        return {k: _copy_tree(v) for k, v in a.items()}
    return np.array(a, copy=True)


# -- the three pools ---------------------------------------------------------------------------


def draw_batch_size(data: st.DataObject, n: int) -> int | None:
    """Async (batch_size < num_envs) half the time, when there are two envs or more."""
    if n > 1 and data.draw(st.booleans(), label="async?"):
        return data.draw(st.integers(1, n - 1), label="batch_size")
    return data.draw(st.sampled_from([None, n]), label="batch_size")


def _common_bad_make(data: st.DataObject, env_id: str, n: int, extra: dict) -> tuple[tuple, dict, set]:
    """One mistake in an otherwise valid make call (shared by every pool kind)."""
    base = dict(extra)
    bad = data.draw(
        st.sampled_from(
            [
                ("num_envs", 0, ValueError),
                ("num_envs", -3, ValueError),
                ("num_envs", 2.0, TypeError),
                ("num_envs", "4", TypeError),
                ("num_envs", True, TypeError),
                ("num_envs", 2**40, ValueError),
                ("batch_size", 0, ValueError),
                ("batch_size", n + 1, ValueError),
                ("batch_size", 1.0, TypeError),
                ("num_threads", 0, ValueError),
                ("num_threads", -1, ValueError),
                ("num_threads", 2.5, TypeError),
                ("autoreset_mode", "sometimes", ValueError),
                ("autoreset_mode", None, ValueError),
                ("seed", -1, ValueError),
                ("seed", 2**64, ValueError),
                ("seed", 1.5, TypeError),
                ("seed", "0", TypeError),
                ("max_episode_steps", 0, ValueError),
                ("max_episode_steps", -5, ValueError),
                ("max_episode_steps", 2**40, ValueError),
                ("max_episode_steps", 2.5, TypeError),
                ("backend", "gpu", ValueError),
                ("backend", None, ValueError),
                ("env_id", 3, TypeError),
                ("env_id", None, TypeError),
                ("env_id", "", ValueError),
                ("env_id", env_id.lower(), ValueError),
                ("env_id", "NoSuchEnv-v0", ValueError),
            ]
        ),
        label="bad make",
    )
    name, value, error = bad
    num_envs = value if name == "num_envs" else n
    env = value if name == "env_id" else env_id
    if name not in ("num_envs", "env_id"):
        base[name] = value
    return (env, num_envs), base, {error}


class NativeClassicMachine(PoolMachine):
    native = True

    def _draw_config(self, data):
        env_id = data.draw(st.sampled_from((*CLASSIC_IDS, "_Debug-v0", "_Debug-v0")), label="env")
        n = data.draw(st.integers(1, 12), label="num_envs")
        kwargs: dict[str, Any] = {"autoreset_mode": data.draw(st.sampled_from(MODES), label="mode")}
        batch = draw_batch_size(data, n)
        if batch is not None:
            kwargs["batch_size"] = batch
        divisors = [d for d in range(1, n + 1) if n % d == 0 and (batch or n) % d == 0]
        for name, strategy in (
            ("num_threads", st.integers(1, 3)),
            ("block_size", st.sampled_from(divisors)),
            ("max_episode_steps", st.integers(1, 30)),
            ("seed", st.integers(0, 2**64 - 2**16)),
            ("backend", st.sampled_from(["auto", "native"])),
        ):
            value = data.draw(st.one_of(st.none(), strategy), label=name)
            if value is not None:
                kwargs[name] = value
        for name, strategy in CLASSIC_OPTIONS.get(env_id, {}).items():
            if data.draw(st.booleans(), label=f"set {name}"):
                kwargs[name] = data.draw(strategy, label=name)
        if env_id == "_Debug-v0":  # the test-only env that raises on THROW (src/envs/debug/debug_env.hpp)
            kwargs["episode_length"] = kwargs["_throws"] = data.draw(st.integers(1, 12), label="episode_length")
            kwargs["throw_on_action"] = THROW
        return env_id, n, kwargs

    def _draw_bad_make(self, data):
        env_id = data.draw(st.sampled_from(CLASSIC_IDS), label="env")
        n = data.draw(st.integers(1, 8), label="num_envs")
        if data.draw(st.integers(0, 3), label="native-only mistake?") == 0:
            name, value, error = data.draw(
                st.sampled_from(
                    [
                        ("num_threads", 5000, ValueError),
                        ("block_size", 0, ValueError),
                        ("block_size", n + 1, ValueError),
                        ("block_size", 1.0, TypeError),
                        ("gravity", 3.0, TypeError),
                        ("sutton_barto_reward", "yes", TypeError),
                        ("g", float("nan"), ValueError),
                        ("g", float("inf"), ValueError),
                        ("goal_velocity", float("-inf"), ValueError),
                    ]
                ),
                label="bad native make",
            )
            env_id = {
                "sutton_barto_reward": "CartPole-v1",
                "g": "Pendulum-v1",
                "goal_velocity": "MountainCarContinuous-v0",
            }.get(name, env_id)
            return (env_id, n), {name: value, "backend": "native"}, {error}
        return _common_bad_make(data, env_id, n, {"backend": data.draw(st.sampled_from(["auto", "native"]))})


class MujocoMachine(PoolMachine):
    """Native MuJoCo pools (float64 observations, actions and rewards; info with masks): Hopper, which terminates
    often, and InvertedPendulum, which terminates at once, with some of their options."""

    native = True
    exact_actions = True
    reward_dtype = np.float64
    background_calls = 100
    # What DmControlMachine changes: the ids; the options drawn beside num_threads, block_size and seed (each left
    # out, or drawn from its strategy); and _draw_dependent_options, for those that depend on the env or each other.
    env_ids: tuple[str, ...] = ("Hopper-v5", "InvertedPendulum-v5")
    options: tuple[tuple[str, st.SearchStrategy], ...] = (
        ("max_episode_steps", st.integers(1, 30)),
        ("frame_skip", st.integers(1, 6)),
        ("reset_noise_scale", st.floats(0.0, 0.5)),
    )

    def _draw_config(self, data):
        env_id = data.draw(st.sampled_from(self.env_ids), label="env")
        n = data.draw(st.integers(1, 6), label="num_envs")
        kwargs: dict[str, Any] = {"autoreset_mode": data.draw(st.sampled_from(MODES), label="mode")}
        batch = draw_batch_size(data, n)
        if batch is not None:
            kwargs["batch_size"] = batch
        divisors = [d for d in range(1, n + 1) if n % d == 0 and (batch or n) % d == 0]
        for name, strategy in (
            ("num_threads", st.integers(1, 3)),
            ("block_size", st.sampled_from(divisors)),
            ("seed", st.integers(0, 2**64 - 2**16)),
            *self.options,
        ):
            value = data.draw(st.one_of(st.none(), strategy), label=name)
            if value is not None:
                kwargs[name] = value
        kwargs.update(self._draw_dependent_options(data, env_id))
        return env_id, n, kwargs

    def _draw_dependent_options(self, data, env_id: str) -> dict[str, Any]:
        """Hopper's health options (InvertedPendulum has none)."""
        kwargs: dict[str, Any] = {}
        if env_id == "Hopper-v5":
            if data.draw(st.booleans(), label="set healthy_z_range"):
                kwargs["healthy_z_range"] = tuple(sorted(data.draw(st.tuples(st.floats(0, 2), st.floats(0, 2)))))
            if data.draw(st.booleans(), label="set terminate_when_unhealthy"):
                kwargs["terminate_when_unhealthy"] = data.draw(st.booleans())
        return kwargs

    def _draw_bad_make(self, data):
        n = data.draw(st.integers(1, 4), label="num_envs")
        if data.draw(st.booleans(), label="bad option?"):
            name, value, error = data.draw(
                st.sampled_from(
                    [
                        ("frame_skip", 0, ValueError),
                        ("frame_skip", 1.5, ValueError),
                        ("healthy_z_range", 0.5, TypeError),
                        ("healthy_z_range", (0.5,), TypeError),
                        ("healthy_z_range", (float("nan"), 1.0), ValueError),
                        ("healthy_z_range", ("a", 1.0), TypeError),
                        ("reset_noise_scale", float("inf"), ValueError),
                        ("xml_file", "no-such-model.xml", FileNotFoundError),
                        ("xml_file", "~nosuchuser/hopper.xml", FileNotFoundError),
                        ("xml_file", 3, TypeError),
                        ("healty_reward", 1.0, TypeError),
                    ]
                ),
                label="bad MuJoCo option",
            )
            return ("Hopper-v5", n), {name: value}, {error}
        return _common_bad_make(data, "Hopper-v5", n, {})

    # MuJoCo's callbacks are global: one set while the pool in play has steps in flight would reach those steps
    # (they raise, as they should, but at a time the model cannot know). Set only with nothing in flight (checked
    # after the draws, not as a precondition: see narrow_every_threads_affinity).
    @rule(data=st.data(), which=st.sampled_from(["control", "passive", "contactfilter"]))
    def make_with_a_python_callback_set(self, data, which):
        """A Python function set as one of MuJoCo's callbacks through mujoco's bindings (the next step segfaulted,
        and make blamed the model file: Reliability III): make refuses it by name, and the pool in play goes on
        once it is removed."""
        import mujoco

        env_id, n, kwargs = self._draw_config(data)
        if not (self.model.closed or self.model.in_flight == 0):
            return
        setter = getattr(mujoco, f"set_mjcb_{which}")
        setter(lambda m, d: None)
        try:
            ok, exc = self._call(
                f"fastvec.make({env_id!r}, {n}) with mjcb_{which} set",
                lambda: fastvec.make(env_id, n, **kwargs),
                {RuntimeError},
            )
        finally:
            setter(None)
        assert f"mjcb_{which}" in str(exc), exc
        self._follow_up()


class DmControlMachine(MujocoMachine):
    """Native dm_control pools (Dict observations of named float64 arrays, a scalar one among the walker's; or one
    Box with flat_observation): the walker, and the cartpole with its short time limits, with their options."""

    env_ids = ("WalkerWalk-v1", "CartpoleSwingup-v1")
    options = (("flat_observation", st.booleans()),)

    def _draw_dependent_options(self, data, env_id: str) -> dict[str, Any]:
        """The episode's limit in steps, or dm_control's in seconds (1 to 30 steps of 0.01 s or 0.025 s): not both,
        which are refused as the same limit given twice."""
        limit = data.draw(st.sampled_from([None, "max_episode_steps", "time_limit"]), label="limit")
        if limit == "max_episode_steps":
            return {limit: data.draw(st.integers(1, 30), label=limit)}
        if limit == "time_limit":
            return {limit: data.draw(st.floats(0.01, 0.3), label=limit)}
        return {}

    def _draw_bad_make(self, data):
        n = data.draw(st.integers(1, 4), label="num_envs")
        if data.draw(st.booleans(), label="bad option?"):
            name, value, error = data.draw(
                st.sampled_from(
                    [
                        ("time_limit", 0.0, ValueError),
                        ("time_limit", -1.0, ValueError),
                        ("time_limit", float("nan"), ValueError),
                        ("flat_observation", "yes", TypeError),
                        ("visualize_reward", True, ValueError),
                        ("xml_file", "no-such-model.xml", FileNotFoundError),
                        ("frame_skip", 2, TypeError),  # gymnasium MuJoCo's option, not dm_control's
                    ]
                ),
                label="bad dm_control option",
            )
            return ("WalkerWalk-v1", n), {name: value}, {error}
        return _common_bad_make(data, "WalkerWalk-v1", n, {})


class AtariMachine(PoolMachine):
    native = True
    fixed_pool = True
    background_calls = 20

    def _draw_config(self, data):
        n = data.draw(st.integers(1, 3), label="num_envs")
        kwargs: dict[str, Any] = {
            "autoreset_mode": data.draw(st.sampled_from(MODES), label="mode"),
            "max_episode_steps": data.draw(st.integers(1, 12), label="max_episode_steps"),
            "batch_size": draw_batch_size(data, n),
        }
        for name, strategy in (("num_threads", st.integers(1, 2)), ("seed", st.integers(0, 2**64 - 2**16))):
            value = data.draw(st.one_of(st.none(), strategy), label=name)
            if value is not None:
                kwargs[name] = value
        for name in data.draw(
            st.lists(st.sampled_from(sorted(ATARI_OPTIONS)), max_size=3, unique=True), label="options"
        ):
            kwargs[name] = data.draw(ATARI_OPTIONS[name], label=name)
        return "Pong-v5", n, kwargs

    def _draw_bad_make(self, data):
        if data.draw(st.booleans(), label="bad option?"):
            name, value = data.draw(
                st.sampled_from(
                    [
                        ("frame_skip", 0),
                        ("frame_skip", 65),
                        ("frame_skip", 1.5),
                        ("stack_num", 0),
                        ("img_height", 0),
                        ("img_height", 211),
                        ("img_width", 161),
                        ("noop_max", -1),
                        ("repeat_action_probability", 1.5),
                        ("repeat_action_probability", float("nan")),
                        ("repeat_action_probability", -0.1),
                    ]
                ),
                label="bad option",
            )
            return ("Pong-v5", 1), {name: value}, {ValueError}
        if data.draw(st.booleans(), label="bad option type?"):
            return ("Pong-v5", 1), {"frame_skip": "4"}, {TypeError}
        return _common_bad_make(data, "Pong-v5", 1, {})


class PythonEnvMachine(PoolMachine):
    native = False
    fixed_pool = True
    reward_dtype = np.float64  # as the env returned them (float(reward)), not rounded to float32
    env_exception = ThrowerError  # an env's exception comes back with its own type

    def _draw_config(self, data):
        thrower = ("Thrower", "python")  # the only one that raises: as often as the three others
        env_id, backend = data.draw(st.sampled_from((*PYTHON_ENVS, thrower, thrower, thrower)), label="env")
        n = data.draw(st.integers(1, 4), label="num_envs")
        kwargs: dict[str, Any] = {}
        if env_id == "Thrower":  # raising ThrowerError, a type no pool raises of its own; forked workers
            kwargs["_throws"] = data.draw(st.integers(1, 12), label="episode_length")
            env_id = functools.partial(Thrower, kwargs["_throws"], ThrowerError)
            kwargs["start_method"] = "fork"
        kwargs |= {
            "backend": backend,
            "batch_size": draw_batch_size(data, n),
            "autoreset_mode": data.draw(st.sampled_from(MODES), label="mode"),
        }
        for name, strategy in (
            ("num_threads", st.integers(1, min(n, 2))),
            ("max_episode_steps", st.integers(1, 30)),
            ("seed", st.integers(0, 2**64 - 2**16)),
        ):
            value = data.draw(st.one_of(st.none(), strategy), label=name)
            if value is not None:
                kwargs[name] = value
        return env_id, n, kwargs

    def _draw_bad_make(self, data):
        env_id, backend = data.draw(st.sampled_from(PYTHON_ENVS), label="env")
        n = data.draw(st.integers(1, 3), label="num_envs")
        if data.draw(st.integers(0, 3), label="python-only mistake?") == 0:
            name, value, error = data.draw(
                st.sampled_from(
                    [
                        ("num_threads", n + 1, ValueError),
                        ("block_size", 1, ValueError),
                        ("start_method", "teleport", ValueError),
                        ("num_workers", 0, ValueError),
                    ]
                ),
                label="bad python make",
            )
            return (env_id, n), {name: value, "backend": backend}, {error}
        return _common_bad_make(data, env_id, n, {"backend": backend})


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# A run with FASTVEC_FUZZ_EXAMPLES can take hours: only the watchdog (a call that hangs) bounds it.
_TIMEOUT = 0 if _EXAMPLES else 240


def _run(machine: type[PoolMachine], examples: int, steps: int) -> None:
    machine.sequences = machine.calls = machine.env_errors = 0
    start = time.perf_counter()
    try:
        run_state_machine_as_test(machine, settings=_settings(examples, steps))
    finally:
        print(
            f"{machine.__name__}: {machine.sequences} sequences, {machine.calls} calls, "
            f"{machine.env_errors} env exceptions, {time.perf_counter() - start:.1f} s"
        )


@pytest.mark.slow
@pytest.mark.timeout(_TIMEOUT)
@pytest.mark.parametrize("part", [1, 2])
def test_native_classic_pools(part):
    # 250 sequences in two tests of 125: each well under a minute on a busy machine (and on two test workers)
    _run(NativeClassicMachine, _EXAMPLES or 125, 40)


@pytest.mark.slow
@pytest.mark.timeout(_TIMEOUT)
@pytest.mark.skipif(not fastvec._core.has_atari, reason="built without the Atari backend (FASTVEC_ATARI=OFF)")
@pytest.mark.atari
def test_native_atari_pool():
    _run(AtariMachine, max(1, _EXAMPLES // 10) if _EXAMPLES else 20, 20)


@pytest.mark.slow
@pytest.mark.timeout(_TIMEOUT)
@pytest.mark.mujoco
def test_native_mujoco_pools():
    _run(MujocoMachine, max(1, _EXAMPLES // 4) if _EXAMPLES else 60, 30)


@pytest.mark.slow
@pytest.mark.timeout(_TIMEOUT)
@pytest.mark.mujoco
def test_native_dm_control_pools():
    _run(DmControlMachine, max(1, _EXAMPLES // 8) if _EXAMPLES else 8, 20)


@pytest.mark.slow
@pytest.mark.timeout(_TIMEOUT)
def test_python_env_pools():
    _run(PythonEnvMachine, max(1, _EXAMPLES // 10) if _EXAMPLES else 20, 50)


# -- bugs the fuzzer found, fixed: each test pins the behaviour the fuzzer expects ---------------------


def test_partial_reset_with_an_empty_env_id_list():
    env = fastvec.make("CartPole-v1", 4, seed=0)
    env.reset()
    try:
        obs, info = env.reset(options={"env_id": []})
    except ValueError:
        pass
    else:
        assert obs.shape == (0, 4) and info == {}
    assert env.step(np.zeros(4, np.int64))[0].shape == (4, 4)


def test_max_episode_steps_beyond_int32_is_a_value_error():
    with pytest.raises(ValueError, match="max_episode_steps"):
        fastvec.make("CartPole-v1", 2, max_episode_steps=2**40)


def test_python_backend_unknown_id_raises_value_error():
    with pytest.raises(ValueError):
        fastvec.make("NoSuchEnv-v0", 2, backend="python")


@pytest.mark.timeout(60)
def test_python_pool_refuses_actions_that_overflow_float32():
    with fastvec.make("Pendulum-v1", 2, seed=0, backend="python") as env:
        env.reset()
        with pytest.raises(ValueError, match="representable as float32"):
            env.step(np.full((2, 1), 1e300))  # finite as float64, inf as the float32 the env receives


@pytest.mark.parametrize("backend", ["native", "python"])
def test_actions_that_overflow_float32_are_refused_with_warnings_as_errors(backend):
    """numpy warns when it casts 1e300 to float32; with warnings as errors (as here) the cast fails, and
    the native pool read the failed cast's null array: a segfault."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with fastvec.make("Pendulum-v1", 2, seed=0, backend=backend) as env:
            env.reset()
            for actions in (np.full((2, 1), -1e300), np.array([[0.5], [1e39]])):
                with pytest.raises(ValueError, match="finite" if backend == "native" else "representable"):
                    env.step(actions)
            assert env.step(np.zeros((2, 1), np.float64))[0].shape == (2, 3)


def test_non_finite_env_option_is_refused():
    with pytest.raises(ValueError, match="g"):
        fastvec.make("Pendulum-v1", 1, seed=0, g=float("nan"))  # accepted: every observation after a step is NaN


@pytest.mark.timeout(60)
def test_python_partial_reset_reports_no_stale_episode_statistics():
    with fastvec.make("CartPole-v1", 2, seed=0, backend="python", max_episode_steps=3, episode_stats=True) as env:
        env.reset()
        for _ in range(3):
            *_, info = env.step(np.zeros(2, np.int64))
        assert info["_episode_return"].all()  # both envs were truncated by that step
        _, info = env.reset(options={"reset_mask": np.array([True, False])})
        assert "episode_return" not in info or not info["_episode_return"].any(), info
