"""The work every contender does, so that their rows compare: which envs (classic control, toy text, Box2D,
gymnasium's MuJoCo v5, Atari, the DeepMind Control Suite, multi-agent PettingZoo envs), Atari's settings, and the
uniformly random actions each draws before timing."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from fastvec.bench.runners import NotAvailable
from fastvec.dm_control_tasks import suite_task
from fastvec.registry import family_ids

CLASSIC_ENVS = ("CartPole-v1",)
# gymnasium's toy-text envs (FrozenLake-v1, Taxi-v4, ...), as gymnasium.make makes them: fastvec runs them natively,
# EnvPool 1.2.5 too (CliffWalking-v1 under its older id, ENVPOOL_IDS), every Python row as gymnasium's classes.
TOY_TEXT_ENVS = family_ids("toy_text")
ENVPOOL_IDS = {"CliffWalking-v1": "CliffWalking-v0"}
# gymnasium's Box2D envs (LunarLander-v3, BipedalWalker-v3, ...) at their defaults: fastvec runs them natively,
# EnvPool 1.2.5 natively under the same ids, every Python row as gymnasium's classes.
BOX2D_ENVS = family_ids("box2d")
# gymnasium's MuJoCo v5 envs: fastvec runs them natively, and EnvPool 1.2.5 has each as the same v5 (frame skip,
# observation, action bounds and episode limit checked equal to gymnasium's: 1000 steps, Pusher 100, Reacher 50).
# Every contender steps the env as gymnasium makes it, with uniformly random actions within its bounds.
MUJOCO_ENVS = family_ids("mujoco")
# Every Atari contender runs the same work: gymnasium v5's settings (sticky actions 0.25, noop starts up
# to 30, frame skip 4 with max-pooling, 84x84 grayscale area resize, 4 frames), no life loss or reward
# clipping, episodes cut at 27,000 steps.
ATARI: dict[str, Any] = {
    "frame_skip": 4,
    "img_height": 84,
    "img_width": 84,
    "gray_scale": True,
    "stack_num": 4,
    "noop_max": 30,
    "repeat_action_probability": 0.25,
    "episodic_life": False,
    "reward_clip": False,
    "use_fire_reset": False,
    "full_action_space": False,
}
ATARI_MAX_STEPS = 27_000
NUM_ACTION_ROWS = 64  # pre-drawn action arrays, cycled through
# Multi-agent envs, counted in agent-steps: mpe2's MPE envs (fastvec also runs its C++ port of each) and PettingZoo's
# rps_v2, a Python-only env whose step is almost free, so that a vector env's own cost shows. Every contender steps
# the PettingZoo parallel env as its module makes it (default options: MPE's max_cycles=25, discrete actions).
MPE_ENVS = family_ids("mpe")
PETTINGZOO_ONLY_ENVS = {"rps_v2": "pettingzoo.classic.rps_v2"}
# The DeepMind Control Suite's tasks under EnvPool's ids (WalkerWalk-v1), those this fastvec registers: fastvec
# steps them natively, EnvPool 1.2.5 natively too (its own dm_control port), and the Python rows step
# dm_control.suite.load(domain, task) as shimmy makes it a gymnasium env (dm_control/walker-walk-v0), each with
# uniformly random actions within its bounds; episodes end at the task's 1000-step limit (none terminates early).
DM_CONTROL_ENVS = family_ids("dm_control")


def is_mujoco(env_id: str) -> bool:
    return env_id in MUJOCO_ENVS


def is_atari(env_id: str) -> bool:
    return env_id not in CLASSIC_ENVS and not is_toy_text(env_id) and not is_mujoco(env_id) and env_id.endswith("-v5")


def is_toy_text(env_id: str) -> bool:
    return env_id in TOY_TEXT_ENVS


def is_dm_control(env_id: str) -> bool:
    return env_id in DM_CONTROL_ENVS


def is_box2d(env_id: str) -> bool:
    return env_id in BOX2D_ENVS


def is_multiagent(env_id: str) -> bool:
    return env_id in MPE_ENVS or env_id in PETTINGZOO_ONLY_ENVS


def parallel_env(env_id: str) -> Any:
    """One PettingZoo parallel env of the multi-agent ``env_id``, as its module makes it."""
    module = f"mpe2.{env_id}" if env_id in MPE_ENVS else PETTINGZOO_ONLY_ENVS[env_id]
    return importlib.import_module(module).parallel_env()


def parallel_env_fn(env_id: str) -> Callable[[], Any]:
    """A picklable constructor of :func:`parallel_env` (worker processes build their envs from it); refuses an env
    that is not multi-agent."""
    if not is_multiagent(env_id):
        raise NotAvailable("multi-agent envs only")
    return functools.partial(parallel_env, env_id)


def dm_control_task(env_id: str) -> tuple[str, str]:
    """The suite's (domain, task) of an EnvPool-style dm_control id (:func:`fastvec.dm_control_tasks.suite_task`);
    NotAvailable for any other id."""
    try:
        return suite_task(env_id)
    except ValueError:
        raise NotAvailable("not a dm_control suite task") from None


def _without_renderer() -> None:
    """Before dm_control is imported: the bench never renders, and dm_control would probe GLFW for a renderer (a
    warning without a display). A MUJOCO_GL the user set is kept."""
    os.environ.setdefault("MUJOCO_GL", "disable")


def shimmy_env_fn(env_id: str) -> Callable[[], Any]:
    """A picklable constructor of :func:`shimmy_env`; NotAvailable if shimmy is missing (the row says so)."""
    if importlib.util.find_spec("shimmy") is None:
        raise NotAvailable("not installed (shimmy)")
    return functools.partial(shimmy_env, env_id)


def shimmy_env(env_id: str) -> Any:
    """The gymnasium env shimmy makes of the dm_control task ``env_id``
    (``gymnasium.make("dm_control/walker-walk-v0")``), the way a user steps the suite in a Python vector env;
    module-level, so that worker processes can build it."""
    import gymnasium as gym

    _without_renderer()
    import shimmy

    gym.register_envs(shimmy)
    domain, task = dm_control_task(env_id)
    return gym.make(f"dm_control/{domain}-{task}-v0")


def classic_only(env_id: str) -> None:
    """Refuses all but classic control, toy text and Box2D (gymnasium's envs that every library makes alike at their
    defaults)."""
    if env_id not in CLASSIC_ENVS and not is_toy_text(env_id) and not is_box2d(env_id):
        raise NotAvailable("not wired for this env")


def gymnasium_env_only(env_id: str) -> None:
    """Refuses Atari, whose preprocessing each library wires its own way (the Python-env pool is not wired for
    it); classic control, toy text, Box2D and MuJoCo are the env ``gymnasium.make(env_id)`` makes, the same work
    everywhere."""
    if not (env_id in CLASSIC_ENVS or is_toy_text(env_id) or is_box2d(env_id) or is_mujoco(env_id)):
        raise NotAvailable("not wired for this env")


def ale_id(env_id: str) -> str:
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    return f"ALE/{env_id}"


def gym_atari_kwargs() -> dict[str, Any]:
    """ALE/<Game>-v5 stepping single frames: the wrappers do the frame skip, as gymnasium's docs say."""
    return {
        "frameskip": 1,
        "repeat_action_probability": ATARI["repeat_action_probability"],
        "full_action_space": ATARI["full_action_space"],
        "max_num_frames_per_episode": ATARI_MAX_STEPS * 4,
    }


