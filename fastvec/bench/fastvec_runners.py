"""fastvec's own rows: the native pool (sync and async, any autoreset mode), the Python-env pool stepping
gymnasium's env, and fastvec.envpool's front door over the native pool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fastvec.bench.runners import AsyncRunner, NotAvailable, Runner, SyncRunner
from fastvec.bench.work import (
    ATARI,
    ATARI_MAX_STEPS,
    actions_for,
    classic_only,
    gymnasium_env_only,
    is_atari,
    is_dm_control,
    is_mujoco,
    is_toy_text,
    shimmy_env_fn,
)


def make_fastvec(
    env_id: str, num_envs: int, num_threads: int | None, asynchronous: bool, autoreset_mode: str = "next_step"
) -> Runner:
    """fastvec's native pool. ``autoreset_mode="same_step"`` resets an env within the step that ended its episode,
    as SB3's VecEnvs and the ceiling's loop do; in the default "next_step" mode (gymnasium's and EnvPool's) the
    next step only resets, and counts as a step though it steps no physics (up to 14% of a MuJoCo env's steps
    under random actions: InvertedPendulum's episodes last about 7 steps, Hopper's and Humanoid's 20-30)."""
    import fastvec

    if env_id not in fastvec.list_envs():
        raise NotAvailable("not available in this build")
    return _fastvec_runner(env_id, num_envs, asynchronous, num_threads=num_threads, autoreset_mode=autoreset_mode)


def make_fastvec_python(env_id: str, num_envs: int, num_workers: int | None = None) -> Runner:
    """The Python-env pool (worker processes, shared memory) stepping gymnasium's own env (a dm_control task: as
    shimmy makes it); ``num_workers`` worker processes, its ``num_threads`` (None: its default, one fewer than the
    cores), at most one per env."""
    if num_workers is not None and num_workers > num_envs:
        raise NotAvailable("n/a (more workers than envs)")
    if is_dm_control(env_id):
        env_fn = shimmy_env_fn(env_id)
        return _fastvec_runner(env_id, num_envs, False, make_from=env_fn, backend="python", num_threads=num_workers)
    gymnasium_env_only(env_id)
    return _fastvec_runner(env_id, num_envs, False, backend="python", num_threads=num_workers)


def _fastvec_runner(
    env_id: str, num_envs: int, asynchronous: bool, make_from: Callable[[], Any] | None = None, **kwargs: Any
) -> Runner:
    """fastvec.make of ``env_id`` (or of the env constructor ``make_from``), stepped with ``env_id``'s actions."""
    import fastvec

    what = env_id if make_from is None else make_from
    if asynchronous:
        env = fastvec.make(what, num_envs, batch_size=num_envs // 2, seed=0, **kwargs)
        return AsyncRunner(env, actions_for(env_id, env.single_action_space, num_envs, np.int64), num_envs // 2)
    env = fastvec.make(what, num_envs, seed=0, **kwargs)
    env.reset()
    actions = actions_for(env_id, env.single_action_space, num_envs, np.int64)
    return SyncRunner(env, env.step, actions, num_envs, env.close)


def make_fastvec_envpool(env_id: str, num_envs: int, asynchronous: bool) -> Runner:
    """fastvec.envpool's front door (EnvPool's API and info keys) over fastvec's pool, with the same work as the
    other rows (the Atari settings set explicitly, as for EnvPool) and fastvec's default threads."""
    import fastvec
    import fastvec.envpool

    if env_id not in fastvec.list_envs():
        raise NotAvailable("not available in this build")
    kwargs: dict[str, Any] = {"num_envs": num_envs, "seed": 0}
    if is_atari(env_id):
        kwargs.update(ATARI, max_episode_steps=ATARI_MAX_STEPS)
    elif is_mujoco(env_id):
        raise NotAvailable("no MuJoCo in fastvec.envpool (fastvec.make has it)")
    elif is_toy_text(env_id):
        raise NotAvailable("no toy text in fastvec.envpool (fastvec.make has it)")
    else:
        classic_only(env_id)
    # the same actions as the fastvec rows: the front door's cost alone
    if asynchronous:
        env = fastvec.envpool.make(env_id, env_type="gymnasium", batch_size=num_envs // 2, **kwargs)
        return AsyncRunner(env, actions_for(env_id, env.action_space, num_envs, np.int64), num_envs // 2)
    env = fastvec.envpool.make(env_id, env_type="gymnasium", **kwargs)
    env.reset()
    return SyncRunner(env, env.step, actions_for(env_id, env.action_space, num_envs, np.int64), num_envs, env.close)
