"""fastvec.VectorEnv: a gymnasium VectorEnv over the native pool."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from fastvec import _core
from fastvec._args import (
    MODES,
    autoreset_mode_name,
    available_cores,
    check_int,
    check_seed,
    is_int_seed,
    partial_reset_ids,
    reset_options,
)
from fastvec.registry import EnvEntry, lookup, rom_path

if TYPE_CHECKING:
    from fastvec.pyenv import PyVectorEnv

def make(
    env_id: str | Callable[[], gym.Env] | Sequence[Callable[[], gym.Env]],
    num_envs: int | None = None,
    *,
    batch_size: int | None = None,
    num_threads: int | None = None,
    seed: int | None = None,
    autoreset_mode: str | AutoresetMode = "next_step",
    max_episode_steps: int | None = None,
    block_size: int | None = None,
    backend: str = "auto",
    **env_kwargs: Any,
) -> VectorEnv | PyVectorEnv:
    """Makes ``num_envs`` copies of ``env_id`` stepped in a native thread pool (or, for a callable,
    a list of callables, a gymnasium id with no native port, or ``backend="python"``, in the
    Python-env pool of worker processes: :func:`fastvec.pyenv.make`, which also takes
    ``num_workers`` and ``start_method``).

    >>> env = fastvec.make("CartPole-v1", num_envs=4, seed=0)
    >>> obs, info = env.reset()
    >>> obs, reward, terminated, truncated, info = env.step(np.zeros(4, dtype=np.int64))

    ``batch_size < num_envs`` makes the pool asynchronous: ``async_reset()``,
    then ``recv()`` returns the first ``batch_size`` envs to finish and
    ``send(actions, info["env_id"])`` steps exactly those.
    """
    if backend not in ("auto", "native", "python"):
        raise ValueError(f"backend must be 'auto', 'native' or 'python', got {backend!r}")
    if backend == "python" or not isinstance(env_id, str) or (backend == "auto" and not _is_native(env_id)):
        if block_size is not None:
            raise ValueError("block_size applies to the native pool only, not to the Python-env pool")
        from fastvec import pyenv

        if num_threads is not None:
            env_kwargs.setdefault("num_workers", num_threads)
        return pyenv.make(env_id, num_envs, batch_size=batch_size, seed=seed, autoreset_mode=autoreset_mode,
                          max_episode_steps=max_episode_steps, **env_kwargs)
    entry = lookup(env_id)
    num_envs = check_int("num_envs", 1 if num_envs is None else num_envs, 1, 1 << 24)
    batch_size = num_envs if batch_size is None else check_int("batch_size", batch_size, 1, num_envs)
    if num_threads is None:
        # Async: a caller waiting in recv() steps queued envs itself, so one worker fewer than the cores
        # fills them (and leaves the caller a core for its policy); sync: the caller is one of num_threads.
        cores = available_cores() if batch_size == num_envs else max(1, available_cores() - 1)
        num_threads = max(1, min(cores, num_envs))
    num_threads = check_int("num_threads", num_threads, 1, 1024)
    if block_size is not None:
        block_size = check_int("block_size", block_size, 1, num_envs)
        if num_envs % block_size or batch_size % block_size:
            raise ValueError(
                f"block_size must divide num_envs ({num_envs}) and batch_size ({batch_size}), got {block_size}"
            )
    autoreset_mode = autoreset_mode_name(autoreset_mode)
    if max_episode_steps is None:
        max_episode_steps = entry.max_episode_steps or 0
    else:
        max_episode_steps = check_int("max_episode_steps", max_episode_steps, 1, 2**31 - 1)
    options = _env_options(entry, env_kwargs)
    string_options = {"rom": str(rom_path(entry.rom))} if entry.rom else {}
    seeded = seed is not None
    seed = check_seed("seed", seed) if seeded else secrets.randbits(64)
    pool = _core.Pool(
        entry.native, num_envs, batch_size, num_threads, block_size or 0, max_episode_steps, autoreset_mode,
        seed, options, string_options,
    )
    return VectorEnv(pool, entry, MODES[autoreset_mode], max_episode_steps or None)


def _is_native(env_id: str) -> bool:
    """True when ``env_id`` has a native port; an id gymnasium does not know either gets lookup's error."""
    try:
        lookup(env_id)
    except ValueError:
        if env_id in gym.registry:
            return False
        raise
    return True


