"""Frames of native envs: Atari's from the emulator's screen and MuJoCo's drawn by MuJoCo's own renderer (C++, in
an EGL context: src/envs/mujoco/render.hpp), classic control's and toy text's drawn by gymnasium's own classes
(pygame) from each env's current state, so that a frame is the one gymnasium draws for that state.

Which class draws an env is gymnasium's registry's answer for the env's id (a native env is a port of gymnasium's
env of the same id); the classic-control family (the registry's family ``""``) is drawn so from its observations,
where gymnasium has the id, and the toy-text family from the render state its envs write (their observation and
what else a frame shows: the last action, Blackjack's dealer card's suit).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium
import numpy as np

from fastvec.registry import EnvEntry, lookup


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
    """Whether ``env_id``'s native env has frames: its own (Atari, MuJoCo) or gymnasium's drawing of its state."""
    return native_frames or (lookup(env_id).family in ("", "toy_text") and env_id in gymnasium.registry)


def render_fps(env_id: str, atari: bool) -> int:
    """Frames per second a video of ``env_id`` plays at: gymnasium's class's (ale-py's 30 for Atari; a MuJoCo env's,
    which gymnasium's sets from its dt, with the default model and frame_skip); a dm_control task's, one frame per
    control step of its default model."""
    if atari:
        return 30
    if lookup(env_id).family == "dm_control":
        return _dm_control_fps(env_id)
    metadata = _gymnasium_class(env_id).metadata
    return int(metadata["render_fps"]) if "render_fps" in metadata else _mujoco_fps(env_id)


@functools.cache
def _mujoco_fps(env_id: str) -> int:
    """gymnasium's MujocoEnv metadata["render_fps"], int(np.round(1.0 / dt)), of ``env_id``'s default options."""
    import mujoco

    from fastvec.mujoco_models import model_path

    options = lookup(env_id).options
    timestep = mujoco.MjModel.from_xml_path(str(model_path(options["xml_file"]))).opt.timestep
    return int(np.round(1.0 / (timestep * options["frame_skip"])))


@functools.cache
def _dm_control_fps(env_id: str) -> int:
    import fastvec._core as _core
    from fastvec.dm_control_models import model_path

    entry = lookup(env_id)
    texts = {"xml_file": str(model_path(entry.options["xml_file"]))}
    return int(np.round(1.0 / _core.control_timestep(entry.native, {}, texts, {})))


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


def _toy_text_state(env: Any, state: np.ndarray) -> None:
    """Puts gymnasium's toy-text env into the state a native env wrote (src/envs/toy_text/*.hpp's
    write_render_state)."""
    name = type(env).__name__
    if name == "BlackjackEnv":
        player_sum, dealer_card, usable_ace, suit, face = (int(v) for v in state)
        # a hand the reference's _get_obs sees as (player_sum, usable_ace): an ace and the rest, or the sum
        env.player = [1, player_sum - 11] if usable_ace else [player_sum]
        env.dealer = [dealer_card]
        env.dealer_top_card_suit = "CDHS"[suit]
        env.dealer_top_card_value_str = (
            "A" if dealer_card == 1 else "JQK"[face] if dealer_card == 10 else str(dealer_card)
        )
        return
    env.s = int(state[0])
    env.lastaction = None if state[1] < 0 else int(state[1])
    if name == "TaxiEnv":
        env.taxi_orientation = int(state[2])


_TOY_TEXT_DRAWERS: dict[tuple[str, str], Any] = {}


def draw_toy_text(env_id: str, keywords: Mapping[str, Any], states: np.ndarray) -> np.ndarray:
    """The frames gymnasium's toy-text class of ``env_id``, made with the env's keywords (its map), draws for the
    render states ``states`` (one row per env, at least one): ``(n, H, W, 3)``."""
    kwargs = {k: v for k, v in keywords.items() if v is not None}  # None: the class's own default
    key = (env_id, repr(sorted(kwargs.items())))
    if key not in _TOY_TEXT_DRAWERS:
        import os

        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
        _TOY_TEXT_DRAWERS[key] = _gymnasium_class(env_id)(render_mode="rgb_array", **kwargs)
    env = _TOY_TEXT_DRAWERS[key]
    frames = []
    for state in states:
        _toy_text_state(env, state)
        frames.append(env.render())
    return np.stack(frames)


#: gymnasium's MujocoEnv rendering keywords that the C++ option table does not hold as they are (``width``,
#: ``height`` and ``max_geom`` it does): :func:`mujoco_camera_options` writes them as its texts.
MUJOCO_CAMERA_KEYWORDS = ("camera_id", "camera_name", "default_camera_config", "visual_options")
#: The attributes of ``mujoco.MjvCamera`` a ``default_camera_config`` may set (gymnasium sets them with setattr).
_CAMERA_FIELDS = ("type", "fixedcamid", "trackbodyid", "lookat", "distance", "azimuth", "elevation", "orthographic")
_INT_CAMERA_FIELDS = ("type", "fixedcamid", "trackbodyid", "orthographic")


def mujoco_camera_options(
    entry: EnvEntry, kwargs: dict[str, Any], render_mode: str | None
) -> tuple[dict[str, str], dict[str, Any]]:
    """Takes gymnasium's camera keywords (:data:`MUJOCO_CAMERA_KEYWORDS`) out of ``kwargs`` for a native MuJoCo env
    (``{}, {}`` for another family), checked (a TypeError or ValueError naming the keyword): the texts of its C++
    options ``camera``, ``camera_config`` and ``visual_options`` (src/envs/mujoco/frames.hpp), and the keywords
    with gymnasium's defaults filled in. ``default_camera_config``'s is the default of gymnasium's env class (e.g.
    Hopper-v5's ``DEFAULT_CAMERA_CONFIG``), looked up (gymnasium's MuJoCo envs imported) only for a render mode."""
    if entry.family != "mujoco":
        return {}, {}
    given = {name: kwargs.pop(name) for name in MUJOCO_CAMERA_KEYWORDS if name in kwargs}
    keywords: dict[str, Any] = {"camera_id": None, "camera_name": None, "visual_options": {}}
    if render_mode is not None:
        keywords["default_camera_config"] = _default_camera_config(entry.id)
    keywords.update(given)
    camera_id, camera_name = keywords["camera_id"], keywords["camera_name"]
    if camera_id is not None and camera_name is not None:
        raise ValueError("Both `camera_id` and `camera_name` cannot be specified at the same time.")
    camera = ""
    if camera_id is not None:
        if not isinstance(camera_id, (int, np.integer)) or isinstance(camera_id, bool):
            raise TypeError(f"{entry.id} option 'camera_id' must be an int or None, got {camera_id!r}")
        camera = f"index:{int(camera_id)}"
    elif camera_name is not None:
        if not isinstance(camera_name, str):
            raise TypeError(f"{entry.id} option 'camera_name' must be a str or None, got {camera_name!r}")
        camera = f"name:{camera_name}"
    texts = {
        "camera": camera,
        "camera_config": _camera_config_text(entry.id, keywords.get("default_camera_config")),
        "visual_options": _visual_options_text(entry.id, keywords["visual_options"]),
    }
    return texts, keywords


def _default_camera_config(env_id: str) -> dict[str, Any] | None:
    """The ``default_camera_config`` gymnasium's env class of ``env_id`` takes by default (a copy)."""
    default = _class_camera_config(env_id)
    return None if default is None else {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in default.items()}


