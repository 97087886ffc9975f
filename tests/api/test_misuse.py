"""The words of every refusal of the pool contract, on both pools: one table, one test.

Each misuse the pools' state machine refuses (tests/fuzz/test_fuzz.py's ``Model`` says when a call is one; this file
says what it raises) is driven through the public API of ``fastvec.make``'s VectorEnv over the native pool and
over the Python-env pool, sync and async where it applies. Both must raise exactly the exception type and the
full text of the table, and the pool must then go on (a reset and a step). A case whose ``expected`` is None is
not a misuse: both pools must accept it.

Where the two pools disagree today the case is an ``xfail(strict=True)`` whose reason says which text is the
table's, where each is produced and what the fix is: it fails once fixed, and the mark goes.

Left out, by design: a step of an env that was never reset (the native pool refuses it at the send with
fastvec's ResetNeeded; the Python-env pool passes it to the env, whose OrderEnforcing raises gymnasium's, from
the receiving call: tests/api/test_vector.py pins both), an env's own exception (``fastvec._core.EnvError`` against
the Python env's own type with a note naming the env), and per-env attributes of an env in flight (a native env's
attributes are the pool's, answered at any time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError

import fastvec
from fastvec.vector import ClosedError

BACKENDS = ("native", "python")
N = 4  # envs per pool; async pools have batch_size 2 (1 for the "ended" cases)


class RaiserError(ArithmeticError):
    """Raiser's exception: a type no pool raises of its own."""


