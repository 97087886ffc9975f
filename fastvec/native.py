"""The native backend: ``fastvec._core.Pool`` (C++ threads) as :class:`NativePool`, what its envs are as Python
sees them, and :func:`make_pool`, the one maker of native pools, which checks the arguments it is made with
(counts, episode limit, render mode, each env's options by kind). :meth:`fastvec.vector.VectorEnv.over_native`
puts a :class:`fastvec.vector.VectorEnv` (or a subclass: fastvec.envpool's) over it."""

from __future__ import annotations

import copy
import math
import os
import secrets
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

import fastvec._core as _core
from fastvec import _render, dm_control_models, native_attrs
from fastvec._args import (
    MODES,
    SET_KINDS,
    PoolShape,
    ResetNeeded,
    check_int,
    check_observation_mode,
    check_timeout,
    refuse_reset_options,
)
from fastvec.mujoco_models import model_path
from fastvec.registry import EnvEntry, lookup
from fastvec.roms import rom_path


def make_pool(
    entry: EnvEntry,
    num_envs: int | None,
    *,
    batch_size: int | None,
    num_threads: int | None,
    seed: int | None,
    autoreset_mode: str,
    max_episode_steps: int | None,
    block_size: int | None,
    env_kwargs: dict[str, Any],
    vector_entry_point: Any,
    info_layout: str = "gymnasium",
    thread_affinity_offset: int = -1,
) -> NativePool:
    """A native pool of ``entry``'s env (what ``fastvec.make`` and ``fastvec.envpool`` make), its arguments checked
    (``seed`` already; ``autoreset_mode``: a name of ``fastvec._args.MODES``; ``env_kwargs``: the env's options,
    ``render_mode`` and ``observation_mode``); ``vector_entry_point``: its spec's, for ``gymnasium.make_vec``.
    ``info_layout="envpool"`` makes each batch's info EnvPool's (``env_id``, ``players``, the env's values, the
    pool's ``elapsed_step``); ``thread_affinity_offset`` >= 0 pins worker ``t`` to allowed CPU
    ``(offset + t) % count`` (EnvPool's)."""
    check_observation_mode(env_kwargs.pop("observation_mode", "same"))  # (a native pool's envs share one space)
    shape = PoolShape.check(check_int("num_envs", 1 if num_envs is None else num_envs, 1, 1 << 24), batch_size)
    adapt_threads = num_threads is None  # the default count is a ceiling the pool adapts to the load (ThreadTuner)
    num_threads = check_int("num_threads", shape.default_threads() if num_threads is None else num_threads, 1, 1024)
    if block_size is not None:
        block_size = check_int("block_size", block_size, 1, shape.num_envs)
        if shape.num_envs % block_size or shape.batch_size % block_size:
            raise ValueError(
                f"block_size must divide num_envs ({shape.num_envs}) and batch_size ({shape.batch_size}), got "
                f"{block_size}"
            )
    if max_episode_steps is not None:
        max_episode_steps = check_int("max_episode_steps", max_episode_steps, 1, 2**31 - 1)
    if "max_cycles" in entry.options:  # MPE: the pool truncates at the env's max_cycles
        cycles = check_int("max_cycles", env_kwargs.get("max_cycles", entry.options["max_cycles"]), 1, 10**9)
        if max_episode_steps is not None and "max_cycles" in env_kwargs and max_episode_steps != cycles:
            raise ValueError(
                f"{entry.id}: max_episode_steps ({max_episode_steps}) and max_cycles ({cycles}) are the same limit; "
                "give one of them"
            )
        if max_episode_steps is None:
            max_episode_steps = cycles
        for name in ("num_agent_neighbors", "num_landmark_neighbors"):
            if name in entry.options and name in env_kwargs and env_kwargs[name] is None:
                env_kwargs[name] = 0  # mpe2's None (every one observed) is the option's 0
    render_mode = check_render_mode(entry, env_kwargs.pop("render_mode", None))
    camera_texts, camera_keywords = _render.mujoco_camera_options(entry, env_kwargs, render_mode)
    options = env_options(entry, env_kwargs)
    options.texts.update(camera_texts)
    if render_mode is not None and _render.box2d_drawn(entry.id):
        options.texts["render_mode"] = render_mode  # the env makes what its frames show (LunarLander's particles)
    if "time_limit" in entry.options:  # dm_control: the pool truncates at the task's time limit, in seconds
        steps = _time_limit_steps(entry, options)
        if max_episode_steps is not None and "time_limit" in env_kwargs and max_episode_steps != steps:
            limit = f"{steps} steps" if steps else "no limit"
            raise ValueError(
                f"{entry.id}: max_episode_steps ({max_episode_steps}) and time_limit ({env_kwargs['time_limit']} s, "
                f"{limit}) are the same limit; give one of them"
            )
        if max_episode_steps is None:
            max_episode_steps = steps
    if max_episode_steps is None:
        max_episode_steps = entry.max_episode_steps
    return NativePool(
        entry,
        shape,
        num_threads,
        adapt_threads=adapt_threads,
        block_size=block_size,
        max_episode_steps=max_episode_steps,
        autoreset_mode=autoreset_mode,
        seed=secrets.randbits(64) if seed is None else seed,  # the streams of envs reset before any seed reached them
        options=options,
        keywords={**entry.options, **camera_keywords, **env_kwargs},
        vector_entry_point=vector_entry_point,
        info_layout=info_layout,
        thread_affinity_offset=thread_affinity_offset,
        render_mode=render_mode,
    )


