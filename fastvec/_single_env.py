"""One native env as a ``gymnasium.Env``: the entry point of ``gymnasium.make("fastvec/CartPole-v1")``, and so of
``gymnasium.make_vec(..., vectorization_mode="sync" or "async")``.

>>> env = gymnasium.make("fastvec/CartPole-v1")
>>> obs, info = env.reset(seed=0)
>>> obs, reward, terminated, truncated, info = env.step(0)

The env is a one-env native pool without autoreset. As gymnasium's own envs leave it to gymnasium's TimeLimit
wrapper, it does not truncate: ``gymnasium.make`` adds the TimeLimit (at the id's ``max_episode_steps``, or at
``gymnasium.make(id, max_episode_steps=K)``'s), so an episode is truncated once, by the wrapper, at the step where
``fastvec.make(id, num_envs=1)`` truncates it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from fastvec._args import ResetNeeded
from fastvec._render import render_fps
from fastvec.batching import info_rows
from fastvec.native import check_render_mode, render_modes
from fastvec.registry import lookup
from fastvec.vector import MakeNative, make

# The pool's episode limit when TimeLimit is the one that truncates: a step count no episode reaches (the pool
# counts steps in int32; fastvec.make takes no "no limit").
_NO_LIMIT = 2**31 - 1


class NativeEnv(gym.Env):
    """The native env ``env_id`` (``"CartPole-v1"`` or ``"fastvec/CartPole-v1"``) as a gymnasium ``Env``, made with
    the env's options (``frame_skip=...`` for Atari) as keyword arguments; what ``gymnasium.make("fastvec/...")``
    wraps.

    >>> env = NativeEnv("Pong-v5", frame_skip=2)
    >>> obs, info = env.reset(seed=0)

    Seeding as in ``fastvec.make(env_id, num_envs=1)``: ``reset(seed=s)`` gives that pool's trajectory after its
    ``reset(seed=s)``; ``reset()`` starts the env's next episode from its own stream. ``np_random`` is gymnasium's
    (seeded by ``reset(seed=...)``), which the native env does not draw from. ``render_mode="rgb_array"``: ``render()``
    returns the current frame, ``(H, W, 3)`` uint8 (Atari: the emulator's screen; classic control: gymnasium's
    drawing of the state), so gymnasium's ``RecordVideo`` records it. On its own (without ``gymnasium.make``'s
    TimeLimit) the env has no episode limit but a dm_control task's ``time_limit=...``, when one is given.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012  (gymnasium.Env's class attribute)

    def __init__(self, env_id: str, render_mode: str | None = None, **env_kwargs: Any) -> None:
        entry = lookup(env_id)
        check_render_mode(entry, render_mode)
        for name in env_kwargs:
            if name not in entry.options:
                accepted = ", ".join(sorted(entry.options)) or "none"
                hint = (
                    "; the episode limit is gymnasium.make's max_episode_steps=..."
                    if name == "max_episode_steps"
                    else ""
                )
                raise TypeError(
                    f"fastvec/{entry.id} got an unexpected keyword argument {name!r} (accepted: {accepted}){hint}"
                )
        self._pool = make(
            entry.id,
            num_envs=1,
            num_threads=1,
            autoreset_mode="disabled",
            # a dm_control task's time_limit (seconds; inf: none) is the episode limit a user sets on the env itself
            max_episode_steps=None if "time_limit" in env_kwargs else _NO_LIMIT,
            render_mode=render_mode,
            **env_kwargs,
        )
        self.observation_space = self._pool.single_observation_space
        self.action_space = self._pool.single_action_space
        self.render_mode = render_mode
        modes = render_modes(entry)
        self.metadata = {"render_modes": modes}
        if modes:  # (envs without frames have no frame rate)
            self.metadata["render_fps"] = render_fps(entry.id, entry.rom is not None)
        # What gymnasium.make sets on the env it makes (and overwrites with its own): the spec that makes it again.
        self.spec = gym.envs.registration.EnvSpec(
            id=f"fastvec/{entry.id}",
            entry_point=MakeEnv(entry.id),
            vector_entry_point=MakeNative(entry.id),
            reward_threshold=entry.reward_threshold,
            max_episode_steps=None,
            order_enforce=False,
            disable_env_checker=True,
            kwargs=dict(env_kwargs),
        )
        self._label = f"fastvec's native {entry.id}"
        # Why step() must wait for a reset (None: it need not), in gymnasium's OrderEnforcing's words at first.
        self._reset_needed: str | None = "Cannot call env.step() before calling env.reset()"

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Starts an episode (seeded with ``seed``, if given) and returns its first observation and info."""
        if options:
            raise ValueError(f"{self._label} takes no reset options, got {sorted(options, key=str)}")
        super().reset(seed=seed)
        obs, info = self._pool.reset(seed=seed)
        self._reset_needed = None
        return _first(obs), info_rows(info, 1)[0]

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One step with ``action`` (an element of ``action_space``): ``(obs, reward, terminated, truncated,
        info)``, reward a float and the flags bools, as gymnasium's envs return them."""
        if self._reset_needed is not None:
            self._pool.check_open()  # (closed: gymnasium's ClosedEnvironmentError)
            raise ResetNeeded(f"{self._label}: {self._reset_needed}")
        a = np.asarray(action)
        if a.shape != self.action_space.shape:
            raise ValueError(
                f"action for {self.action_space} must have shape {self.action_space.shape}, got shape {a.shape}"
            )
        obs, reward, terminated, truncated, info = self._pool.step(a[np.newaxis])
        done, cut = bool(terminated[0]), bool(truncated[0])
        if done or cut:  # (the pool would refuse the next step: it does not autoreset)
            ended = "terminated" if done else "reached its time_limit"
            self._reset_needed = f"the episode has {ended}; call env.reset() before stepping again"
        return _first(obs), float(reward[0]), done, cut, info_rows(info, 1)[0]

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        """The current frame (``render_mode="rgb_array"``), or None (no render mode)."""
        frames = self._pool.render()
        return None if frames is None else frames[0]

    def close(self) -> None:
        """Closes the env's pool; a second close does nothing."""
        self._pool.close()


@dataclass(frozen=True)
class MakeEnv:
    """``NativeEnv(env_id, ...)`` as an entry point that compares by value (a spec's copies compare equal) and
    pickles (gymnasium's AsyncVectorEnv sends it to its workers)."""

    env_id: str

    def __call__(self, **kwargs: Any) -> NativeEnv:
        return NativeEnv(self.env_id, **kwargs)


def _first(obs: Any) -> Any:
    """The one env's observation, a copy: an array, a dict of arrays (named fields: dm_control's), an np.int64 (a
    Discrete's, as gymnasium's env checker wants it) or a tuple of those (a Tuple's parts: Blackjack's)."""
    if isinstance(obs, dict):
        return {k: np.array(v[0]) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_first(v) for v in obs)
    if obs.ndim == 1 and obs.dtype == np.int64:
        return obs[0]
    return np.array(obs[0])