def _env_options(entry: EnvEntry, kwargs: dict[str, Any]) -> dict[str, float]:
    options = dict(entry.options)
    for name, value in kwargs.items():
        if name not in entry.options:
            accepted = ", ".join(sorted(entry.options)) or "none"
            raise TypeError(f"{entry.id} got an unexpected keyword argument {name!r} (accepted: {accepted})")
        if not isinstance(value, (bool, int, float, np.integer, np.floating)):
            raise TypeError(f"{entry.id} option {name!r} must be a number or bool, got {type(value).__name__}")
        if not np.isfinite(value):
            raise ValueError(f"{entry.id} option {name!r} must be finite, got {value}")
        options[name] = value
    return {k: float(v) for k, v in options.items()}


def _space(kind: str, spec: dict[str, Any]) -> gym.Space:
    if kind == "obs":
        dtype = np.dtype(spec["obs_dtype"])
        shape = tuple(spec["obs_shape"])
        low = np.asarray(spec["obs_low"], dtype=np.float64).reshape(shape).astype(dtype)
        high = np.asarray(spec["obs_high"], dtype=np.float64).reshape(shape).astype(dtype)
        return gym.spaces.Box(low, high, shape, dtype)
    if spec["num_actions"] > 0:
        return gym.spaces.Discrete(spec["num_actions"])
    shape = tuple(spec["action_shape"])
    low = np.asarray(spec["action_low"], dtype=np.float32).reshape(shape)
    high = np.asarray(spec["action_high"], dtype=np.float32).reshape(shape)
    return gym.spaces.Box(low, high, shape, np.float32)