def _time_limit_steps(entry: EnvEntry, options: EnvOptions) -> int:
    """A dm_control task's time_limit in steps, as its Environment counts them: an episode ends at the first step
    count >= time_limit / control_timestep (ValueError past 2**31 - 1 steps); 0 (no limit) for an infinite one
    (lqr's default)."""
    time_limit = options.numbers.get("time_limit", entry.options["time_limit"])
    if time_limit == math.inf:
        return 0
    if not time_limit > 0:  # dm_control would end every episode at its first step
        raise ValueError(f"{entry.id} option 'time_limit' must be > 0 seconds (or inf: no limit), got {time_limit}")
    control_timestep = _core.control_timestep(entry.native, options.numbers, options.texts, options.ranges)
    steps = math.ceil(time_limit / control_timestep)
    if not 1 <= steps < 2**31:
        raise ValueError(
            f"{entry.id} option 'time_limit' must be a positive number of seconds up to (2**31 - 1) steps of "
            f"{control_timestep} s, got {time_limit}"
        )
    return steps


def check_render_mode(entry: EnvEntry, render_mode: Any) -> str | None:
    """A native env's render_mode: None, or "rgb_array" for an env that has frames (Atari's screen, MuJoCo's
    renderer, classic control, toy text, LunarLander and BipedalWalker drawn by gymnasium); a ValueError naming
    render_mode otherwise."""
    if render_mode is None:
        return None
    modes = render_modes(entry)
    if render_mode not in modes:
        why = ""
        if entry.family == "toy_text" and not modes:  # Taxi-v3 under gymnasium 1.3 and later, Taxi-v4 before
            why = f"; gymnasium draws its toy text, and gymnasium {gym.__version__} has no {entry.id}"
        raise ValueError(
            f"render_mode must be None or one of {modes} for fastvec's native {entry.id} (frames as numpy arrays; "
            f"no window){why}, got {render_mode!r}"
        )
    return render_mode


def render_modes(entry: EnvEntry) -> list[str]:
    native_frames = entry.rom is not None or entry.family in ("mujoco", "dm_control")
    return ["rgb_array"] if _render.can_render(entry.id, native_frames) else []