def discrete_actions(num_envs: int, dtype: type, env_id: str = "CartPole-v1", n: int | None = None) -> np.ndarray:
    """Uniformly random actions, drawn before timing (CartPole: 2 actions; a toy-text or Box2D env: its
    Discrete's; an Atari game: its minimal set), out of ``n`` where the caller has its space."""
    rng = np.random.default_rng(12345)
    n = _num_actions(env_id) if n is None else n
    return rng.integers(0, n, size=(NUM_ACTION_ROWS, num_envs)).astype(dtype)


def _box_actions(space: Any, num_envs: int) -> np.ndarray:
    """Uniformly random continuous actions within ``space`` (a Box), in its dtype, drawn before timing.

    Each contender draws from its own action space, so that its memory probe loads no other library's env;
    the spaces are all gymnasium's (EnvPool's bounds equal them in float64) and the stream is the same.
    """
    rng = np.random.default_rng(12345)
    low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
    u = rng.random((NUM_ACTION_ROWS, num_envs, *space.shape))
    return np.clip(low + u * (high - low), low, high).astype(space.dtype)


def actions_for(env_id: str, space: Any, num_envs: int, discrete: type) -> np.ndarray:
    """A contender's actions, by its own action space: within a Box (in the Box's dtype: MuJoCo, dm_control,
    BipedalWalker), else :func:`discrete_actions` in ``discrete``."""
    if hasattr(space, "n"):
        return discrete_actions(num_envs, discrete, env_id, int(space.n))
    return _box_actions(space, num_envs)


def multiagent_actions(spaces: dict[str, Any], num_envs: int) -> list[dict[str, np.ndarray]]:
    """NUM_ACTION_ROWS batches of uniformly random actions, each a dict agent -> ``num_envs`` actions, drawn before
    timing from a contender's own action spaces (Discrete or Box); the same stream for every contender."""
    rng = np.random.default_rng(12345)
    rows = []
    for _ in range(NUM_ACTION_ROWS):
        row = {}
        for agent, space in spaces.items():
            if hasattr(space, "n"):
                row[agent] = rng.integers(0, int(space.n), num_envs)
            else:
                low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
                row[agent] = (low + rng.random((num_envs, *space.shape)) * (high - low)).astype(space.dtype)
        rows.append(row)
    return rows


@functools.cache
def _num_actions(env_id: str) -> int:
    import gymnasium as gym

    if is_toy_text(env_id) or is_box2d(env_id):
        space = gym.make(env_id).action_space
        assert isinstance(space, gym.spaces.Discrete)
        return int(space.n)
    if not is_atari(env_id):
        return 2

    env = gym.make(ale_id(env_id))
    space = env.action_space
    env.close()
    assert isinstance(space, gym.spaces.Discrete)  # an Atari game's minimal action set
    return int(space.n)
