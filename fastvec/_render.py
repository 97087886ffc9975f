"""Frames of native envs: Atari's from the emulator's screen (C++), classic control's drawn by gymnasium's own
classes (pygame) from each env's current state, so that a frame is the one gymnasium draws for that state."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

# Each classic env: gymnasium's class (module, name) and the state it draws, from one observation.
_CLASSIC: dict[str, tuple[str, str, Callable[[np.ndarray], np.ndarray]]] = {
    "CartPole-v1": ("gymnasium.envs.classic_control.cartpole", "CartPoleEnv", lambda o: o),
    "MountainCar-v0": ("gymnasium.envs.classic_control.mountain_car", "MountainCarEnv", lambda o: o),
    "MountainCarContinuous-v0": (
        "gymnasium.envs.classic_control.continuous_mountain_car",
        "Continuous_MountainCarEnv",
        lambda o: o,
    ),
    # Acrobot's observation is (cos th1, sin th1, cos th2, sin th2, dth1, dth2); Pendulum's (cos th, sin th, dth).
    "Acrobot-v1": (
        "gymnasium.envs.classic_control.acrobot",
        "AcrobotEnv",
        lambda o: np.array([np.arctan2(o[1], o[0]), np.arctan2(o[3], o[2]), o[4], o[5]], dtype=np.float64),
    ),
    "Pendulum-v1": (
        "gymnasium.envs.classic_control.pendulum",
        "PendulumEnv",
        lambda o: np.array([np.arctan2(o[1], o[0]), o[2]], dtype=np.float64),
    ),
}


def can_render(env_id: str, native_frames: bool) -> bool:
    """Whether ``env_id``'s native env has frames: its own (Atari) or gymnasium's drawing of its state."""
    return native_frames or env_id in _CLASSIC


def render_fps(env_id: str, atari: bool) -> int:
    """Frames per second a video of ``env_id`` plays at: gymnasium's class's (ale-py's 30 for Atari)."""
    return 30 if atari else int(_gymnasium_class(env_id).metadata["render_fps"])


def _gymnasium_class(env_id: str) -> Any:
    import importlib

    module, name, _ = _CLASSIC[env_id]
    return getattr(importlib.import_module(module), name)


@functools.cache
def _drawer(env_id: str) -> Any:
    """gymnasium's env of ``env_id`` in rgb_array mode, kept to draw states (one per id and process)."""
    import os

    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")  # pygame.init() (Pendulum's render) opens no sound device
    return _gymnasium_class(env_id)(render_mode="rgb_array")


def draw(env_id: str, observations: np.ndarray) -> np.ndarray:
    """The frames gymnasium draws for the states behind ``observations`` (one row per env, at least one):
    ``(n, H, W, 3)``."""
    env = _drawer(env_id)
    to_state = _CLASSIC[env_id][2]
    frames = []
    for o in observations:
        env.unwrapped.state = to_state(np.asarray(o, dtype=np.float64))
        if env_id == "Pendulum-v1":
            env.unwrapped.last_u = None  # the torque arrow: the pool does not keep the last action
        frames.append(env.render())
    return np.stack(frames)
