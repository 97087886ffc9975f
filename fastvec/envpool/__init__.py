"""EnvPool's API over fastvec's native pools: a script written for EnvPool runs with one changed import.

>>> import fastvec.envpool as envpool                  # was: import envpool
>>> env = envpool.make("Pong-v5", env_type="gymnasium", num_envs=8, seed=0)
>>> obs, info = env.reset()                            # obs: (8, 4, 84, 84); info["env_id"], info["lives"], ...
>>> obs, rew, terminated, truncated, info = env.step(np.zeros(8, dtype=np.int32))

What EnvPool 1.2.x gives, as it gives it: ``make``/``make_gymnasium``/``make_gym``/``make_dm``,
``make_spec``, ``list_all_envs``; single-env ``observation_space``/``action_space``; ``env.spec``
and ``env.config`` with EnvPool's config names; EnvPool's defaults where they differ from gymnasium
v5's (Atari: ``use_fire_reset=True``, ``repeat_action_probability=0``; ``seed=42``); info keys
``env_id``, ``players``, ``elapsed_step`` and, for Atari, ``lives``, ``reward`` (unclipped) and
``terminated`` (game over); ``step(actions, env_id)`` of some envs of a sync pool; the async
``async_reset``/``send``/``recv``; ``render_mode="rgb_array"`` and ``render(env_ids)``.
``env_type="gym"`` is EnvPool 1.2.x's gym API, which is gymnasium's; the 0.6-0.8 gym API CleanRL's
EnvPool scripts were written for (``reset()`` -> obs, ``step()`` -> ``(obs, reward, done, info)``)
is :mod:`fastvec.envpool.legacy`'s.

Where fastvec differs from EnvPool (the README lists it): ``reset(seed=...)`` reseeds (EnvPool
ignores it with a warning); a dm_env ``TimeStep`` keeps ``discount`` 1 when an episode is truncated
(EnvPool's is 0); the trajectories are fastvec's envs', not EnvPool's (CartPole draws its start
state as gymnasium does); with ``episodic_life``, ``elapsed_step`` counts a life's steps (EnvPool's,
the game's); there is no ``ram`` (Atari) or ``state`` (Acrobot) info key; classic control's frames are
gymnasium's drawings (pygame), EnvPool's its own; only the ids fastvec runs natively exist
(``list_all_envs()``).
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from fastvec._args import check_env_ids, check_int, check_seed, reset_mask_ids, reset_options
from fastvec._core import EnvError
from fastvec.registry import EnvEntry, list_envs, lookup
from fastvec.vector import VectorEnv, make_native

__all__ = [
    "DMEnvPool",
    "EnvPoolSpec",
    "GymnasiumEnvPool",
    "LegacyGymEnvPool",
    "list_all_envs",
    "make",
    "make_dm",
    "make_gym",
    "make_gymnasium",
    "make_spec",
]

ENV_TYPES = ("gymnasium", "gym", "dm")

# EnvPool's config keys every env has, in EnvPool's order, with its defaults (base_path: where EnvPool finds its
# assets, kept as given: fastvec needs none).
_COMMON: dict[str, Any] = {
    "num_envs": 1,
    "batch_size": 0,
    "num_threads": 0,
    "max_num_players": 1,
    "thread_affinity_offset": -1,
    "base_path": "",
    "seed": 42,
    "env_seed": [],
    "gym_reset_return_info": True,
    "max_episode_steps": None,  # the env's
}
# EnvPool's Atari config after the common keys, in its order; None: the task's own (task: its ROM's name).
_ATARI: dict[str, Any] = {
    "stack_num": 4,
    "frame_skip": 4,
    "noop_max": 30,
    "zero_discount_on_life_loss": False,
    "episodic_life": False,
    "reward_clip": False,
    "use_fire_reset": True,
    "img_height": 84,
    "img_width": 84,
    "task": None,
    "mode": -1,
    "difficulty": -1,
    "full_action_space": False,
    "repeat_action_probability": 0.0,
    "use_inter_area_resize": True,
    "gray_scale": True,
}
# Config keys fastvec takes only at one value (the one its envs implement), with what to say otherwise.
_FIXED = {
    "max_num_players": (1, "fastvec's envs are single-player"),
    "mode": (-1, "fastvec plays each game's default mode"),
    "difficulty": (-1, "fastvec plays each game's default difficulty"),
    "use_inter_area_resize": (True, "fastvec resizes Atari frames with INTER_AREA only"),
    "version": (1, "fastvec's Pendulum is v1"),
}
# Atari config keys that are fastvec.make keywords of the same name and meaning.
_ATARI_NATIVE = (
    "stack_num",
    "frame_skip",
    "noop_max",
    "episodic_life",
    "reward_clip",
    "use_fire_reset",
    "img_height",
    "img_width",
    "full_action_space",
    "repeat_action_probability",
    "gray_scale",
)


class EnvPoolSpec:
    """What ``envpool.make_spec`` returns, and ``env.spec``: the config (a namedtuple ``Config``), the single-env
    spaces, and the dm_env specs."""

    def __init__(self, task_id: str, config: dict[str, Any], observation_space: gym.Space, action_space: gym.Space):
        self.task_id = task_id
        self.id = task_id  # (gymnasium's EnvSpec's name for it, which gymnasium.Env's str() reads)
        self.config: Any = collections.namedtuple("Config", list(config))(**config)  # type: ignore[misc]
        self.observation_space = observation_space
        self.action_space = action_space
        self.reward_threshold = config.get("reward_threshold")
        self.atari = "stack_num" in config
        self._family = "Atari" if self.atari else task_id.split("-")[0]  # EnvPool's class names

    @property
    def gymnasium_observation_space(self) -> gym.Space:
        return self.observation_space

    @property
    def gymnasium_action_space(self) -> gym.Space:
        return self.action_space

    def observation_spec(self) -> Any:
        """The dm_env spec of a TimeStep's observation (a namedtuple ``State``)."""
        from dm_env import specs

        fields = _state_fields(self)
        int_spec = functools.partial(specs.BoundedArray, (), np.int32, np.iinfo(np.int32).min, np.iinfo(np.int32).max)
        players = _Players(int_spec(name="env_id"))
        values: dict[str, Any] = {"env_id": int_spec(name="env_id"), "players": players}
        space: Any = self.observation_space
        values["obs"] = specs.BoundedArray(space.shape, space.dtype, space.low, space.high, name="obs")
        if "lives" in fields:
            values["lives"] = int_spec(name="lives")
            big = np.finfo(np.float32).max
            values["reward"] = specs.BoundedArray((), np.float32, -big, big, name="reward")
            values["terminated"] = specs.DiscreteArray(2, np.int32, name="terminated")
        return _state_type(fields)(**values)

    def action_spec(self) -> Any:
        """The dm_env spec of an action of one env."""
        from dm_env import specs

        space: Any = self.action_space
        if isinstance(space, gym.spaces.Discrete):
            return specs.DiscreteArray(int(space.n), np.int32, name="action")
        return specs.BoundedArray(space.shape, np.float32, space.low, space.high, name="action")

    def __repr__(self) -> str:
        values = ", ".join(f"{k}={v!r}" for k, v in self.config._asdict().items())
        return f"{self._family}EnvSpec({values})"