class Raiser(gym.Env):
    """A Python env that raises RaiserError on action 3 (the native ``_Debug-v0`` with ``throw_on_action=3``)."""

    observation_space = gym.spaces.Box(0.0, 1e9, (2,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if action == 3:
            raise RaiserError("asked to raise")
        return np.zeros(2, np.float32), 0.0, False, False, {}


def make(backend: str, batch_size: int | None, env: str, **kw: Any) -> fastvec.VectorEnv:
    """A pool of N envs: CartPole, or (``env="raiser"``) envs that raise on action 3."""
    n = kw.pop("num_envs", N)
    python: dict[str, Any] = {"backend": "python", "num_workers": 1, "start_method": "fork"}
    if env == "raiser":
        if backend == "native":
            return fastvec.make("_Debug-v0", n, batch_size=batch_size, throw_on_action=3, num_threads=2, **kw)
        return fastvec.make(Raiser, n, batch_size=batch_size, **python, **kw)
    return fastvec.make("CartPole-v1", n, batch_size=batch_size, **(python if backend == "python" else {}), **kw)


def a(k: int) -> np.ndarray:
    return np.zeros(k, np.int64)


def take_all(env: fastvec.VectorEnv) -> None:
    """Every env reset and received: nothing in flight, every env awaiting an action."""
    if env.batch_size == env.num_envs:
        env.reset()
        return
    env.async_reset()
    for _ in range(env.num_envs // env.batch_size):
        env.recv()


def raise_env_0(env: fastvec.VectorEnv) -> None:
    """Env 0 raises in a step (its exception received): it is broken until reset."""
    take_all(env)
    with pytest.raises((fastvec._core.EnvError, RaiserError)):
        if env.batch_size == env.num_envs:
            env.step(np.array([3, 0, 0, 0]))
        else:
            env.send(np.array([3, 0]), [0, 1])
            env.recv()


def end_env_0(env: fastvec.VectorEnv) -> None:
    """Env 0's episode ended (max_episode_steps=1) in autoreset_mode='disabled'."""
    take_all(env)
    if env.batch_size == env.num_envs:
        env.step(a(env.num_envs))
    else:
        env.send(a(1), [0])
        env.recv()


def mask(*ids: int) -> np.ndarray:
    m = np.zeros(N, bool)
    m[list(ids)] = True
    return m


def close(env: fastvec.VectorEnv) -> None:
    env.close()


@dataclass
class Case:
    name: str
    sync: bool
    setup: Callable[[Any], Any] | None
    call: Callable[[Any], Any]
    expected: tuple[type, str] | None  # None: not a misuse, both pools accept it
    xfail: str | None = None
    env: str = "cartpole"
    make: dict[str, Any] = field(default_factory=dict)
    pending: bool = False  # a step_async is pending after the call: step_wait before the follow-up


def _in_flight(env):
    env.async_reset()


def _send_every_env(env):
    env.reset()
    env.send(a(N))


def _send_1_and_3(env):
    take_all(env)
    env.send(a(2), [1, 3])


NOT_AWAITING = "env {} is not awaiting an action (it was sent one and its result has not been received)"
BROKEN = "env 0 raised an exception earlier; reset it before stepping it again"
ENDED = (
    "env 0 finished its episode and autoreset_mode='disabled'; reset it (reset(options={'reset_mask': mask})) before "
    "stepping it again"
)
DISABLED = {"autoreset_mode": "disabled", "max_episode_steps": 1}
RECV_FOREVER = (
    "recv() would wait forever: 0 env(s) are in flight but batch_size is {}; send actions (or async_reset) first"
)
RECV_REST = (
    "recv_rest() takes the envs in flight when they are fewer than batch_size ({} env(s) in flight, batch_size {})"
)
PARTIAL_IN_FLIGHT = "envs are in flight; receive their results before a partial reset"
NEVER_RESET = "env 0 has never been reset; a partial reset needs every other env reset once"
TIMEOUT = "timeout must be None or a finite number of seconds >= 0, got {}"
CLOSED = (ClosedError, "the pool is closed")
# env ids that are not a 1-D integer array (nor one integer: one env): the native pool's send checks them in
# src/bindings/actions.hpp (convert_ids), everything else (the Python-env pool's send, async_reset and partial
# resets of both pools) in fastvec/_args.py check_env_ids, in the same words: one names a shape, the other a dtype.


def _recv_rest_after_partial_send(env):
    env.reset()
    env.send(a(2), [0, 1])


CASES = [
    # -- receiving with too little in flight ------------------------------------------------------------------------
    Case("recv without send", True, take_all, lambda e: e.recv(), (RuntimeError, RECV_FOREVER.format(N))),
    Case("recv without send", False, take_all, lambda e: e.recv(), (RuntimeError, RECV_FOREVER.format(2))),
    Case(
        "recv_rest, nothing in flight", False, take_all, lambda e: e.recv_rest(), (RuntimeError, RECV_REST.format(0, 2))
    ),
    Case(
        "recv_rest, a whole batch in flight",
        False,
        _in_flight,
        lambda e: e.recv_rest(),
        (RuntimeError, RECV_REST.format(4, 2)),
    ),
    Case(
        "recv_rest, nothing in flight",
        True,
        take_all,
        lambda e: e.recv_rest(),
        (RuntimeError, RECV_REST.format(0, N)),
    ),
    Case(
        "recv_rest after a partial send",
        True,
        _recv_rest_after_partial_send,
        lambda e: e.recv_rest(),
        None,
    ),
    Case(
        "recv_ready, nothing in flight",
        False,
        take_all,
        lambda e: e.recv_ready(1, None),
        (RuntimeError, "recv_ready() would wait forever: no env is in flight"),
    ),
    Case(
        "recv_ready of 0 rows",
        False,
        _in_flight,
        lambda e: e.recv_ready(0, None),
        (ValueError, "rows must be in [1, 4], got 0"),
    ),
    Case(
        "recv_ready of more rows than in flight",
        False,
        _in_flight,
        lambda e: e.recv_ready(9, None),
        (ValueError, "rows must be in [1, 4], got 9"),
    ),
    # -- stepping an env that is not awaiting an action ---------------------------------------------------------------
    Case(
        "step of envs in flight", True, _send_every_env, lambda e: e.step(a(N)), (RuntimeError, NOT_AWAITING.format(0))
    ),
    Case(
        "send to an env in flight",
        False,
        _in_flight,
        lambda e: e.send(a(1), [0]),
        (RuntimeError, NOT_AWAITING.format(0)),
    ),
    Case(
        "send to every env, some in flight",
        False,
        _send_1_and_3,
        lambda e: e.send(a(N), None),
        (RuntimeError, NOT_AWAITING.format(1)),
    ),
    Case("step of a broken env", True, raise_env_0, lambda e: e.step(a(N)), (RuntimeError, BROKEN), env="raiser"),
    Case("send to a broken env", False, raise_env_0, lambda e: e.send(a(1), [0]), (RuntimeError, BROKEN), env="raiser"),
    Case("step of an ended env", True, end_env_0, lambda e: e.step(a(N)), (RuntimeError, ENDED), make=DISABLED),
    Case(
        "send to an ended env",
        False,
        end_env_0,
        lambda e: e.send(a(1), [0]),
        (RuntimeError, ENDED),
        make={**DISABLED, "num_envs": 2, "batch_size": 1},
    ),
    Case(
        "render of an env in flight",
        False,
        _in_flight,
        lambda e: e.render(),
        (
            RuntimeError,
            "env 0 is in flight (sent, its result not received yet); receive its result before accessing its "
            "attributes ('render')",
        ),
        make={"render_mode": "rgb_array"},
    ),
    # -- resets -------------------------------------------------------------------------------------------------------
    Case(
        "async_reset of an env in flight",
        False,
        _in_flight,
        lambda e: e.async_reset(env_id=[0]),
        (RuntimeError, "env 0 is in flight; receive its result before resetting it"),
    ),
    Case(
        "partial reset by env_id, envs in flight",
        True,
        _send_every_env,
        lambda e: e.reset(options={"env_id": [0]}),
        (RuntimeError, PARTIAL_IN_FLIGHT),
    ),
    Case(
        "partial reset by mask, envs in flight",
        True,
        _send_every_env,
        lambda e: e.reset(options={"reset_mask": mask(1)}),
        (RuntimeError, PARTIAL_IN_FLIGHT),
    ),
    Case(
        "partial reset by mask, another env never reset",
        True,
        None,
        lambda e: e.reset(options={"reset_mask": mask(1)}),
        (RuntimeError, NEVER_RESET),
    ),
    Case(
        "partial reset by env_id, another env never reset",
        True,
        None,
        lambda e: e.reset(options={"env_id": [1]}),
        None,
    ),
    Case(
        "partial reset in async mode",
        False,
        None,
        lambda e: e.reset(options={"env_id": [1]}),
        (ValueError, "partial resets (reset_mask / env_id) need batch_size == num_envs"),
    ),
    # -- the sync/async rules -----------------------------------------------------------------------------------------
    Case(
        "step(actions) in async mode",
        False,
        _in_flight,
        lambda e: e.step(a(N)),
        (
            ValueError,
            "step(actions) without env_id steps every env and needs batch_size == num_envs; in async mode use "
            "send(actions, env_id) and recv()",
        ),
    ),
    Case(
        "step_async in async mode",
        False,
        None,
        lambda e: e.step_async(a(N)),
        (
            ValueError,
            "step_async(actions) steps every env and needs batch_size == num_envs; in async mode use send(actions, "
            "env_id) and recv()",
        ),
    ),
    Case(
        "step of some envs in sync mode",
        True,
        take_all,
        lambda e: e.step(a(2), [0, 1]),
        (
            ValueError,
            "step(actions, env_id) in sync mode must step every env (4), got 2 env ids; make the pool with "
            "batch_size < num_envs to step some envs at a time",
        ),
    ),
    Case(
        "recv while step_async is pending",
        True,
        lambda e: (e.reset(), e.step_async(a(N))),
        lambda e: e.recv(),
        (
            AlreadyPendingCallError,
            "Calling `recv` while waiting for a pending call to `step` to complete: call `step_wait` first",
        ),
        pending=True,
    ),
    Case(
        "step_wait without step_async",
        True,
        take_all,
        lambda e: e.step_wait(),
        (NoAsyncCallError, "Calling `step_wait` without any prior call to `step_async`."),
    ),
    # -- env ids ------------------------------------------------------------------------------------------------------
    Case(
        "env_id out of range",
        False,
        take_all,
        lambda e: e.send(a(1), [4]),
        (ValueError, "env_id 4 is out of range [0, 4)"),
    ),
    Case(
        "env_id negative",
        False,
        take_all,
        lambda e: e.send(a(1), [-1]),
        (ValueError, "env_id -1 is out of range [0, 4)"),
    ),
    Case(
        "env_id past 2**32",
        False,
        take_all,
        lambda e: e.send(a(1), [2**32]),
        (ValueError, "env_id 4294967296 is out of range [0, 4)"),
    ),
    Case(
        "env_id 2**64 - 1",
        False,
        take_all,
        lambda e: e.send(a(1), np.array([2**64 - 1], np.uint64)),
        (ValueError, "env_id 18446744073709551615 is out of range [0, 4)"),
    ),
    Case(
        "env_id listed twice", False, take_all, lambda e: e.send(a(2), [0, 0]), (ValueError, "env_id 0 is listed twice")
    ),
    Case(
        "async_reset, env_id out of range",
        False,
        None,
        lambda e: e.async_reset(env_id=[4]),
        (ValueError, "env_id 4 is out of range [0, 4)"),
    ),
    Case(
        "async_reset, env_id listed twice",
        False,
        None,
        lambda e: e.async_reset(env_id=[1, 1]),
        (ValueError, "env_id 1 is listed twice"),
    ),
    Case(
        "env_id of floats",
        False,
        take_all,
        lambda e: e.send(a(1), np.array([0.0])),
        (TypeError, "env_id must hold integers, got dtype float64"),
    ),
    Case(
        "env_id, a list of floats",
        False,
        take_all,
        lambda e: e.send(a(1), [0.0]),
        (TypeError, "env_id must hold integers, got dtype float64"),
    ),
    Case(
        "async_reset, env_id of floats",
        False,
        None,
        lambda e: e.async_reset(env_id=[1.0]),
        (TypeError, "env_id must hold integers, got dtype float64"),
    ),
    Case(
        "env_id 2-D",
        False,
        take_all,
        lambda e: e.send(a(1), np.array([[0]])),
        (TypeError, "env_id must be a 1-D array of env indices, got ndarray of shape (1, 1)"),
    ),
    Case(
        "env_id a str",
        False,
        take_all,
        lambda e: e.send(a(1), "a"),
        (TypeError, "env_id must be a 1-D array of env indices, got str of shape ()"),
    ),
    Case(
        "env_id an int",
        False,
        take_all,
        lambda e: e.send(a(1), 0),
        None,
    ),
    Case("env_id empty", False, take_all, lambda e: e.send(a(0), []), None),
    Case("async_reset, env_id empty", False, take_all, lambda e: e.async_reset(env_id=[]), None),
    Case("partial reset, env_id empty", True, take_all, lambda e: e.reset(options={"env_id": []}), None),
    # -- time-outs ----------------------------------------------------------------------------------------------------
    Case("recv, negative timeout", False, _in_flight, lambda e: e.recv(timeout=-1), (ValueError, TIMEOUT.format(-1))),
    Case(
        "recv, NaN timeout",
        False,
        _in_flight,
        lambda e: e.recv(timeout=float("nan")),
        (ValueError, TIMEOUT.format("nan")),
    ),
    Case(
        "recv, timeout a str",
        False,
        _in_flight,
        lambda e: e.recv(timeout="1"),
        (TypeError, "timeout must be None or a number of seconds, got str '1'"),
    ),
    Case(
        "recv_rest, negative timeout",
        False,
        _in_flight,
        lambda e: e.recv_rest(timeout=-1),
        (ValueError, TIMEOUT.format(-1)),
    ),
    Case(
        "recv_ready, negative timeout",
        False,
        _in_flight,
        lambda e: e.recv_ready(1, -1),
        (ValueError, TIMEOUT.format(-1)),
    ),
    Case(
        "step_wait, negative timeout",
        True,
        lambda e: (e.reset(), e.step_async(a(N))),
        lambda e: e.step_wait(timeout=-1),
        (ValueError, TIMEOUT.format(-1)),
        pending=True,
    ),
    # -- a closed pool ------------------------------------------------------------------------------------------------
    Case("step, closed", True, close, lambda e: e.step(a(N)), CLOSED),
    Case("step_async, closed", True, close, lambda e: e.step_async(a(N)), CLOSED),
    Case("reset, closed", True, close, lambda e: e.reset(), CLOSED),
    Case("partial reset, closed", True, close, lambda e: e.reset(options={"env_id": [0]}), CLOSED),
    Case("get_attr, closed", True, close, lambda e: e.get_attr("spec"), CLOSED),
    Case("send, closed", False, close, lambda e: e.send(a(1), [0]), CLOSED),
    Case("send of a bad env_id, closed", False, close, lambda e: e.send(a(1), [9]), CLOSED),
    Case("recv, closed", False, close, lambda e: e.recv(), CLOSED),
    Case("recv_rest, closed", False, close, lambda e: e.recv_rest(), CLOSED),
    Case("recv_ready, closed", False, close, lambda e: e.recv_ready(1, None), CLOSED),
    Case("async_reset, closed", False, close, lambda e: e.async_reset(), CLOSED),
    Case("async_reset of some envs, closed", False, close, lambda e: e.async_reset(env_id=[0]), CLOSED),
]


def _param(case: Case) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, id=f"{case.name} ({'sync' if case.sync else 'async'})", marks=marks)


def _outcome(case: Case, backend: str) -> tuple[type, str] | None:
    """What the case's call raises on ``backend`` (None: it returned); checks that the pool goes on."""
    kw = dict(case.make)
    batch_size = kw.pop("batch_size", None if case.sync else 2)
    env = make(backend, batch_size, case.env, **kw)
    with env:
        if case.setup is not None:
            case.setup(env)
        try:
            case.call(env)
            outcome = None
        except Exception as exc:
            outcome = (type(exc), str(exc))
        if env.closed:
            return outcome
        # A refusal leaves the pool usable: a reset, then a step of every env (a batch in async mode).
        if case.pending:
            env.step_wait()
        env.reset()
        if env.batch_size == env.num_envs:
            assert env.step(a(env.num_envs))[1].shape == (env.num_envs,)
        else:
            env.send(a(env.num_envs))
            assert env.recv()[1].shape == (env.batch_size,)
    return outcome


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_each_misuse_gets_the_same_exception_and_words_from_both_pools(case: Case) -> None:
    got = {backend: _outcome(case, backend) for backend in BACKENDS}
    assert got == {backend: case.expected for backend in BACKENDS}
