"""The Python-env pool's arguments, checked and normalised: what ``env_id`` gives (one constructor per env), the
number of worker processes, and a batch of actions checked against the action space before it is sent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np

from fastvec._args import PoolShape, check_int
from fastvec.pyenv.layout import flatten

MAX_ENVS = 1 << 16  # the most envs one Python-env pool takes (fastvec.make and RLlib's configure check it)


class _GymMake:
    """``gymnasium.make(env_id, **kwargs)`` as a picklable callable."""

    def __init__(self, env_id: str, kwargs: dict[str, Any]) -> None:
        self.env_id, self.kwargs = env_id, kwargs

    def __call__(self) -> gym.Env:
        return gym.make(self.env_id, **self.kwargs)


def env_constructors(
    env_id: str | Callable[[], gym.Env] | Sequence[Callable[[], gym.Env]],
    num_envs: int | None,
    max_episode_steps: int | None,
    env_kwargs: dict[str, Any],
) -> tuple[list[Callable[[], gym.Env]], int | None]:
    """One constructor per env from ``fastvec.pyenv.make``'s ``env_id``, ``num_envs`` and ``env_kwargs``, and the
    episode limit (a gymnasium id's own when ``max_episode_steps`` is None)."""
    env = env_id
    if isinstance(env, str):
        env_id = env.removeprefix("fastvec/")
        try:
            spec = gym.spec(env_id)
        except gym.error.Error as exc:  # NameNotFound, VersionNotFound, ...: keep gymnasium's suggestions
            raise ValueError(f"unknown env_id {env_id!r}: {exc}") from exc
        if max_episode_steps is None:
            max_episode_steps = spec.max_episode_steps
        kwargs = dict(env_kwargs)
        if max_episode_steps is not None:
            kwargs["max_episode_steps"] = max_episode_steps
        num_envs = 1 if num_envs is None else check_int("num_envs", num_envs, 1, MAX_ENVS)
        env_fns: list[Callable[[], gym.Env]] = [_GymMake(env_id, kwargs)] * num_envs
    else:
        if env_kwargs:
            raise TypeError(
                f"keyword arguments {sorted(env_kwargs)} are passed to gymnasium.make and need an env id; "
                "a callable takes its own arguments"
            )
        if callable(env):
            num_envs = 1 if num_envs is None else check_int("num_envs", num_envs, 1, MAX_ENVS)
            env_fns = [env] * num_envs
        elif isinstance(env, Sequence) and len(env) > 0 and all(callable(f) for f in env):
            if num_envs is not None and num_envs != len(env):
                raise ValueError(f"num_envs ({num_envs}) must equal the number of env constructors ({len(env)})")
            env_fns = list(cast("Sequence[Callable[[], gym.Env]]", env))
        else:
            raise TypeError(
                "env_id must be a gymnasium id, a callable returning a gymnasium.Env, or a non-empty list of such "
                f"callables; got {type(env).__name__}"
            )
    return env_fns, max_episode_steps


def count_workers(num_workers: int | str | None, num_envs: int) -> int:
    """The number of worker processes for ``num_envs`` envs: ``num_workers`` as given (an int, or "per_env"), or
    the default.

    The default is for envs that compute: one worker fewer than the cores (the parent is busy too: copying
    batches, the policy), so that no two processes fight for a core. A worker steps its envs one after another,
    so envs that wait (I/O, a simulator over a socket, ``time.sleep``) wait one after another: they want
    ``num_workers="per_env"``, one process per env as SubprocVecEnv, SubprocVectorEnv and AsyncVectorEnv run
    them. Measured with ``benchmarks/bench_pyenv.py`` (docs/performance.md): envs that sleep step several times
    faster "per_env" than by default, about as fast as SubprocVecEnv; envs that compute step slower "per_env",
    the more so the more envs (every step wakes a process per env). One process per env costs computing envs
    speed (and a process's memory per env); one worker per core costs waiting envs a factor of their number.
    The pool cannot tell beforehand which kind it was given, and
    guessing from the first steps' timings would change its speed and its processes behind the user's back
    (and misjudge envs that wait only sometimes), so the default stays the one that is right for envs that
    compute, and "per_env" is the documented answer for envs that wait."""
    if num_workers is None:
        return PoolShape(num_envs, num_envs).default_threads(processes=True)  # (the same in async mode)
    if isinstance(num_workers, str):
        if num_workers != "per_env":
            raise ValueError(f"num_workers must be an int or 'per_env', got {num_workers!r}")
        return num_envs
    return check_int("num_workers", num_workers, 1, num_envs)


def check_actions(
    space: gym.Space, leaf_spaces: list[gym.Space], simple: bool, batched: gym.Space, actions: Any, rows: int
) -> list[Any]:
    """``actions`` for ``rows`` envs of action space ``space`` as one array per leaf space (``simple``: the space is
    its one leaf, not nested), each of the shape and dtype the shared memory keeps, or for a dynamic leaf (Text,
    Graph, ...) a tuple of the ``rows`` envs' values; ``batched`` is the batched space, for the message.

    The envs get their actions as gymnasium's vector envs pass them, and decide themselves: a value outside the
    space (a Discrete action out of range, NaN, a Box action out of bounds) reaches the env, whose own check (or
    not) answers it. Refused here is only what the shared memory cannot hold: another shape, a dtype of another
    kind (text, complex, floats for integer spaces), a value the space's dtype cannot represent."""
    if simple:
        values = [actions]
    else:
        try:
            values = flatten(space, actions, [])
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise TypeError(f"actions must be batched like the action space {batched}: {exc}") from exc
    return [_check_leaf(leaf, value, rows) for leaf, value in zip(leaf_spaces, values, strict=True)]


def _check_leaf(space: gym.Space, value: Any, rows: int) -> Any:
    if not isinstance(space, (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        # A dynamic leaf (Text, Graph, ...): one object per env, as gymnasium's iterate takes them; the env decides.
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__") or not hasattr(value, "__getitem__"):
            raise TypeError(
                f"actions for {space} must be a tuple of {rows} per-env values (as gymnasium batches this space), "
                f"got a {type(value).__name__}"
            )
        if len(value) != rows:
            raise ValueError(f"actions for {space} must hold {rows} per-env values, got {len(value)}")
        return tuple(value[i] for i in range(rows))
    arr = np.asarray(value)
    dtype = np.dtype(cast(Any, space.dtype))
    if isinstance(space, gym.spaces.Box):
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"actions for a Box space must be real numbers, got dtype {arr.dtype}")
        shape = (rows, *space.shape)
        if arr.shape != shape and not (space.shape == (1,) and arr.shape == (rows,)):
            raise ValueError(f"actions must have shape {shape}, got {arr.shape}")
        if arr.dtype.kind == "f" and dtype.kind == "f":
            # What the env receives is the space's dtype: a finite value that overflows it (1e300 as float32)
            # cannot be held; NaN and infinities given are the env's to judge.
            with np.errstate(over="ignore", invalid="ignore"):
                as_env = arr.astype(dtype, copy=False)
            lost = np.isfinite(arr) & ~np.isfinite(as_env)
            if lost.any():
                where = np.argwhere(lost.reshape(rows, -1))[0]
                got = float(arr.reshape(rows, -1)[tuple(where)])
                raise ValueError(
                    f"actions must be representable as {dtype}, the action space's dtype, which the pool's shared "
                    f"memory holds: got {got!r} for env row {int(where[0])}"
                )
            arr = as_env
        return arr.reshape(shape)
    if arr.dtype.kind not in "iub":
        raise TypeError(f"actions for {space} must be integers, got dtype {arr.dtype}")
    want = (rows,) if isinstance(space, gym.spaces.Discrete) else (rows, *cast("tuple[int, ...]", space.shape))
    if arr.shape != want:
        raise ValueError(f"actions must have shape {want}, got {arr.shape}")
    if arr.dtype != dtype and arr.size and arr.dtype.kind != "b":
        info = np.iinfo(dtype)
        bad = (arr < info.min) | (arr > info.max)
        if bad.any():
            where = np.argwhere(bad)[0]
            index = ", ".join(str(i) for i in where)
            raise ValueError(
                f"actions[{index}] = {arr[tuple(where)]} cannot be held as {dtype}, the dtype of {space}, which the "
                "pool's shared memory holds"
            )
    return arr