_Players = collections.namedtuple("players", ["env_id"])  # type: ignore[name-match]  # EnvPool's State.players, made once


@functools.cache
def _state_type(fields: tuple[str, ...]) -> type:
    return collections.namedtuple("State", fields)


def _state_fields(spec: EnvPoolSpec) -> tuple[str, ...]:
    atari = spec.atari
    return ("env_id", "players", "obs", *(("lives", "reward", "terminated") if atari else ()))


def list_all_envs() -> list[str]:
    """The ids ``make`` takes: the classic-control and Atari ids fastvec runs natively (not its MuJoCo ones, whose
    EnvPool conventions (info keys, float32 rewards, options) the front door does not speak)."""
    return [e for e in list_envs() if lookup(e).family != "mujoco"]


def _entry(task_id: Any) -> EnvEntry:
    if not isinstance(task_id, str):
        raise TypeError(f"task_id must be a str, got {type(task_id).__name__} {task_id!r}")
    try:
        entry = lookup(task_id)
    except ValueError as e:
        raise ValueError(
            f"{e}. fastvec.envpool makes the envs fastvec runs natively (envpool.list_all_envs()); for any other "
            "gymnasium env use fastvec.make, which runs it in worker processes"
        ) from None
    if entry.family == "mujoco":
        raise ValueError(
            f"fastvec.envpool does not make {task_id!r}: its MuJoCo envs follow gymnasium's conventions, not "
            f"EnvPool's (info keys, float32 rewards, options); use fastvec.make({task_id!r}, num_envs), whose envs "
            "are gymnasium's v5 envs bit for bit"
        )
    return entry


