"""Frames of native envs: Atari's from the emulator's screen (C++), classic control's drawn by gymnasium's own
classes (pygame) from each env's current state, so that a frame is the one gymnasium draws for that state.

Which class draws an env is gymnasium's registry's answer for the env's id (a native env is a port of gymnasium's
env of the same id); the classic-control family (the registry's family ``""``) is drawn so, where gymnasium has
the id.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np

from fastvec.registry import lookup


def _acrobot(env: Any, o: np.ndarray) -> None:
    """Acrobot's observation is (cos th1, sin th1, cos th2, sin th2, dth1, dth2), its state (th1, th2, dth1, dth2)."""
    env.state = np.array([np.arctan2(o[1], o[0]), np.arctan2(o[3], o[2]), o[4], o[5]], dtype=np.float64)


def _pendulum(env: Any, o: np.ndarray) -> None:
    """Pendulum's observation is (cos th, sin th, dth), its state (th, dth); it draws its last torque as an arrow,
    which the pool does not keep."""
    env.state = np.array([np.arctan2(o[1], o[0]), o[2]], dtype=np.float64)
    env.last_u = None


# How gymnasium's classic-control classes take the state behind one observation, by class name: the state is
# the observation itself for any other.
_SET_STATE: dict[str, Callable[[Any, np.ndarray], None]] = {"AcrobotEnv": _acrobot, "PendulumEnv": _pendulum}


def can_render(env_id: str, native_frames: bool) -> bool:
    """Whether ``env_id``'s native env has frames: its own (Atari) or gymnasium's drawing of its state."""
    return native_frames or (not lookup(env_id).family and env_id in gymnasium.registry)


def render_fps(env_id: str, atari: bool) -> int:
    """Frames per second a video of ``env_id`` plays at: gymnasium's class's (ale-py's 30 for Atari)."""
    return 30 if atari else int(_gymnasium_class(env_id).metadata["render_fps"])


def _gymnasium_class(env_id: str) -> Any:
    """gymnasium's env class registered as ``env_id``."""
    entry_point = gymnasium.spec(env_id).entry_point
    return gymnasium.envs.registration.load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point


@functools.cache
def _drawer(env_id: str) -> Any:
    """gymnasium's env of ``env_id`` in rgb_array mode, kept to draw states (one per id and process)."""
    import os

    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")  # pygame.init() (Pendulum's render) opens no sound device
    return _gymnasium_class(env_id)(render_mode="rgb_array")


def _set_observed_state(env: Any, o: np.ndarray) -> None:
    env.state = o


def draw(env_id: str, observations: np.ndarray) -> np.ndarray:
    """The frames gymnasium draws for the states behind ``observations`` (one row per env, at least one):
    ``(n, H, W, 3)``."""
    env = _drawer(env_id)
    set_state = _SET_STATE.get(type(env.unwrapped).__name__, _set_observed_state)
    frames = []
    for o in observations:
        set_state(env.unwrapped, np.asarray(o, dtype=np.float64))
        frames.append(env.render())
    return np.stack(frames)