class VectorEnv(gym.vector.VectorEnv):
    """``num_envs`` envs stepped by a native thread pool; made by :func:`fastvec.make`.

    ``info`` is a dict of arrays: ``env_id`` always; when an episode ended,
    ``episode_return``/``episode_length`` with masks ``_episode_return``/
    ``_episode_length``; with ``autoreset_mode="same_step"`` also
    ``final_obs``/``final_info`` as gymnasium defines them; and the env's
    own values, one per env (Atari: ``lives``), after every reset and step.
    """

    def __init__(self, pool: _core.Pool, entry: EnvEntry, autoreset_mode: AutoresetMode,
                 max_episode_steps: int | None) -> None:
        self._pool = pool
        self.entry = entry
        self.num_envs = pool.num_envs
        self.batch_size = pool.batch_size
        self.num_threads = pool.num_threads
        self.block_size = pool.block_size
        self.max_episode_steps = max_episode_steps
        spec = pool.spec()
        self.single_observation_space = _space("obs", spec)
        self.single_action_space = _space("action", spec)
        self._info_names = list(spec["info_names"])
        self.observation_space = batch_space(self.single_observation_space, self.batch_size)
        self.action_space = batch_space(self.single_action_space, self.batch_size)
        self.metadata = {"autoreset_mode": autoreset_mode, "render_modes": []}
        self.render_mode = None
        self.spec = None
        self._mode = autoreset_mode

    @property
    def autoreset_mode(self) -> AutoresetMode:
        return self._mode

    # -- sync API ---------------------------------------------------------

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every env (or, with ``options={"reset_mask": mask}`` or
        ``options={"env_id": ids}``, only some) and returns their observations.

        ``seed`` as an int seeds env ``i`` with ``SeedSequence(seed).spawn(num_envs)[i]``;
        as a list, env ``i`` is seeded as ``gymnasium.make(...).reset(seed=seed[i])`` would be.
        """
        reset_mask, ids = reset_options(options)
        if reset_mask is not None or ids is not None:
            return self._partial_reset(seed, reset_mask, ids)
        seeds = self._seeds(seed, self.num_envs)
        self._pool.drain()
        self._pool.send_reset(None, seeds, False)
        batches = [self._pool.recv() for _ in range(self.num_envs // self.batch_size)]
        if self.num_envs % self.batch_size:
            batches.append(self._pool.recv_rest())
        if len(batches) == 1:
            obs, _, _, _, env_id, _, values = batches[0]
            return obs, self._values({"env_id": env_id}, values)
        env_id = np.concatenate([b[4] for b in batches])
        order = np.argsort(env_id, kind="stable")
        obs = np.concatenate([b[0] for b in batches])[order]
        values = np.concatenate([b[6] for b in batches])[order] if self._info_names else None
        return obs, self._values({"env_id": env_id[order]}, values)

    def step(
        self, actions: Any, env_id: Any = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every env with ``actions`` (one row per env, env order).

        In async mode, ``step(actions, env_id)`` is ``send`` followed by ``recv``.
        """
        if env_id is None:
            return self._result(self._pool.step(actions))
        if self.batch_size == self.num_envs and np.size(env_id) != self.num_envs:
            raise ValueError(
                f"step(actions, env_id) in sync mode must step every env ({self.num_envs}), got {np.size(env_id)} "
                "env ids; make the pool with batch_size < num_envs to step some envs at a time"
            )
        self._pool.send(actions, env_id)
        return self._result(self._pool.recv())

    # -- async API --------------------------------------------------------

    def async_reset(self, seed: int | Sequence[int | None] | None = None, env_id: Any = None) -> None:
        """Starts a reset of every env (or of the idle envs in ``env_id``, with one seed each if any)
        and returns at once; results come from :meth:`recv` (or :meth:`recv_rest`)."""
        if env_id is not None:
            ids = np.asarray(env_id).reshape(-1)
            if is_int_seed(seed):
                raise ValueError("a partial reset takes a list of seeds (one per reset env), not one int seed")
            self._pool.send_reset(ids, self._seeds(seed, len(ids)) if seed is not None else [], False)
            return
        seeds = self._seeds(seed, self.num_envs)
        self._pool.drain()
        self._pool.send_reset(None, seeds, False)

    def send(self, actions: Any, env_id: Any = None) -> None:
        """Queues one step of each env in ``env_id`` (all envs if None) and returns at once."""
        if env_id is None:
            env_id = np.arange(self.num_envs, dtype=np.int32)
        self._pool.send(actions, env_id)

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Waits for the first ``batch_size`` envs to finish; ``info["env_id"]`` says which."""
        return self._result(self._pool.recv())

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def recv_rest(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """In async mode, waits for the envs still in flight when they are fewer than ``batch_size``
        (after sending only some) and returns their rows."""
        return self._result(self._pool.recv_rest())

    def close_extras(self, **kwargs: Any) -> None:
        self._pool.close()

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()

    # -- helpers ----------------------------------------------------------

    def _seeds(self, seed: Any, n: int) -> list[int | None]:
        """Per-env seeds for send_reset; an int seed reseeds the whole pool instead."""
        if seed is None:
            return []
        if is_int_seed(seed):
            seed = check_seed("seed", seed)
            self._pool.drain()
            self._pool.reseed(seed)
            return []
        if isinstance(seed, (str, bytes)) or not isinstance(seed, Sequence | np.ndarray):
            raise TypeError(f"seed must be an int, a list of ints (or None), or None; got {type(seed).__name__}")
        if len(seed) != n:
            raise ValueError(f"seed: a list of seeds needs one per env ({n}), got {len(seed)}")
        return [None if s is None else check_seed(f"seed[{i}]", s) for i, s in enumerate(seed)]

    def _partial_reset(self, seed: Any, reset_mask: Any, ids: Any) -> tuple[np.ndarray, dict[str, Any]]:
        mask_ids = partial_reset_ids(reset_mask, self.num_envs, self.batch_size, seed)
        if mask_ids is not None:
            ids = mask_ids
        else:
            ids = np.asarray(ids)
            if ids.size == 0:
                ids = ids.astype(np.int64)  # [] is float64 to numpy
            if ids.ndim == 0:
                ids = ids.reshape(1)
        seeds = self._seeds(seed, len(ids)) if seed is not None else []
        self._pool.send_reset(ids, seeds, True)
        obs, _, _, _, env_id, _, values = self._pool.recv()
        if reset_mask is not None:
            return obs, self._values({"env_id": env_id}, values)
        return obs[ids], self._values({"env_id": env_id[ids]}, None if values is None else values[ids])

    def _values(self, info: dict[str, Any], values: np.ndarray | None) -> dict[str, Any]:
        for k, name in enumerate(self._info_names):
            info[name] = values[:, k]
        return info

    def _result(self, r: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, reward, terminated, truncated, env_id, extras, values = r
        info: dict[str, Any] = {"env_id": env_id}
        if values is not None:
            self._values(info, values)
        if extras is not None:
            done, ep_return, ep_length, final_obs, final_values = extras
            stats = {"episode_return": ep_return, "_episode_return": done,
                     "episode_length": ep_length, "_episode_length": done}
            info.update(stats)
            if final_obs is not None:
                boxed = np.full(len(done), None, dtype=object)
                for i in np.flatnonzero(done):
                    boxed[i] = final_obs[i]
                info["final_obs"], info["_final_obs"] = boxed, done
                # The info of the step that ended each episode: its statistics and the env's values
                # (info itself has the new episode's).
                final_info = dict(stats)
                for k, name in enumerate(self._info_names):
                    final_info[name], final_info[f"_{name}"] = final_values[:, k], done
                info["final_info"], info["_final_info"] = final_info, done
        return obs, reward, terminated, truncated, info
