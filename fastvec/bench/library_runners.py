"""The vector envs of the libraries fastvec is compared with: EnvPool, ale-py's AtariVectorEnv, gymnasium's
vector envs and SB3's VecEnvs (over shimmy for dm_control), each doing the same work (:mod:`fastvec.bench.work`)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from fastvec.bench.runners import AsyncRunner, NotAvailable, Runner, SyncRunner
from fastvec.bench.work import (
    ATARI,
    ATARI_MAX_STEPS,
    ENVPOOL_IDS,
    actions_for,
    ale_id,
    classic_only,
    discrete_actions,
    gym_atari_kwargs,
    gymnasium_env_only,
    is_atari,
    is_dm_control,
    is_mujoco,
    shimmy_env_fn,
)


def make_envpool(env_id: str, num_envs: int, num_threads: int, asynchronous: bool) -> Runner:
    import envpool

    kwargs: dict[str, Any] = {"env_type": "gymnasium", "num_envs": num_envs, "seed": 0, "num_threads": num_threads}
    if is_atari(env_id):
        # All set explicitly: EnvPool 1.2.5 defaults to no sticky actions, fire reset, episodic life and
        # reward clipping; use_inter_area_resize is the area resize everyone else does.
        kwargs.update(ATARI, max_episode_steps=ATARI_MAX_STEPS, use_inter_area_resize=True)
    elif is_mujoco(env_id):
        # EnvPool links its own MuJoCo into its extension, which Python loads RTLD_LOCAL: fastvec's calls bind
        # to mujoco-core's libmujoco and EnvPool's to its own (LD_DEBUG=bindings), and both step the same
        # trajectories bit for bit in one process as alone, so it runs in process like every other row.
        # Its v5 defaults are gymnasium's; the episode limit is set explicitly, as for Atari.
        import gymnasium as gym

        kwargs["max_episode_steps"] = gym.spec(env_id).max_episode_steps
    elif is_dm_control(env_id):
        pass  # EnvPool's own dm_control port; its defaults are the suite's (1000 steps, no early termination)
    else:
        classic_only(env_id)
    name = ENVPOOL_IDS.get(env_id, env_id)
    if asynchronous:
        env = envpool.make(name, batch_size=num_envs // 2, **kwargs)
        return AsyncRunner(env, actions_for(env_id, env.action_space, num_envs, np.int32), num_envs // 2)
    env = envpool.make(name, **kwargs)
    env.reset()
    return SyncRunner(env, env.step, actions_for(env_id, env.action_space, num_envs, np.int32), num_envs, env.close)


def gym_atari_env(env_id: str) -> Any:
    """gymnasium's standard Atari pipeline: AtariPreprocessing + FrameStackObservation."""
    import gymnasium as gym
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    env = gym.make(ale_id(env_id), **gym_atari_kwargs())
    env = AtariPreprocessing(
        env,
        noop_max=ATARI["noop_max"],
        frame_skip=ATARI["frame_skip"],
        screen_size=ATARI["img_height"],
        grayscale_obs=ATARI["gray_scale"],
    )
    return FrameStackObservation(env, ATARI["stack_num"])


def make_ale_vector(env_id: str, num_envs: int, num_threads: int | None, asynchronous: bool) -> Runner:
    """ale-py's own C++ vector env (EnvPool's design). Async: step(actions) sends to the envs of the last
    batch received and returns the next batch (it takes no env ids)."""
    from ale_py.vector_env import AtariVectorEnv

    if not is_atari(env_id):
        raise NotAvailable("Atari only")
    rom = next(r for r in _atari_roms() if r.title().replace("_", "") == env_id.removesuffix("-v5"))
    batch = num_envs // 2 if asynchronous else num_envs
    env = AtariVectorEnv(
        rom,
        num_envs,
        batch_size=batch,
        num_threads=num_threads or 0,
        max_num_frames_per_episode=ATARI_MAX_STEPS * ATARI["frame_skip"],
        repeat_action_probability=ATARI["repeat_action_probability"],
        full_action_space=ATARI["full_action_space"],
        img_height=ATARI["img_height"],
        img_width=ATARI["img_width"],
        grayscale=ATARI["gray_scale"],
        stack_num=ATARI["stack_num"],
        frameskip=ATARI["frame_skip"],
        maxpool=True,
        noop_max=ATARI["noop_max"],
        episodic_life=ATARI["episodic_life"],
        reward_clipping=ATARI["reward_clip"],
        use_fire_reset=ATARI["use_fire_reset"],
    )
    env.reset(seed=0)
    return SyncRunner(env, env.step, discrete_actions(batch, np.int64, env_id), batch, env.close)


def _atari_roms() -> list[str]:
    from ale_py import roms

    return roms.get_all_rom_ids()


def make_gymnasium(env_id: str, num_envs: int, mode: str) -> Runner:
    import gymnasium as gym

    env: gym.vector.VectorEnv
    if is_atari(env_id) or is_dm_control(env_id):
        if mode == "vector_entry_point":
            raise NotAvailable("gymnasium has no vector implementation")
        env_fn = functools.partial(gym_atari_env, env_id) if is_atari(env_id) else shimmy_env_fn(env_id)
        fns = [env_fn] * num_envs
        env = gym.vector.SyncVectorEnv(fns) if mode == "sync" else gym.vector.AsyncVectorEnv(fns, context="fork")
    else:
        gymnasium_env_only(env_id)
        if mode == "vector_entry_point" and gym.spec(env_id).vector_entry_point is None:
            raise NotAvailable("gymnasium has no vector implementation")
        env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)
    env.reset(seed=0)
    actions = actions_for(env_id, env.single_action_space, num_envs, np.int64)
    return SyncRunner(env, env.step, actions, num_envs, env.close)


def make_sb3(env_id: str, num_envs: int, subprocess: bool) -> Runner:
    from stable_baselines3.common.env_util import make_atari_env, make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecFrameStack

    # fork, like gymnasium's AsyncVectorEnv here: SB3's default forkserver makes every worker
    # import torch again, which costs minutes at hundreds of workers and nothing once stepping.
    cls, cls_kwargs = (SubprocVecEnv, {"start_method": "fork"}) if subprocess else (DummyVecEnv, {})
    if is_atari(env_id):
        # SB3's AtariWrapper (noop starts, max-and-skip, resize, FireResetEnv for games with FIRE) + VecFrameStack.
        env = make_atari_env(
            ale_id(env_id),
            n_envs=num_envs,
            seed=0,
            vec_env_cls=cls,
            vec_env_kwargs=cls_kwargs,
            env_kwargs=gym_atari_kwargs(),
            wrapper_kwargs={
                "noop_max": ATARI["noop_max"],
                "frame_skip": ATARI["frame_skip"],
                "screen_size": ATARI["img_height"],
                "terminal_on_life_loss": ATARI["episodic_life"],
                "clip_reward": ATARI["reward_clip"],
            },
        )
        env = VecFrameStack(env, n_stack=ATARI["stack_num"])
    elif is_dm_control(env_id):
        env = make_vec_env(
            shimmy_env_fn(env_id),
            n_envs=num_envs,
            seed=0,
            vec_env_cls=cls,
            vec_env_kwargs=cls_kwargs or None,
        )
    else:
        gymnasium_env_only(env_id)
        env = make_vec_env(env_id, n_envs=num_envs, seed=0, vec_env_cls=cls, vec_env_kwargs=cls_kwargs or None)
    env.reset()
    return SyncRunner(env, env.step, actions_for(env_id, env.action_space, num_envs, np.int64), num_envs, env.close)