def _config(entry: EnvEntry, kwargs: dict[str, Any]) -> dict[str, Any]:
    """EnvPool's config for ``entry`` from make's keyword arguments (EnvPool's defaults filled in); a TypeError
    for a keyword EnvPool does not have, a ValueError for a value fastvec does not implement."""
    config = dict(_COMMON)
    config["max_episode_steps"] = entry.max_episode_steps
    if entry.rom:
        config |= _ATARI
        config["task"] = entry.rom
    elif entry.id == "Pendulum-v1":
        config["version"] = 1
    elif entry.reward_threshold is not None:
        config["reward_threshold"] = entry.reward_threshold
    unknown = sorted(set(kwargs) - set(config))
    if unknown:
        raise TypeError(
            f"{entry.id} got an unexpected keyword argument {unknown[0]!r}: fastvec.envpool takes EnvPool's options "
            f"for it ({', '.join(config)})"
        )
    config |= kwargs
    for name, (value, why) in _FIXED.items():
        if name in kwargs and kwargs[name] != value:
            raise ValueError(f"{name} must be {value!r} in fastvec.envpool ({why}), got {kwargs[name]!r}")
    if "task" in kwargs and kwargs["task"] != entry.rom:
        raise ValueError(f"task must be {entry.rom!r} for {entry.id} (it names the id's game), got {kwargs['task']!r}")
    config["num_envs"] = check_int("num_envs", config["num_envs"], 1, 1 << 24)
    config["batch_size"] = check_int("batch_size", config["batch_size"], 0, config["num_envs"]) or config["num_envs"]
    config["num_threads"] = check_int("num_threads", config["num_threads"], 0, 1024)
    config["thread_affinity_offset"] = check_int(
        "thread_affinity_offset", config["thread_affinity_offset"], -1, 2**31 - 1
    )
    config["seed"] = check_seed("seed", config["seed"])
    if not isinstance(config["gym_reset_return_info"], bool):
        raise TypeError(f"gym_reset_return_info must be a bool, got {config['gym_reset_return_info']!r}")
    if not isinstance(config["base_path"], str):
        raise TypeError(f"base_path must be a str, got {type(config['base_path']).__name__}")
    seeds = config["env_seed"]
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence | np.ndarray):
        raise TypeError(f"env_seed must be a list of ints (one per env), got {type(seeds).__name__}")
    config["env_seed"] = [check_seed(f"env_seed[{k}]", s) for k, s in enumerate(seeds)]
    if config["env_seed"] and len(config["env_seed"]) != config["num_envs"]:
        raise ValueError(f"env_seed needs one seed per env ({config['num_envs']}), got {len(config['env_seed'])}")
    if entry.rom and not isinstance(config["zero_discount_on_life_loss"], (bool, np.bool_)):
        raise TypeError(f"zero_discount_on_life_loss must be a bool, got {config['zero_discount_on_life_loss']!r}")
    return config


def _make_pool(
    entry: EnvEntry, config: dict[str, Any], cls: type[VectorEnv], render_mode: str | None = None
) -> VectorEnv:
    """The native pool ``config`` describes, as a ``cls``."""
    options = {k: config[k] for k in _ATARI_NATIVE} | {"envpool_info": True} if entry.rom else {}
    options["render_mode"] = render_mode
    max_steps = config["max_episode_steps"]
    env = make_native(
        entry,
        config["num_envs"],
        batch_size=config["batch_size"],
        num_threads=config["num_threads"] or None,
        seed=config["seed"],
        autoreset_mode="next_step",
        max_episode_steps=None if max_steps is None else check_int("max_episode_steps", max_steps, 1, 2**31 - 1),
        block_size=None,
        episode_stats=False,
        env_kwargs=options,
        cls=cls,
        info_layout="envpool",
        thread_affinity_offset=config["thread_affinity_offset"],
    )
    if config["env_seed"]:
        env._pending_seeds = list(config["env_seed"])  # each env's first reset, as make()'s seed would be
    return env


