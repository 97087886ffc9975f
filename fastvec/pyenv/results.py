"""What a batch returns: its rows copied out of the shared mapping, and what the workers report beside them (the
envs' infos, merged as gymnasium's vector envs merge them, and the exceptions the envs raised, rebuilt in the
parent with their own types)."""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium as gym
import numpy as np

from fastvec._core import EnvError
from fastvec.pyenv.layout import Buffers, Leaf, unflattener


class Rows:
    """Copies rows of the shared mapping's per-env arrays into fresh arrays, which then belong to the caller
    (``rows`` None: every env's, in env order, as whole-array copies)."""

    def __init__(self, b: Buffers, obs_space: gym.Space, obs_leaves: tuple[Leaf, ...]) -> None:
        self._b = b
        self._obs_space = obs_space
        # the observation space is its one leaf, not nested, and in shared memory
        self._simple_obs = len(obs_leaves) == 1 and not obs_leaves[0].path and not obs_leaves[0].dynamic
        self._is_dynamic = [leaf.dynamic for leaf in obs_leaves]
        self.dynamic = sum(self._is_dynamic)  #: the number of dynamic leaves (pickled, not in shared memory)
        # Per env, its last observation's dynamic values: a partial reset returns the other envs' observations too.
        self._last: list[list[Any]] = [[None] * self.dynamic for _ in range(len(b.reward))] if self.dynamic else []
        self._unflatten = unflattener(obs_space)

    def objects(self, env_id: np.ndarray, messages: dict[int, Any]) -> tuple[list[tuple], list[tuple]]:
        """The dynamic leaves' batches of the rows ``env_id`` (a tuple of the rows' values per leaf, as gymnasium
        concatenates these spaces), for the observation and the final observation, from the rows' decoded
        ``messages`` (a row without one, an env that a partial reset left alone, shows its last observation;
        one that raised, None); the final observation's are None for rows that did not end."""
        last = self._last
        finals: list[list[Any] | None] = []
        for e in env_id.tolist():
            msg = messages.get(e)
            final = None
            if msg is not None and msg[0] == "info" and msg[3] is not None:
                last[e] = msg[3]
                final = msg[4]
            finals.append(final)
        k = range(self.dynamic)
        objects = [tuple([last[e][j] for e in env_id.tolist()]) for j in k]
        final_objects = [tuple([None if f is None else f[j] for f in finals]) for j in k]
        return objects, final_objects

    def obs(self, arrays: list[np.ndarray], rows: np.ndarray | None, objects: list[tuple] | None = None) -> Any:
        """The observations of ``rows`` in ``arrays`` (one per fixed leaf) and ``objects`` (one per dynamic leaf),
        as the observation space holds them."""
        values = [a.copy() if rows is None else a[rows] for a in arrays]
        if self._simple_obs:
            return values[0]
        if objects is not None:
            fixed, dynamic = iter(values), iter(objects)
            values = [next(dynamic) if d else next(fixed) for d in self._is_dynamic]
        return self._unflatten(iter(values))

    def step(
        self, rows: np.ndarray | None, objects: list[tuple] | None = None
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The observations, rewards and flags (terminated, truncated, ended) of ``rows``."""
        b = self._b
        obs = self.obs(b.obs, rows, objects)
        return obs, _pick(b.reward, rows), _pick(b.terminated, rows), _pick(b.truncated, rows), _pick(b.ended, rows)

    def episodes(self, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The returns and lengths of the episodes that ``rows`` ended."""
        return _pick(self._b.episode_return, rows), _pick(self._b.episode_length, rows)


def _pick(array: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    return array.copy() if rows is None else array[rows]


def add_info(infos: dict[str, Any], env_info: dict[str, Any], row: int, size: int) -> dict[str, Any]:
    """gymnasium's VectorEnv._add_info for a batch of ``size`` rows (not always num_envs)."""
    for key, value in env_info.items():
        array: Any
        if isinstance(value, dict):
            array = add_info(infos.get(key, {}), value, row, size)
        else:
            array = infos.get(key)
            if array is None:
                if type(value) in (int, float, bool) or issubclass(type(value), np.number):
                    array = np.zeros(size, dtype=type(value))
                elif isinstance(value, np.ndarray):
                    array = np.zeros((size, *value.shape), dtype=value.dtype)
                else:
                    array = np.full(size, fill_value=None, dtype=object)
            array[row] = value
        mask = infos.get(f"_{key}")
        if mask is None:
            mask = np.zeros(size, dtype=np.bool_)
        mask[row] = True
        infos[key], infos[f"_{key}"] = array, mask
    return infos


def decode_messages(messages: dict[int, Any]) -> dict[int, Any]:
    """``messages`` unpickled (those that are not already); one that cannot be becomes a "bad_info" message."""
    out: dict[int, Any] = {}
    for e, blob in messages.items():
        if isinstance(blob, tuple):
            out[e] = blob
            continue
        try:
            out[e] = pickle.loads(blob)
        except Exception as exc:  # a value the worker could pickle and this process cannot rebuild
            out[e] = ("bad_info", f"{type(exc).__name__}: {exc}")
    return out


def merge_messages(
    env_id: np.ndarray,
    messages: dict[int, Any],
    final_info: dict[str, Any] | None,
    broken: np.ndarray,
    first_error_only: bool,
) -> tuple[dict[str, Any], BaseException | None, int]:
    """The info dict of a batch of rows ``env_id`` from the envs' ``messages`` (pickled or decoded; the final
    infos merged into ``final_info``), the exception of the first env (in row order) that raised and its id
    (None, -1 when none did); every env that raised is marked in ``broken``, or only the first
    (``first_error_only``: the rest of the batch is kept for a later call, which reports their errors)."""
    size = len(env_id)
    info: dict[str, Any] = {}
    error: BaseException | None = None
    failed = -1
    for r, e in enumerate(env_id.tolist()):  # in row order: the first error reported is the first row's
        blob = messages.get(e)
        if blob is None:
            continue
        if isinstance(blob, tuple):
            msg = blob
        else:
            try:
                msg = pickle.loads(blob)
            except Exception as exc:  # a value the worker could pickle and this process cannot rebuild
                msg = ("bad_info", f"{type(exc).__name__}: {exc}")
        if msg[0] != "info":
            if error is None:
                broken[e] = True
                error, failed = env_error(e, msg), e
                if first_error_only:
                    break
            broken[e] = True  # (a sync batch: every error's env, its row dropped)
            continue
        env_info, env_final_info = msg[1], msg[2]
        if env_info:
            add_info(info, env_info, r, size)
        if env_final_info:
            assert final_info is not None  # (a worker sends final infos in same_step mode only)
            add_info(final_info, env_final_info, r, size)
    return info, error, failed


def env_exception(e: int, what: str, exc_blob: bytes | None, type_name: str, message: str, trace: str) -> BaseException:
    """The exception env ``e`` raised in ``what`` in its worker (pickled there as ``exc_blob``), with its own type, as
    gymnasium's AsyncVectorEnv re-raises it, and a note naming the env with the worker's traceback; an EnvError
    with its type and message when it could not travel."""
    error: BaseException | None = None
    if exc_blob is not None:
        try:
            error = pickle.loads(exc_blob)
        except Exception:
            error = None
    if not isinstance(error, BaseException):  # it could not travel: its type and message as text
        error = EnvError(f"env {e} raised {type_name}: {message}")
    note = f"raised by env {e} in {what}, in its worker process; traceback there:\n{trace.rstrip()}"
    if hasattr(error, "add_note"):
        error.add_note(note)
    else:  # Python 3.10: notes are kept, not printed
        error.__notes__ = [*getattr(error, "__notes__", []), note]  # type: ignore[attr-defined]
    return error


def env_error(e: int, msg: tuple) -> BaseException:
    """The exception for env ``e``'s error message: what the env raised in reset() or step(), with its own type
    (see env_exception); an EnvError for an observation that does not fit its space or an info that cannot
    be unpickled here."""
    if msg[0] == "error":
        error = env_exception(e, f"{msg[5]}()", *msg[1:5])
    elif msg[0] == "bad_obs":
        error = EnvError(f"env {e}: {msg[1]}")
    else:
        error = EnvError(f"env {e}: its info could not be unpickled in the parent: {msg[1]}")
    try:  # the env to reset to go on, as the native pool's EnvError names it
        error.env_id = e  # type: ignore[attr-defined]
    except (AttributeError, TypeError):  # an exception type that takes no attributes: its note names the env
        pass
    return error
