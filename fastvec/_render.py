"""Frames of native envs: Atari's from the emulator's screen and MuJoCo's drawn by MuJoCo's own renderer (C++, in
an EGL context: src/envs/mujoco/render.hpp), classic control's and toy text's drawn by gymnasium's own classes
(pygame) from each env's current state, so that a frame is the one gymnasium draws for that state.

Which class draws an env is gymnasium's registry's answer for the env's id (a native env is a port of gymnasium's
env of the same id); the classic-control family (the registry's family ``""``) is drawn so from its observations,
where gymnasium has the id, and the toy-text family from the render state its envs write (their observation and
what else a frame shows: the last action, Blackjack's dealer card's suit).

Box2D's LunarLander and BipedalWalker are drawn by their gymnasium classes' own ``render()``, on an instance made
without ``__init__`` (no Box2D world) whose bodies are stand-ins for pybox2d's, holding the shapes and transforms
the C++ env exports (src/envs/box2d/render_state.hpp): ``transform * v`` is Box2D's float32 b2Mul and a vector
times a scalar a float32 product, as pybox2d computes them, so the frame is the one gymnasium draws. What the
reference's ``render()`` changes in its env (LunarLander's particles age and die, BipedalWalker counts its renders
to pick the lidar ray it draws) the C++ env does too as it exports its state, once a frame.
"""

from __future__ import annotations

import functools
import inspect
import math
import types
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
    return (
        native_frames
        or (lookup(env_id).family in ("", "toy_text") and env_id in gymnasium.registry)
        or box2d_drawn(env_id)
    )


#: gymnasium's Box2D classes that :func:`draw_box2d` draws, by name.
_BOX2D_CLASSES = ("LunarLander", "BipedalWalker")


def box2d_drawn(env_id: str) -> bool:
    """Whether ``env_id`` is a native Box2D env that :func:`draw_box2d` draws (told by gymnasium's entry point, without
    importing gymnasium's Box2D module, which needs pybox2d)."""
    if lookup(env_id).family != "box2d" or env_id not in gymnasium.registry:
        return False
    entry_point = gymnasium.spec(env_id).entry_point
    return isinstance(entry_point, str) and entry_point.rpartition(":")[2] in _BOX2D_CLASSES


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


class _Vec2(tuple[float, float]):
    """pybox2d's b2Vec2 as render() uses it: a pair of floats (a point for pygame) that a scalar multiplies in
    float32."""

    def __mul__(self, a: Any) -> _Vec2:  # type: ignore[override]
        f = np.float32(a)
        return _Vec2((float(np.float32(self[0]) * f), float(np.float32(self[1]) * f)))


class _Transform:
    """A body's b2Transform: ``transform * v`` is Box2D's b2Mul, in float32 and in its order."""

    def __init__(self, px: float, py: float, s: float, c: float) -> None:
        self.px, self.py, self.s, self.c = np.float32(px), np.float32(py), np.float32(s), np.float32(c)

    def __mul__(self, v: Any) -> _Vec2:
        x, y = np.float32(v[0]), np.float32(v[1])
        return _Vec2((float((self.c * x - self.s * y) + self.px), float((self.s * x + self.c * y) + self.py)))


class _Shape:
    """A polygon's or an edge's shape: its vertices as Box2D holds them (after b2PolygonShape.Set's ordering)."""

    def __init__(self, vertices: list[tuple[float, float]]) -> None:
        self.vertices = vertices


class _Fixture:
    def __init__(self, body: _Body, shape: Any) -> None:
        self.body, self.shape = body, shape


class _Body:
    """A body of one fixture, as render() reads it: ``fixtures``, ``transform``, ``color1``/``color2``, a
    particle's ``ttl``."""

    def __init__(self, transform: _Transform, shape: Any, color1: Any = None, color2: Any = None) -> None:
        self.transform = transform
        self.fixtures = [_Fixture(self, shape)]
        self.color1, self.color2 = color1, color2
        self.ttl = 0.0


class _World:
    """The world's one method render() calls: _clean_particles destroys the particles it removes (the C++ env
    removed them as it exported its state)."""

    def DestroyBody(self, body: Any) -> None:
        pass


class _Draws:
    """np_random for _generate_clouds: numpy's uniform(low, high), low + (high - low) * u, over the C++ env's
    draws u."""

    def __init__(self, draws: list[float]) -> None:
        self._draws = iter(draws)

    def uniform(self, low: float = 0.0, high: float = 1.0) -> float:
        return low + (high - low) * next(self._draws)


class _Reader:
    """Reads a render state (int64 values; reals are float64 bit patterns) in order."""

    def __init__(self, state: np.ndarray, circle_shape: Callable[..., Any]) -> None:
        self._ints = np.ascontiguousarray(state, dtype=np.int64)
        self._reals = self._ints.view(np.float64)
        self._at = 0
        self._circle_shape = circle_shape

    def integer(self) -> int:
        self._at += 1
        return int(self._ints[self._at - 1])

    def reals(self, n: int) -> list[float]:
        self._at += n
        return self._reals[self._at - n : self._at].tolist()

    def body(self, color1: Any = None, color2: Any = None) -> _Body:
        """A body (render_state.hpp's RenderWriter::body)."""
        n = self.integer()
        transform = _Transform(*self.reals(4))
        if n < 0:
            x, y, radius = self.reals(3)
            return _Body(transform, _circle(self._circle_shape, radius, x, y), color1, color2)
        v = self.reals(2 * n)
        return _Body(transform, _Shape(list(zip(v[0::2], v[1::2], strict=True))), color1, color2)


_CIRCLES: dict[tuple[float, float, float], Any] = {}


