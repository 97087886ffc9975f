"""EnvPool's configs and specs: the config keys each env takes (EnvPool's defaults, the values fastvec
implements), :class:`EnvPoolSpec` (what ``envpool.make_spec`` returns) and its dm_env ``State`` types."""

from __future__ import annotations

import collections
import functools
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from fastvec._args import check_int, check_seed
from fastvec.registry import MULTI_AGENT_FAMILIES, EnvEntry, list_envs, lookup

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
ATARI_NATIVE = (
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

        fields = state_fields(self)
        int_spec = functools.partial(specs.BoundedArray, (), np.int32, np.iinfo(np.int32).min, np.iinfo(np.int32).max)
        players = Players(int_spec(name="env_id"))
        values: dict[str, Any] = {"env_id": int_spec(name="env_id"), "players": players}
        space: Any = self.observation_space
        named: dict[str, Any] = space.spaces if isinstance(space, gym.spaces.Dict) else {"obs": space}
        for name, box in named.items():
            values[name] = specs.BoundedArray(box.shape, box.dtype, box.low, box.high, name=name)
        if "lives" in fields:
            values["lives"] = int_spec(name="lives")
            big = np.finfo(np.float32).max
            values["reward"] = specs.BoundedArray((), np.float32, -big, big, name="reward")
            values["terminated"] = specs.DiscreteArray(2, np.int32, name="terminated")
        return state_type(fields)(**values)

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


Players = collections.namedtuple("players", ["env_id"])  # type: ignore[name-match]  # EnvPool's State.players, made once


@functools.cache
def state_type(fields: tuple[str, ...]) -> type:
    return collections.namedtuple("State", fields)


def state_fields(spec: EnvPoolSpec) -> tuple[str, ...]:
    if isinstance(spec.observation_space, gym.spaces.Dict):  # dm_control's named observations, each a field
        return ("env_id", "players", *spec.observation_space.spaces)
    atari = spec.atari
    return ("env_id", "players", "obs", *(("lives", "reward", "terminated") if atari else ()))


def list_all_envs() -> list[str]:
    """The ids ``make`` takes: the classic-control, Atari and dm_control ids fastvec runs natively (not its MuJoCo
    and toy-text ones, whose EnvPool conventions (info keys, dtypes, options) the front door does not speak)."""
    return [e for e in list_envs() if lookup(e).family not in ("mujoco", "toy_text", *MULTI_AGENT_FAMILIES)]


def lookup_entry(task_id: Any) -> EnvEntry:
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
    if entry.family == "toy_text":
        raise ValueError(
            f"fastvec.envpool does not make {task_id!r}: its toy-text envs follow gymnasium's conventions, not "
            f"EnvPool's (int32 observations, Blackjack's Box); use fastvec.make({task_id!r}, num_envs), whose envs are "
            "gymnasium's bit for bit"
        )
    if entry.family in MULTI_AGENT_FAMILIES:
        raise ValueError(
            f"fastvec.envpool does not make {task_id!r}, a multi-agent env EnvPool does not have; use "
            f"fastvec.make({task_id!r}, num_envs), a fastvec.MultiAgentVectorEnv"
        )
    return entry


def checked_config(entry: EnvEntry, kwargs: dict[str, Any]) -> dict[str, Any]:
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
