"""Argument checks shared by both pools (native and Python-env): one wording for each mistake."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

MODES = {
    "next_step": AutoresetMode.NEXT_STEP,
    "same_step": AutoresetMode.SAME_STEP,
    "disabled": AutoresetMode.DISABLED,
}
_MAX_SEED = 2**64

# What VectorEnv.env_call runs on each env, as the upstream vector envs do it (pyenv.worker_calls._ENV_CALLS):
ENV_CALL_KINDS = (
    "get",  # env.get_wrapper_attr(name): SB3's get_attr, Tianshou's get_env_attr
    "call",  # get_wrapper_attr(name), called with the arguments if callable: gymnasium's call and get_attr
    "method",  # get_wrapper_attr(name)(*args, **kwargs): SB3's env_method
    "set",  # env.set_wrapper_attr(name, value): gymnasium's set_attr
    "set_outer",  # setattr(env, name, value), on the outermost wrapper: SB3's set_attr
    "set_unwrapped",  # setattr(env.unwrapped, name, value): Tianshou's set_env_attr
    "is_wrapped",  # whether a wrapper of class args[0] wraps the env: SB3's env_is_wrapped
)
SET_KINDS = ("set", "set_outer", "set_unwrapped")  # their args: one value per env
# Names env_call does not call: the pool owns the envs' resets, steps and lifetime (gymnasium's AsyncVectorEnv
# refuses the same names in call()).
POOL_METHODS = ("reset", "step", "close")


class ResetNeeded(gym.error.ResetNeeded, RuntimeError):
    """A step of an env that was never reset, which the native pool refuses: gymnasium's error (what a Python env
    with gymnasium's OrderEnforcing raises there) and the RuntimeError the pool raised before."""


def check_observation_mode(mode: Any) -> str:
    """gymnasium's AsyncVectorEnv(observation_mode=...) as a string: "same" or "different"."""
    if not isinstance(mode, str) or mode not in ("same", "different"):
        raise ValueError(
            "observation_mode must be 'same' or 'different' (gymnasium's; its custom pair of spaces is not taken), "
            f"got {mode!r}"
        )
    return mode


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class PoolShape:
    """How many envs a pool steps and how many rows a receiving call returns: the one place the sync/async rule
    and the default parallelism are decided. Made by :meth:`check` where a pool is made (``fastvec.native.make_pool``,
    ``fastvec.pyenv.make``); the façade and the adapters read :attr:`sync` from it.

    >>> PoolShape.check(8, None).sync, PoolShape.check(8, 2).sync
    (True, False)
    """

    num_envs: int
    batch_size: int

    @classmethod
    def check(cls, num_envs: int, batch_size: Any) -> PoolShape:
        """The shape of a pool of ``num_envs`` envs (counted and checked by the pool's maker: each pool bounds it
        its own way) and ``batch_size`` rows a batch (None: ``num_envs``, a sync pool; else checked, in
        [1, num_envs])."""
        return cls(num_envs, num_envs if batch_size is None else check_int("batch_size", batch_size, 1, num_envs))

    @property
    def sync(self) -> bool:
        """A sync pool (``batch_size == num_envs``): every env stepped at once, rows in env order, no ``env_id`` in
        info, partial resets allowed. Else async: ``recv()`` returns the first ``batch_size`` envs to finish."""
        return self.batch_size == self.num_envs

    def default_threads(self, processes: bool = False) -> int:
        """The parallelism a pool gets when none is given: at least 1, at most one per env, and

        - native threads (``processes`` False): the cores in a sync pool, where the caller is one of the threads;
          one fewer in an async pool, where a caller waiting in recv() steps queued envs itself, so one worker
          fewer fills the cores (and leaves the caller a core for its policy);
        - worker processes of the Python-env pool (``processes``): one fewer than the cores, sync or async: the
          parent is busy too (copying batches, the policy), so that no two processes fight for a core
          (``fastvec.pyenv.arguments.count_workers`` says why it is right for envs that compute)."""
        cores = available_cores() if self.sync and not processes else available_cores() - 1
        return max(1, min(cores, self.num_envs))


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return int(value)


def check_timeout(timeout: Any) -> float | None:
    """A wait's time-out in seconds: None (no limit) or a finite number >= 0."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer, np.floating)):
        raise TypeError(f"timeout must be None or a number of seconds, got {type(timeout).__name__} {timeout!r}")
    if not (np.isfinite(timeout) and timeout >= 0):
        raise ValueError(f"timeout must be None or a finite number of seconds >= 0, got {timeout}")
    return float(timeout)


def check_seed(name: str, seed: Any) -> int:
    if _is_int_array_0d(seed):
        seed = seed.item()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{name} must be an int or None, got {type(seed).__name__} {seed!r}")
    if not 0 <= seed < _MAX_SEED:
        raise ValueError(f"{name} must be in [0, 2**64), got {seed}")
    return int(seed)


def is_int_seed(seed: Any) -> bool:
    """An int seed (seeding every env from it), as opposed to a list of per-env seeds; a 0-d integer
    array counts as an int."""
    return (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)) or _is_int_array_0d(seed)


def _is_int_array_0d(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu"


def autoreset_mode_name(mode: str | AutoresetMode) -> str:
    """'next_step', 'same_step' or 'disabled', from that name, gymnasium's enum or its value ('NextStep', ...)."""
    names = {m: name for name, m in MODES.items()}
    if isinstance(mode, AutoresetMode):
        return names[mode]
    if isinstance(mode, str) and mode in {m.value for m in AutoresetMode}:
        return names[AutoresetMode(mode)]
    if mode not in MODES:
        values = sorted(m.value for m in AutoresetMode)
        raise ValueError(f"autoreset_mode must be one of {sorted(MODES)} (or gymnasium's {values}), got {mode!r}")
    return mode