@functools.cache
def _class_camera_config(env_id: str) -> Any:
    parameter = inspect.signature(_gymnasium_class(env_id)).parameters.get("default_camera_config")
    return None if parameter is None else parameter.default


def _number(env_id: str, what: str, value: Any) -> str:
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
        raise TypeError(f"{env_id} option {what} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{env_id} option {what} must be finite, got {value!r}")
    return repr(number)


def _camera_config_text(env_id: str, config: Any) -> str:
    """``default_camera_config`` as frames.hpp reads it: "key=v[,v,v];..." (None: no config, as gymnasium's)."""
    if config is None:
        return ""
    if not isinstance(config, Mapping):
        raise TypeError(f"{env_id} option 'default_camera_config' must be a dict or None, got {config!r}")
    items = []
    for key, value in config.items():
        what = f"'default_camera_config'[{key!r}]"
        if key not in _CAMERA_FIELDS:
            raise ValueError(
                f"{env_id} option 'default_camera_config' sets attributes of mujoco.MjvCamera "
                f"({', '.join(_CAMERA_FIELDS)}), got {key!r}"
            )
        if key == "lookat":
            values = np.asarray(value)
            if values.shape != (3,):
                raise ValueError(f"{env_id} option {what} must hold 3 numbers, got {value!r}")
            items.append(f"{key}={','.join(_number(env_id, what, v.item()) for v in values)}")
            continue
        if key in _INT_CAMERA_FIELDS and not isinstance(value, (int, np.integer, bool)):
            raise TypeError(f"{env_id} option {what} must be an int, got {value!r}")
        items.append(f"{key}={_number(env_id, what, int(value) if isinstance(value, bool) else value)}")
    return ";".join(items)


def _visual_options_text(env_id: str, options: Any) -> str:
    """``visual_options`` ({mujoco.mjtVisFlag: bool}) as frames.hpp reads it: "flag=0|1;..."."""
    if not isinstance(options, Mapping):
        raise TypeError(f"{env_id} option 'visual_options' must be a dict of mujoco.mjtVisFlag: bool, got {options!r}")
    items = []
    for flag, on in options.items():
        if not isinstance(flag, (int, np.integer)) or isinstance(flag, bool):
            raise TypeError(f"{env_id} option 'visual_options' keys must be mujoco.mjtVisFlag values, got {flag!r}")
        if not isinstance(on, (bool, int, np.integer, np.bool_)):
            raise TypeError(f"{env_id} option 'visual_options'[{flag!r}] must be a bool, got {on!r}")
        items.append(f"{int(flag)}={int(bool(on))}")
    return ";".join(items)