class NativePool(_core.Pool):
    """The native backend: ``fastvec._core.Pool`` and what its envs are as Python sees them. A native env has no
    Python object: :meth:`env_call` answers the attributes it really has (``spec``, ``render_mode``,
    ``metadata``, the single-env ``observation_space``/``action_space``, and each option it was made with, by
    name; a multi-agent family what its Python env answers, :func:`fastvec.multiagent.native_rows.over_native`;
    the constants of the gymnasium class it ports and Atari's ``get_action_meanings``/``ale``,
    :mod:`fastvec.native_attrs`) and raises an AttributeError naming the env for the rest; nothing can be set."""

    def __init__(
        self,
        entry: EnvEntry,
        shape: PoolShape,
        num_threads: int,
        *,
        adapt_threads: bool,
        block_size: int | None,
        max_episode_steps: int | None,
        autoreset_mode: str,
        seed: int,
        options: EnvOptions,
        keywords: dict[str, Any],
        vector_entry_point: Any,
        info_layout: str,
        thread_affinity_offset: int,
        render_mode: str | None,
    ) -> None:
        """A ``_core.Pool`` of ``entry``'s env, checked by :func:`make_pool`: ``shape``, ``num_threads`` (with
        ``adapt_threads``, a ceiling), ``block_size`` (None: the pool's choice), ``max_episode_steps`` (None: no
        limit), ``autoreset_mode`` (a name of ``fastvec._args.MODES``), ``seed``, the env's ``options`` and, for its
        spec, the ``keywords`` it was made with (defaults filled in) and ``gymnasium.make_vec``'s entry point;
        ``info_layout`` and ``thread_affinity_offset``: ``_core.Pool``'s; ``render_mode``: None or "rgb_array"."""
        super().__init__(
            entry.native,
            shape.num_envs,
            shape.batch_size,
            num_threads,
            block_size or 0,
            max_episode_steps or 0,
            autoreset_mode,
            seed,
            options.numbers,
            options.texts,
            adapt_threads=adapt_threads,
            info_layout=info_layout,
            thread_affinity_offset=thread_affinity_offset,
            range_options=options.ranges,
        )
        spec = self.spec()
        self.shape = shape
        self.entry = entry
        self.autoreset_mode = MODES[autoreset_mode]
        self.max_episode_steps = max_episode_steps or None
        self.label = f"fastvec's native {entry.id}"
        self.single_observation_space = _space("obs", spec)
        self.single_action_space = _space("action", spec)
        #: What :meth:`env_call` answers, by name (VectorEnv.over_native takes the spec, metadata and render mode
        #: from it).
        self.attributes: dict[str, Any] = {
            **keywords,
            # The spec that makes these envs again: gymnasium.make_vec(spec, num_envs=...) and, one env,
            # gymnasium.make(spec) (as the spec fastvec registers with gymnasium, with the options and episode
            # limit of this pool). The single env's entry point is the one registered at import fastvec
            # (fastvec._gymnasium), taken from gymnasium's registry: _single_env builds on fastvec.vector.
            "spec": gym.envs.registration.EnvSpec(
                id=f"fastvec/{entry.id}",
                entry_point=_registered_entry_point(entry.id),
                vector_entry_point=vector_entry_point,
                max_episode_steps=self.max_episode_steps,
                reward_threshold=entry.reward_threshold,
                kwargs=dict(keywords),
            ),
            "render_mode": render_mode,
            "metadata": {"render_modes": render_modes(entry)},
            "observation_space": self.single_observation_space,
            "action_space": self.single_action_space,
        }
        self._ever_reset = np.zeros(self.num_envs, dtype=bool)  # which envs a reset reached (see refused)
        #: Atari: each env's lives as its last received row gave them (the Python façade over the pool writes it,
        #: from the thread that receives, as it takes each batch), for the ``ale`` stand-in's ``lives()``.
        self.lives = np.zeros(self.num_envs, dtype=np.int64) if entry.rom else None
        self._rom_file = options.texts.get("rom")
        self._answers: dict[str, Any] | None = None  # what env_call answers beyond self.attributes (made on demand)
        self._env_id = entry.id
        self._own_frames = bool(spec["render_shape"])  # Atari's screen, MuJoCo's renderer; else drawn by gymnasium
        self._render_state = spec["render_state_size"] > 0  # toy text, Box2D: drawn by gymnasium from a state
        #: Attributes a Python env of the family has but a native env cannot answer, by name: why (env_call's error).
        self.unanswerable: dict[str, str] = {}

    def frames(self, env_id: Any = None) -> np.ndarray:
        """The current frame of each env of ``env_id`` (None: all), ``(n, H, W, 3)`` uint8, none in flight."""
        if env_id is not None and not np.size(env_id):
            raise ValueError("env_id must name at least one env to render, got none")
        if self._own_frames:
            return self.peek(env_id, True)
        if self._render_state and self.entry.family == "box2d":
            return _render.draw_box2d(self._env_id, self.peek(env_id, True))
        if self._render_state:
            keywords = {k: v for k, v in self.attributes.items() if k in self.entry.options}
            return _render.draw_toy_text(self._env_id, keywords, self.peek(env_id, True))
        return _render.draw(self._env_id, self.peek(env_id, False))

    def refused(self, exc: RuntimeError, env_id: Any) -> None:
        """Raises ResetNeeded (from ``exc``) if a step of ``env_id`` (every env if None), which the pool refused,
        named an env that was never reset.

        A step of an env that was never reset is refused by the C++ pool with a RuntimeError; gymnasium's and
        SB3's vector envs pass it to the env, whose OrderEnforcing raises gymnasium's ResetNeeded. Knowing which
        envs were reset, the refusal is raised as fastvec's ResetNeeded (both), without reading the C++ message,
        and at no cost to the steps that go through (the façade calls this only for a refusal)."""
        if self.closed:
            return
        ids = np.arange(self.num_envs) if env_id is None else np.asarray(env_id).reshape(-1)
        fresh = ids[~self._ever_reset[ids]]
        if len(fresh):
            raise ResetNeeded(
                f"env {fresh[0]} has not been reset: cannot call env.step() before calling env.reset(); "
                "call reset() or async_reset() first"
            ) from exc

    def recv_ready(self, rows: int, timeout: float | None) -> _core.Result:
        """A batch (or the envs in flight, when fewer than ``batch_size``), refused as the Python-env pool
        refuses it (``rows`` in [1, envs in flight]): a native env never waits on anything (its step is C++ code
        that returns), so the pool hands out its batches whole; ``timeout`` is checked and has nothing to cut
        short."""
        check_timeout(timeout)
        in_flight = self.in_flight
        if not in_flight:
            raise RuntimeError("recv_ready() would wait forever: no env is in flight")
        check_int("rows", rows, 1, in_flight)
        return self.recv() if in_flight >= self.batch_size else self.recv_rest()

    def env_call(self, env_id: np.ndarray, kind: str, name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        """The attribute ``name`` of each env of ``env_id`` (a copy each, as a worker process would send it)."""
        if kind in SET_KINDS:
            raise AttributeError(
                f"{self.label} has no Python env object: its attributes cannot be set ({name!r}); its options are "
                "keyword arguments of fastvec.make"
            )
        if kind == "is_wrapped":  # no gymnasium wrapper wraps a native env
            return [False] * len(env_id)
        if name in self.unanswerable:
            raise AttributeError(f"{self.label} cannot answer {name!r}: {self.unanswerable[name]}")
        if name in self.attributes:
            value = self.attributes[name]
            if callable(value) and kind != "get":  # a method of the env (a multi-agent env's observation_space(agent))
                return [copy.deepcopy(value(*args, **kwargs)) for _ in range(len(env_id))]
            values = [copy.deepcopy(value) for _ in range(len(env_id))]
        else:
            answers = self._more_answers()
            if name not in answers:
                known = ", ".join(sorted({*self.attributes, *answers}))
                raise AttributeError(f"{self.label} has no attribute {name!r} (it has: {known})")
            values = [answers[name](int(i)) for i in env_id]
        if kind == "get" or not values:
            return values
        if not callable(values[0]):
            if kind == "method":  # SB3's env_method calls what it gets
                raise TypeError(f"{self.label}'s {name!r} is not callable: it is a {type(values[0]).__name__}")
            return values  # gymnasium's call: an attribute that is not callable comes back as it is
        return [v(*args, **kwargs) for v in values]

    def _more_answers(self) -> dict[str, Any]:
        """What the env answers beyond its options, spec, spaces, render mode and metadata, each name as a function
        of the env's id: the constants of gymnasium's class it ports; Atari's ``get_action_meanings`` and ``ale``
        (:mod:`fastvec.native_attrs`). Made the first time it is needed."""
        if self._answers is None:
            answers: dict[str, Any] = {}
            if self.entry.rom is not None and self._rom_file is not None:
                lives = self.lives
                assert lives is not None
                full = bool(self.attributes.get("full_action_space", False))
                facts = native_attrs.atari_facts(self.entry.rom, self._rom_file, full)
                answers.update(native_attrs.atari_answers(facts, lambda i: int(lives[i])))
            else:
                keywords = {k: v for k, v in self.attributes.items() if k in self.entry.options}
                for key, value in native_attrs.class_constants(self.entry.id, keywords).items():
                    if key not in self.attributes:
                        answers[key] = lambda i, value=value: copy.deepcopy(value)
            self._answers = answers
        return self._answers

    def send_reset(self, env_id: Any, seeds: list[int | None], options: dict[str, Any] | None = None) -> None:
        """``_core.Pool.send_reset``; a native env has no ``reset(options=...)``: options are refused."""
        refuse_reset_options(self.label, options)
        super().send_reset(env_id, seeds)
        self._ever_reset[slice(None) if env_id is None else env_id] = True

    def reset_envs(
        self, env_id: Any, seeds: list[int | None], all_rows: bool, options: dict[str, Any] | None = None
    ) -> _core.Result:
        """``_core.Pool.reset_envs`` (the rows of ``env_id``, in env order, or every env's with ``all_rows``);
        options are refused, as by :meth:`send_reset`."""
        refuse_reset_options(self.label, options)
        result = super().reset_envs(env_id, seeds, all_rows)
        self._ever_reset[env_id] = True
        return result


def _registered_entry_point(env_id: str) -> Any:
    """The single-env entry point gymnasium has for ``fastvec/{env_id}`` (None for an id not registered there)."""
    registered = gym.registry.get(f"fastvec/{env_id}")
    return None if registered is None else registered.entry_point


def is_native(env_id: str) -> bool:
    """True when ``env_id`` has a native port; an id gymnasium does not know either gets lookup's error."""
    try:
        lookup(env_id)
    except ValueError:
        if env_id in gym.registry:
            return False
        raise
    return True


@dataclass(frozen=True)
class EnvOptions:
    """A native env's keyword arguments, checked and sorted by kind for ``_core.Pool``: numbers, texts (files
    resolved to paths, ROMs filled in) and (low, high) ranges; its C++ option table fills in the defaults of the
    others and checks ranges."""

    numbers: dict[str, float]
    texts: dict[str, str]
    ranges: dict[str, tuple[float, float]]


def env_options(entry: EnvEntry, kwargs: dict[str, Any]) -> EnvOptions:
    """The keyword arguments for the env, checked and sorted by kind (a TypeError naming an unknown one and the
    accepted ones; a TypeError or ValueError naming a value of the wrong kind)."""
    kinds = {o.name: o.kind for o in entry.option_specs}
    numbers: dict[str, float] = {}
    texts: dict[str, str] = {"rom": str(rom_path(entry.rom))} if entry.rom else {}
    ranges: dict[str, tuple[float, float]] = {}
    for name, value in kwargs.items():
        if name not in entry.options:
            accepted = ", ".join(sorted(entry.options)) or "none"
            raise TypeError(f"{entry.id} got an unexpected keyword argument {name!r} (accepted: {accepted})")
        kind = kinds[name]
        if kind == "file":
            if not isinstance(value, (str, os.PathLike)):
                raise TypeError(f"{entry.id} option {name!r} must be a path (str), got {type(value).__name__}")
            continue  # resolved below, with the default
        if kind == "int|str":
            texts[name] = _index_or_name(entry, name, value)
            continue
        if kind == "text":
            texts[name] = _text(entry, name, value)
            continue
        if kind == "range":
            if not isinstance(value, (tuple, list, np.ndarray)) or len(value) != 2:
                raise TypeError(f"{entry.id} option {name!r} must be a (low, high) pair of numbers, got {value!r}")
            for v in value:
                if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
                    raise TypeError(f"{entry.id} option {name!r} must hold numbers, got {value!r}")
            low, high = (_as_float(entry, name, v) for v in value)
            if math.isnan(low) or math.isnan(high):
                raise ValueError(f"{entry.id} option {name!r} must not hold NaN, got {value!r}")
            ranges[name] = (low, high)
            continue
        if not isinstance(value, (bool, int, float, np.integer, np.floating)):
            raise TypeError(f"{entry.id} option {name!r} must be a number or bool, got {type(value).__name__}")
        number = _as_float(entry, name, value)
        # dm_control's time_limit=float("inf") (lqr's default) is a limit of none; any other infinity is refused
        if not math.isfinite(number) and not (name == "time_limit" and number == math.inf):
            raise ValueError(f"{entry.id} option {name!r} must be finite, got {value}")
        numbers[name] = number
    find_model = dm_control_models.model_path if entry.family == "dm_control" else model_path
    for name, kind in kinds.items():
        if kind == "file":
            texts[name] = str(find_model(kwargs.get(name, entry.options[name]), f"{entry.id} option {name!r}"))
    return EnvOptions(numbers, texts, ranges)


def _as_float(entry: EnvEntry, name: str, value: Any) -> float:
    """``value`` as a float; a ValueError naming the option for an int too large for one."""
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{entry.id} option {name!r} is too large for a float64, got {value}") from None


def _text(entry: EnvEntry, name: str, value: Any) -> str:
    """A text option as its C++ table takes it: a str, None as "", a sequence of str (FrozenLake's desc) as its
    lines joined by newlines, a sequence of numbers (FrozenLake's reward_schedule) as their reprs joined by
    commas (exact: a float's repr reads back as the same float)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, str) and "\n" not in v for v in value):
            return "\n".join(value)
        if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in value):
            numbers = [_as_float(entry, name, v) for v in value]
            if not all(math.isfinite(v) for v in numbers):
                raise ValueError(f"{entry.id} option {name!r} must hold finite numbers, got {value!r}")
            return ",".join(repr(v) for v in numbers)
    raise TypeError(
        f"{entry.id} option {name!r} must be a str, a list of str, a tuple of numbers or None, got {value!r}"
    )


def _index_or_name(entry: EnvEntry, name: str, value: Any) -> str:
    """An index-or-name option (Ant's main_body) as its C++ table takes it: "index:<n>" or "name:<s>"."""
    if isinstance(value, str) and value:
        return f"name:{value}"
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{entry.id} option {name!r} must be an int or a name (str), got {value!r}")
    if value < 0:
        raise ValueError(f"{entry.id} option {name!r} must be a body index >= 0 or a body name, got {value}")
    return f"index:{int(value)}"


def _space(kind: str, spec: dict[str, Any]) -> gym.Space:
    if kind == "obs" and spec["obs_discrete"]:
        # toy text's: Discrete(n), or a Tuple of Discretes (Blackjack's)
        parts: list[gym.Space] = [gym.spaces.Discrete(n) for n in spec["obs_discrete"]]
        return gym.spaces.Tuple(parts) if spec["obs_tuple"] else parts[0]
    if kind == "obs" and spec["obs_fields"]:
        # named fields (dm_control's): a Dict of their arrays, in the env's order (a list keeps it; a dict
        # would be sorted by gymnasium); unbounded, or uint8 frames (dm_control's pixels)
        dtype = np.dtype(spec["obs_dtype"])
        bounds = (0.0, 255.0) if dtype == np.uint8 else (-np.inf, np.inf)
        return gym.spaces.Dict([(name, gym.spaces.Box(*bounds, shape, dtype)) for name, shape in spec["obs_fields"]])
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