class _EnvPoolFace:
    """What EnvPool's envs have beyond gymnasium's VectorEnv (mixed into both classes over a pool)."""

    _spec: EnvPoolSpec
    _pool_env: VectorEnv

    @property
    def config(self) -> dict[str, Any]:
        """EnvPool's config of this env, as a dict (``env.spec.config`` is the namedtuple)."""
        return self._spec.config._asdict()

    @property
    def is_async(self) -> bool:
        return self._pool_env.batch_size < self._pool_env.num_envs

    @property
    def all_env_ids(self) -> np.ndarray:
        return np.arange(self._pool_env.num_envs, dtype=np.int32)


def _set_once(name: str) -> property:
    """An attribute that CleanRL's scripts set again to the value it has (``envs.num_envs = args.num_envs``),
    which EnvPool 1.2.5 refuses (no setter): the same value is taken, another is a ValueError."""
    private = f"_{name}_value"

    def get(self: Any) -> Any:
        return getattr(self, private)

    def put(self: Any, value: Any) -> None:
        if hasattr(self, private) and value != getattr(self, private):
            raise ValueError(f"{name} is {getattr(self, private)} for this pool and cannot change, got {value!r}")
        object.__setattr__(self, private, value)

    return property(get, put)


class GymnasiumEnvPool(_EnvPoolFace, VectorEnv, gym.Env):  # type: ignore[misc]  # (as EnvPool's: both)
    """EnvPool's gymnasium env (``env_type="gymnasium"`` or ``"gym"``): a :class:`fastvec.VectorEnv` whose
    ``observation_space``/``action_space`` are one env's, whose info has EnvPool's keys, and which steps some
    envs of a sync pool with ``step(actions, env_id)``. Also a ``gymnasium.Env``, as EnvPool's is, so that
    ``gymnasium.Wrapper`` subclasses (CleanRL's ``RecordEpisodeStatistics``) wrap it."""

    num_envs = _set_once("num_envs")
    batch_size = _set_once("batch_size")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pool_env = self
        self._with_env_id = True  # info["env_id"] also in sync mode, as EnvPool's
        self._sync = self.batch_size == self.num_envs
        self._atari = self.entry is not None and self.entry.rom is not None
        self._step_batch = self.backend.step  # (bound once: the façade's fast path, see step)
        self.observation_space = self.single_observation_space
        self.action_space = self.single_action_space

    @property  # type: ignore[override]
    def spec(self) -> EnvPoolSpec:
        return self._spec

    @spec.setter
    def spec(self, value: Any) -> None:  # VectorEnv.__init__ sets the gymnasium EnvSpec: EnvPool's is kept
        pass

    def reset(  # type: ignore[override]
        self, env_id: Any = None, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """EnvPool's reset: every env (sync), or the envs of ``env_id`` (or of ``options["reset_mask"]``), and
        their rows only, in ``env_id``'s order; an async pool returns the next batch, EnvPool's: the first
        ``batch_size`` envs to finish, these or others in flight (the rest come from :meth:`recv`), or every env
        in flight when they are fewer. ``seed`` reseeds as fastvec's ``reset`` does (EnvPool ignores it)."""
        reset_mask, option_ids, env_options = reset_options(options)
        if reset_mask is not None:
            option_ids = reset_mask_ids(reset_mask, self.num_envs)
        if env_id is not None and option_ids is not None:
            raise ValueError("pass the envs to reset as env_id or in options, not both")
        env_id = option_ids if env_id is None else env_id
        if env_id is None and self._sync:
            return super().reset(seed=seed, options=env_options)
        ids = None if env_id is None else self._ids(env_id)
        self.async_reset(seed=seed, env_id=ids, options=env_options)
        obs, _, _, _, info = self._rows_of(self.num_envs if ids is None else ids)
        return obs, info

    def step(  # type: ignore[override]
        self, actions: Any, env_id: Any = None
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every env (``env_id`` None, sync), or the envs of ``env_id``, rows in that order (sync; async:
        ``send`` then ``recv``, EnvPool's)."""
        if env_id is None and self._sync and self._waiting is None:  # the backend's step, and _result inlined: hot
            try:
                r = self._step_batch(actions)
            except RuntimeError as exc:
                self.step_refused(exc, None)
                raise
            info: Any = r.info  # EnvPool's, built by the pool (info_layout="envpool"): a dict of its own
            if self._atari:
                info["reward"] = info["reward"].astype(np.float32)
            return r.obs, r.reward, r.terminated, r.truncated, info
        if env_id is None or not self._sync:
            return super().step(actions, env_id)
        ids = self._ids(env_id)
        if self._waiting is not None:
            self._refuse_pending("step")
        try:
            self.backend.send(actions, ids)
        except RuntimeError as exc:
            self.step_refused(exc, ids)
            raise
        return self._rows_of(ids)

    def _ids(self, env_id: Any) -> np.ndarray:
        ids = check_env_ids(env_id, self.num_envs)
        if not len(ids):
            raise ValueError("env_id must name at least one env, got none")
        return ids

    def _rows_of(self, sent: np.ndarray | int) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The rows of the envs just sent (``sent``: their ids, or how many when all): a sync pool's in the order
        of the ids (it returns them in env order), an async pool's first batch of them (completion order)."""
        n = sent if isinstance(sent, int) else len(sent)
        if not self._sync:
            return self._result(self.backend.recv() if n >= self.batch_size else self._next_rows())
        result = self._result(self.backend.recv() if n == self.num_envs else self.backend.recv_rest())
        ids = sent
        if isinstance(ids, np.ndarray) and len(ids) > 1 and np.any(ids[1:] < ids[:-1]):
            rank = np.argsort(np.argsort(ids, kind="stable"), kind="stable")
            result = _pick(result, rank)
        return result

    def _next_rows(self) -> Any:
        """After an async pool's reset of fewer than ``batch_size`` envs: the next batch, as EnvPool's reset
        returns it (its ``recv()``: the first ``batch_size`` envs to finish, these or others in flight), or, when
        fewer than ``batch_size`` envs are in flight, all of them (EnvPool would wait forever). Only the pool
        knows how many are in flight: its ``recv()`` refuses (a RuntimeError, nothing taken) when they are too
        few, and the reset just sent leaves at least one, which ``recv_rest()`` takes."""
        try:
            return self.backend.recv()
        except EnvError:  # an env's own exception (a RuntimeError too): the caller's to see
            raise
        except RuntimeError:
            self.check_open()
            return self.backend.recv_rest()

    def _info(self, r: Any) -> dict[str, Any]:
        return self._result(r)[4]

    def _result(self, r: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        info: Any = r.info  # EnvPool's, built by the pool (info_layout="envpool"): a dict of its own
        if self._atari:
            info["reward"] = info["reward"].astype(np.float32)
        return r.obs, r.reward, r.terminated, r.truncated, info

    def render(self, env_ids: Any = None, camera_id: int | None = None) -> np.ndarray:  # type: ignore[override]
        """EnvPool's render: the current frames of ``env_ids`` (default env 0), ``(n, H, W, 3)`` uint8, made with
        ``render_mode="rgb_array"``; the envs must not be in flight."""
        if self.render_mode is None:
            self.check_open()
            raise RuntimeError(
                "render_mode must be set to 'rgb_array' when creating this env: envpool.make(..., "
                "render_mode='rgb_array')"
            )
        if camera_id not in (None, -1, 0):
            raise ValueError(f"camera_id: fastvec's envs have one view (0), got {camera_id!r}")
        ids = np.zeros(1, np.int32) if env_ids is None else self._ids(env_ids)
        self.check_open()
        return self._native_pool().frames(ids)

    def seed(self, seed: int | Sequence[int] | None = None) -> None:
        """Seeds each env's next reset: gym's ``env.seed(s)`` (env ``i`` with ``s + i``)."""
        if seed is not None:
            ids = range(self.num_envs)
            self._pending_seeds = list(self._seeds(seed, ids)) or None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._spec!r})"


def _pick(result: tuple, rows: np.ndarray) -> tuple:
    obs, rew, term, trunc, info = result

    def take(v: Any) -> Any:
        return {k: take(x) for k, x in v.items()} if isinstance(v, dict) else v[rows]

    return take(obs) if isinstance(obs, dict) else obs[rows], rew[rows], term[rows], trunc[rows], take(info)


class LegacyGymEnvPool(GymnasiumEnvPool):
    """EnvPool 0.6-0.8's gym API, which CleanRL's EnvPool scripts were written for: ``reset()`` -> obs (with
    ``gym_reset_return_info=True``: ``(obs, info)``), ``step()`` and ``recv()`` -> ``(obs, reward, done, info)``
    with ``done = terminated | truncated`` and ``info["TimeLimit.truncated"]`` (truncated, not terminated).
    Made by :mod:`fastvec.envpool.legacy`'s ``make(..., env_type="gym")``."""

    def reset(  # type: ignore[override]
        self, env_id: Any = None, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> Any:
        obs, info = super().reset(env_id, seed=seed, options=options)
        return (obs, info) if self._spec.config.gym_reset_return_info else obs

    def step(self, actions: Any, env_id: Any = None) -> tuple[Any, np.ndarray, np.ndarray, dict[str, Any]]:  # type: ignore[override]
        return _legacy(super().step(actions, env_id))

    def recv(self, timeout: float | None = None) -> tuple[Any, np.ndarray, np.ndarray, dict[str, Any]]:  # type: ignore[override]
        return _legacy(super().recv(timeout))


def _legacy(result: tuple) -> tuple:
    obs, rew, term, trunc, info = result
    info["TimeLimit.truncated"] = trunc & ~term
    return obs, rew, term | trunc, info


class DMEnvPool(_EnvPoolFace):
    """EnvPool's dm_env env (``env_type="dm"``): ``reset()``, ``step(actions, env_id=None)`` and ``recv()``
    return a batched ``dm_env.TimeStep``: ``step_type`` (int32: 0 first, 1 mid, 2 last), ``reward``
    (float32), ``discount`` (float32: 0 where the episode terminated, and on a lost life with
    ``zero_discount_on_life_loss``; 1 where it was truncated, as dm_env defines it) and ``observation``,
    a namedtuple ``State`` of ``env_id``, ``players``, ``obs`` and the env's info values."""

    _pool_env: GymnasiumEnvPool

    def __init__(self, pool: GymnasiumEnvPool) -> None:
        import dm_env

        self._pool_env = pool
        self._spec = pool._spec
        self._time_step = dm_env.TimeStep
        self._state: Any = _state_type(_state_fields(self._spec))
        self._zero_on_life_loss = bool(getattr(self._spec.config, "zero_discount_on_life_loss", False))
        self._lives = np.zeros(pool.num_envs, dtype=np.int32)  # each env's lives at its last row
        self.num_envs = pool.num_envs
        self.batch_size = pool.batch_size
        self.observation_space = pool.observation_space
        self.action_space = pool.action_space

    @property
    def spec(self) -> EnvPoolSpec:
        return self._spec

    def observation_spec(self) -> Any:
        return self._spec.observation_spec()

    def action_spec(self) -> Any:
        return self._spec.action_spec()

    def reset(self, env_id: Any = None) -> Any:
        """Resets every env (or those of ``env_id``) and returns their first TimeStep (async: the first
        ``batch_size`` envs')."""
        obs, info = self._pool_env.reset(env_id)
        return self._timestep(obs, np.zeros(len(info["env_id"]), np.float32), None, None, info)

    def render(self, env_ids: Any = None, camera_id: int | None = None) -> np.ndarray:
        """EnvPool's render (made with ``render_mode="rgb_array"``): :meth:`GymnasiumEnvPool.render`'s frames."""
        return self._pool_env.render(env_ids, camera_id)

    def step(self, actions: Any, env_id: Any = None) -> Any:
        return self._timestep(*self._pool_env.step(actions, env_id))

    def async_reset(self) -> None:
        self._pool_env.async_reset()

    def send(self, actions: Any, env_id: Any = None) -> None:
        self._pool_env.send(actions, env_id)

    def recv(self, timeout: float | None = None) -> Any:
        return self._timestep(*self._pool_env.recv(timeout))

    def close(self) -> None:
        self._pool_env.close()

    def __enter__(self) -> DMEnvPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _timestep(
        self, obs: Any, reward: np.ndarray, terminated: np.ndarray | None, truncated: np.ndarray | None, info: dict
    ) -> Any:
        first = info["elapsed_step"] == 0  # a reset row (after an autoreset, too)
        step_type = np.where(first, 0, 1).astype(np.int32)
        discount = np.ones(len(step_type), dtype=np.float32)
        if terminated is not None and truncated is not None:
            step_type[terminated | truncated] = 2
            discount[terminated] = 0.0
        ids = info["env_id"]
        if "lives" in info:
            if self._zero_on_life_loss:
                lost = ~first & (info["lives"] < self._lives[ids])
                discount[lost] = 0.0
            self._lives[ids] = info["lives"]
        values = {k: info[k] for k in self._state._fields if k not in ("obs", "players")}
        players = _Players(ids)
        state = self._state(obs=obs, players=players, **values)
        reward = reward.astype(np.float32)
        return self._time_step(step_type=step_type, reward=reward, discount=discount, observation=state)


def _make(task_id: str, env_type: str, legacy_gym: bool, kwargs: dict[str, Any]) -> Any:
    if env_type not in ENV_TYPES:
        raise ValueError(f"env_type must be one of {list(ENV_TYPES)}, got {env_type!r}")
    entry = _entry(task_id)
    kwargs = dict(kwargs)
    render_mode = kwargs.pop("render_mode", None)
    if not legacy_gym and kwargs.get("gym_reset_return_info", True) is False and env_type != "dm":
        raise ValueError(
            "gym_reset_return_info=False: EnvPool 1.2's gym API (gymnasium's) always returns (obs, info) from "
            "reset(); for the 0.6-0.8 gym API, which returns obs, use fastvec.envpool.legacy"
        )
    if legacy_gym and env_type == "gym":
        kwargs.setdefault("gym_reset_return_info", False)
    config = _config(entry, kwargs)
    cls = LegacyGymEnvPool if legacy_gym and env_type == "gym" else GymnasiumEnvPool
    # The spaces are the pool's: made first, then told its spec.
    env = _make_pool(entry, config, cls, render_mode)
    assert isinstance(env, GymnasiumEnvPool)
    env._spec = EnvPoolSpec(entry.id, config, env.single_observation_space, env.single_action_space)
    return DMEnvPool(env) if env_type == "dm" else env


def make(task_id: str, env_type: str, **kwargs: Any) -> Any:
    """EnvPool's ``make``: ``env_type`` "gymnasium" or "gym" (a :class:`GymnasiumEnvPool`) or "dm" (a
    :class:`DMEnvPool`); ``kwargs`` EnvPool's options (``num_envs``, ``batch_size``, ``num_threads``,
    ``seed``, ``episodic_life``, ...)."""
    return _make(task_id, env_type, False, kwargs)


def make_gymnasium(task_id: str, **kwargs: Any) -> GymnasiumEnvPool:
    return _make(task_id, "gymnasium", False, kwargs)


def make_gym(task_id: str, **kwargs: Any) -> GymnasiumEnvPool:
    return _make(task_id, "gym", False, kwargs)


def make_dm(task_id: str, **kwargs: Any) -> DMEnvPool:
    return _make(task_id, "dm", False, kwargs)


def make_spec(task_id: str, **kwargs: Any) -> EnvPoolSpec:
    """EnvPool's ``make_spec``: the config, spaces and dm_env specs ``make(task_id, ..., **kwargs)`` would have
    (the spaces from a one-env pool, made and closed)."""
    entry = _entry(task_id)
    config = _config(entry, dict(kwargs))
    probe = _make_pool(entry, {**config, "num_envs": 1, "batch_size": 1, "num_threads": 1, "env_seed": []}, VectorEnv)
    try:
        return EnvPoolSpec(entry.id, config, probe.single_observation_space, probe.single_action_space)
    finally:
        probe.close()