def reset_options(options: dict[str, Any] | None) -> tuple[Any, Any, dict[str, Any] | None]:
    """(reset_mask, env_id, the env's options) from reset()'s options: at most one of the first two is not None;
    the rest is what each env's ``reset(options=...)`` gets, as gymnasium's vector envs pass it on (None when
    ``options`` is None, or holds only ``env_id``; a new dict, the caller's is not changed)."""
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict (or None), got {type(options).__name__} {options!r}")
    if options is None:
        return None, None, None
    env_options: dict[str, Any] | None = dict(options)
    assert env_options is not None
    reset_mask = env_options.pop("reset_mask", None)
    ids = env_options.pop("env_id", None)
    if reset_mask is not None and ids is not None:
        raise ValueError("pass either options['reset_mask'] or options['env_id'], not both")
    if ids is not None and not env_options:
        # env_id is fastvec's own key, not gymnasium's: a reset of chosen envs with nothing else for them passes
        # no options, as a reset of each on its own would (SB3's DummyVecEnv resets an env without options so).
        env_options = None
    return reset_mask, ids, env_options


def refuse_reset_options(label: str, options: dict[str, Any] | None) -> None:
    """For envs that take no reset options (native envs have no ``reset(options=...)``): a ValueError naming the
    keys given, other than the pool's own ``reset_mask`` and ``env_id``."""
    if options:
        raise ValueError(
            f"unknown reset option(s) {sorted(options, key=str)} for {label}, whose envs take no reset options; "
            "expected 'reset_mask' or 'env_id'"
        )


def partial_reset_ids(reset_mask: Any, shape: PoolShape) -> np.ndarray | None:
    """Checks a partial reset's arguments; returns the env ids a reset_mask selects (int32), or None
    when the reset names env ids instead (the caller checks those)."""
    if not shape.sync:
        raise ValueError("partial resets (reset_mask / env_id) need batch_size == num_envs")
    return None if reset_mask is None else reset_mask_ids(reset_mask, shape.num_envs)


def reset_mask_ids(reset_mask: Any, num_envs: int) -> np.ndarray:
    """The env ids (int32) ``options["reset_mask"]`` selects: a bool array, one per env, not all False."""
    if not isinstance(reset_mask, np.ndarray) or reset_mask.dtype != np.bool_:
        raise TypeError("options['reset_mask'] must be a numpy array of dtype bool")
    if reset_mask.shape != (num_envs,):
        raise ValueError(f"options['reset_mask'] must have shape ({num_envs},), got {reset_mask.shape}")
    if not reset_mask.any():
        raise ValueError("options['reset_mask'] must contain at least one True value")
    return np.flatnonzero(reset_mask).astype(np.int32)


def check_env_ids(env_id: Any, num_envs: int, unique: bool = True) -> np.ndarray:
    """``env_id`` (an int, a list or a 1-D array of env indices) as int32, each in [0, num_envs) and (``unique``)
    listed once; a TypeError or ValueError with the value as given otherwise."""
    given = [env_id] if isinstance(env_id, int) else env_id
    if isinstance(given, (list, tuple)) and all(
        isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in given
    ):
        for e in given:  # as Python ints: numpy would make [2**64 - 1, -1] floats, and [2**70] objects
            if not 0 <= e < num_envs:
                raise ValueError(f"env_id {e} is out of range [0, {num_envs})")
    ids = np.asarray(env_id)
    if ids.size == 0:
        ids = ids.astype(np.int64)  # [] is float64 to numpy
    if ids.ndim == 0 and ids.dtype.kind in "iu":
        ids = ids.reshape(1)  # one env
    if ids.ndim != 1:  # (worded as the native binding words it: tests/api/test_misuse.py)
        raise TypeError(f"env_id must be a 1-D array of env indices, got {type(env_id).__name__} of shape {ids.shape}")
    if ids.size and ids.dtype.kind not in "iu":
        raise TypeError(f"env_id must hold integers, got dtype {ids.dtype}")
    bad = (ids < 0) | (ids >= num_envs)  # before the cast to int32, which would wrap 2**32 + 3 to 3
    if bad.any():
        raise ValueError(f"env_id {ids[bad][0]} is out of range [0, {num_envs})")
    ids = ids.astype(np.int32)
    if unique and len(np.unique(ids)) != len(ids):
        values, counts = np.unique(ids, return_counts=True)
        raise ValueError(f"env_id {values[counts > 1][0]} is listed twice")
    return ids