def _circle(circle_shape: Callable[..., Any], radius: float, x: float, y: float) -> Any:
    """pybox2d's own circleShape (render() tells circles by their type), one per radius and centre."""
    key = (radius, x, y)
    if key not in _CIRCLES:
        _CIRCLES[key] = circle_shape(radius=radius, pos=(x, y))
    return _CIRCLES[key]


def _lunar_lander(env: Any, module: Any, r: _Reader) -> None:
    """Puts a LunarLander stand-in into the state a C++ env exported (lunar_lander.hpp's write_render_state); the
    terrain as the reference's reset() makes its sky polygons and helipad."""
    W, H, CHUNKS = module.VIEWPORT_W / module.SCALE, module.VIEWPORT_H / module.SCALE, 11
    smooth_y = r.reals(CHUNKS)
    chunk_x = [W / (CHUNKS - 1) * i for i in range(CHUNKS)]
    env.helipad_x1 = chunk_x[CHUNKS // 2 - 1]
    env.helipad_x2 = chunk_x[CHUNKS // 2 + 1]
    env.helipad_y = H / 4
    env.sky_polys = []
    for i in range(CHUNKS - 1):
        p1 = (chunk_x[i], smooth_y[i])
        p2 = (chunk_x[i + 1], smooth_y[i + 1])
        env.sky_polys.append([p1, p2, (p2[0], H), (p1[0], H)])
    lander = r.body((128, 102, 230), (77, 77, 128))
    legs = [r.body((128, 102, 230), (77, 77, 128)) for _ in range(2)]
    env.drawlist = [lander, *legs]
    env.particles = []
    for _ in range(r.integer()):
        ttl = r.reals(1)[0]
        particle = r.body()
        particle.ttl = ttl
        env.particles.append(particle)


def _bipedal_walker(env: Any, module: Any, r: _Reader) -> None:
    """Puts a BipedalWalker stand-in into the state a C++ env exported (bipedal_walker.hpp's write_render_state): the
    terrain's polygons and the clouds as the reference's reset() makes them, the lidar and scroll as its step()."""
    env.lidar_render = r.integer()
    hits = [(r.integer(), *r.reals(2)) for _ in range(10)]
    terrain_y = r.reals(module.TERRAIN_LENGTH)
    terrain_x = [i * module.TERRAIN_STEP for i in range(module.TERRAIN_LENGTH)]
    env.terrain_poly = []
    for i in range(module.TERRAIN_LENGTH - 1):
        poly = [(terrain_x[i], terrain_y[i]), (terrain_x[i + 1], terrain_y[i + 1])]
        poly += [(poly[1][0], 0), (poly[0][0], 0)]
        env.terrain_poly.append((poly, (102, 153, 76)))
    env._np_random = _Draws(r.reals((module.TERRAIN_LENGTH // 20) * 11))
    env._generate_clouds()
    env._np_random = None
    env.legs = []
    for i in (-1, +1):
        color1, color2 = (153 - i * 25, 76 - i * 25, 127 - i * 25), (102 - i * 25, 51 - i * 25, 76 - i * 25)
        env.legs += [r.body(color1, color2), r.body(color1, color2)]  # the leg, its lower part
    env.hull = r.body((127, 51, 229), (76, 76, 127))
    env.terrain = []
    edges = 0
    for _ in range(r.integer()):  # the edges (last made first), then the obstacles
        body = r.body()
        if len(body.fixtures[0].shape.vertices) == 2:
            i = module.TERRAIN_LENGTH - 2 - edges
            body.color1 = body.color2 = (76, 255 if i % 2 == 0 else 204, 76)
            edges += 1
        else:
            body.color1, body.color2 = (255, 255, 255), (153, 153, 153)
        env.terrain.append(body)
    env.drawlist = env.terrain + env.legs + [env.hull]
    pos = (float(env.hull.transform.px), float(env.hull.transform.py))  # hull.position, as step() read it
    env.lidar = [
        types.SimpleNamespace(
            p1=pos,
            p2=(x, y)  # the hit point the ray callback kept, else the ray's end
            if hit
            else (
                pos[0] + math.sin(1.5 * i / 10.0) * module.LIDAR_RANGE,
                pos[1] - math.cos(1.5 * i / 10.0) * module.LIDAR_RANGE,
            ),
        )
        for i, (hit, x, y) in enumerate(hits)
    ]
    env.scroll = pos[0] - module.VIEWPORT_W / module.SCALE / 5


_BOX2D_STATE: dict[str, Callable[[Any, Any, _Reader], None]] = {
    "LunarLander": _lunar_lander,
    "BipedalWalker": _bipedal_walker,
}


@functools.cache
def _box2d_drawer(env_id: str) -> Any:
    """A stand-in of gymnasium's Box2D class of ``env_id``: an instance made without ``__init__`` (no Box2D world),
    in rgb_array mode; one per id and process."""
    import os

    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    cls = _gymnasium_class(env_id)
    env = object.__new__(cls)
    env.render_mode = "rgb_array"
    env.screen = env.clock = env.surf = None
    env.world = _World()
    return env


def draw_box2d(env_id: str, states: np.ndarray) -> np.ndarray:
    """The frames gymnasium's LunarLander or BipedalWalker class draws for the render states ``states`` of a
    native env (one row per env, at least one): ``(n, H, W, 3)``."""
    import sys

    env = _box2d_drawer(env_id)
    module = sys.modules[type(env).__module__]
    set_state = _BOX2D_STATE[type(env).__name__]
    frames = []
    for state in states:
        set_state(env, module, _Reader(state, module.circleShape))
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
