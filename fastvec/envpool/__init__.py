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

The package: :mod:`~fastvec.envpool.spec` (EnvPool's configs and :class:`EnvPoolSpec`),
:mod:`~fastvec.envpool.gymnasium_env` (:class:`GymnasiumEnvPool`, :class:`LegacyGymEnvPool`),
:mod:`~fastvec.envpool.dm` (:class:`DMEnvPool`); this file makes them.
"""

from __future__ import annotations

from typing import Any

from fastvec._args import check_int
from fastvec.envpool.dm import DMEnvPool
from fastvec.envpool.gymnasium_env import GymnasiumEnvPool, LegacyGymEnvPool
from fastvec.envpool.spec import ATARI_NATIVE, EnvPoolSpec, checked_config, list_all_envs, lookup_entry
from fastvec.native import make_pool
from fastvec.registry import EnvEntry
from fastvec.vector import MakeNative, VectorEnv

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


def _make_pool(
    entry: EnvEntry,
    config: dict[str, Any],
    cls: type[VectorEnv],
    render_mode: str | None = None,
    frames: dict[str, Any] | None = None,
) -> VectorEnv:
    """The native pool ``config`` describes, as a ``cls``; ``frames``: a dm_control task's frame options
    (:func:`_frame_options`)."""
    options = {k: config[k] for k in ATARI_NATIVE} | {"envpool_info": True} if entry.rom else {}
    options.update(frames or {})
    options["render_mode"] = render_mode
    max_steps = config["max_episode_steps"]
    pool = make_pool(
        entry,
        config["num_envs"],
        batch_size=config["batch_size"],
        num_threads=config["num_threads"] or None,
        seed=config["seed"],
        autoreset_mode="next_step",
        max_episode_steps=None if max_steps is None else check_int("max_episode_steps", max_steps, 1, 2**31 - 1),
        block_size=None,
        env_kwargs=options,
        vector_entry_point=MakeNative(entry.id),
        info_layout="envpool",
        thread_affinity_offset=config["thread_affinity_offset"],
    )
    env = cls.over_native(pool, seed=config["seed"], episode_stats=False)
    if config["env_seed"]:
        env._pending_seeds = list(config["env_seed"])  # each env's first reset, as make()'s seed would be
    return env


#: EnvPool's make keywords for the frames of its MuJoCo tasks, and fastvec's dm_control options they set.
_FRAME_KEYWORDS = {"render_width": "width", "render_height": "height", "render_camera_id": "camera_id"}


def _frame_options(entry: EnvEntry, kwargs: dict[str, Any]) -> dict[str, Any]:
    """EnvPool's ``from_pixels``, ``render_width``, ``render_height`` and ``render_camera_id``, taken out of
    ``kwargs``, as a dm_control task's options: pixel observations (84x84 by default, as EnvPool's, but channel-last
    as dm_control's pixels.Wrapper draws them: ``(H, W, 3)``) and the size and camera of the frames."""
    given = {k: kwargs.pop(k) for k in ("from_pixels", *_FRAME_KEYWORDS) if k in kwargs}
    if given and entry.family != "dm_control":
        raise TypeError(
            f"{entry.id} got an unexpected keyword argument {next(iter(given))!r}: only dm_control tasks "
            "take EnvPool's from_pixels and render_* options in fastvec.envpool"
        )
    if not given:
        return {}
    options = {_FRAME_KEYWORDS[k]: v for k, v in given.items() if k != "from_pixels"}
    if given.get("from_pixels", False):
        options = {"from_pixels": True, "flat_observation": True, "width": 84, "height": 84, **options}
    return options


def make_env(task_id: str, env_type: str, legacy_gym: bool, kwargs: dict[str, Any]) -> Any:
    if env_type not in ENV_TYPES:
        raise ValueError(f"env_type must be one of {list(ENV_TYPES)}, got {env_type!r}")
    entry = lookup_entry(task_id)
    kwargs = dict(kwargs)
    render_mode = kwargs.pop("render_mode", None)
    frames = _frame_options(entry, kwargs)
    if not legacy_gym and kwargs.get("gym_reset_return_info", True) is False and env_type != "dm":
        raise ValueError(
            "gym_reset_return_info=False: EnvPool 1.2's gym API (gymnasium's) always returns (obs, info) from "
            "reset(); for the 0.6-0.8 gym API, which returns obs, use fastvec.envpool.legacy"
        )
    if legacy_gym and env_type == "gym":
        kwargs.setdefault("gym_reset_return_info", False)
    config = checked_config(entry, kwargs)
    cls = LegacyGymEnvPool if legacy_gym and env_type == "gym" else GymnasiumEnvPool
    # The spaces are the pool's: made first, then told its spec.
    env = _make_pool(entry, config, cls, render_mode, frames)
    assert isinstance(env, GymnasiumEnvPool)
    env._spec = EnvPoolSpec(entry.id, config, env.single_observation_space, env.single_action_space)
    return DMEnvPool(env) if env_type == "dm" else env


def make(task_id: str, env_type: str, **kwargs: Any) -> Any:
    """EnvPool's ``make``: ``env_type`` "gymnasium" or "gym" (a :class:`GymnasiumEnvPool`) or "dm" (a
    :class:`DMEnvPool`); ``kwargs`` EnvPool's options (``num_envs``, ``batch_size``, ``num_threads``,
    ``seed``, ``episodic_life``, ...)."""
    return make_env(task_id, env_type, False, kwargs)


def make_gymnasium(task_id: str, **kwargs: Any) -> GymnasiumEnvPool:
    return make_env(task_id, "gymnasium", False, kwargs)


def make_gym(task_id: str, **kwargs: Any) -> GymnasiumEnvPool:
    return make_env(task_id, "gym", False, kwargs)


def make_dm(task_id: str, **kwargs: Any) -> DMEnvPool:
    return make_env(task_id, "dm", False, kwargs)


def make_spec(task_id: str, **kwargs: Any) -> EnvPoolSpec:
    """EnvPool's ``make_spec``: the config, spaces and dm_env specs ``make(task_id, ..., **kwargs)`` would have
    (the spaces from a one-env pool, made and closed)."""
    entry = lookup_entry(task_id)
    kwargs = dict(kwargs)
    frames = _frame_options(entry, kwargs)
    config = checked_config(entry, kwargs)
    one = {**config, "num_envs": 1, "batch_size": 1, "num_threads": 1, "env_seed": []}
    probe = _make_pool(entry, one, VectorEnv, frames=frames)
    try:
        return EnvPoolSpec(entry.id, config, probe.single_observation_space, probe.single_action_space)
    finally:
        probe.close()
