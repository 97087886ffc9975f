"""The multi-agent rows: fastvec's native MPE and its Python-env pool, SuperSuit's process vector env, AgileRL's
AsyncPettingZooVecEnv and RLlib's SyncVectorMultiAgentEnv, each stepping the same PettingZoo parallel env
(:func:`fastvec.bench.work.parallel_env`) with the same random actions. A call steps every env once, and counts one
step per agent: all agents of these envs live until their episode ends (RLlib's ``sample()`` rows, which count the
agent steps their episodes hold, are in :mod:`fastvec.bench.ray_runners`)."""

from __future__ import annotations

import numpy as np

from fastvec.bench.machine import describe
from fastvec.bench.runners import NotAvailable, Runner, SyncRunner
from fastvec.bench.work import multiagent_actions, parallel_env_fn


def make_fastvec_multiagent(env_id: str, num_envs: int, native: bool) -> Runner:
    """fastvec's MultiAgentVectorEnv: the native port (default threads) or, with ``native=False``, the PettingZoo
    env in the Python-env pool (its default workers)."""
    import fastvec
    from fastvec.multiagent import make

    fn = parallel_env_fn(env_id)
    if native and env_id not in fastvec.list_envs():
        raise NotAvailable("no native port")
    env = make(env_id, num_envs, seed=0) if native else make(fn, num_envs, seed=0)
    env.reset()
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    return SyncRunner(env, env.step, multiagent_actions(spaces, num_envs), num_envs * len(spaces), env.close)


def make_supersuit(env_id: str, num_envs: int) -> Runner:
    """SuperSuit's recipe (SB3's and Tianshou's tutorials): ``pettingzoo_env_to_vec_env_v1`` (a slot per agent) in
    ``concat_vec_envs_v1`` with a process per usable core, each stepping its share of the envs in turn."""
    import supersuit as ss

    fn = parallel_env_fn(env_id)
    markov = ss.pettingzoo_env_to_vec_env_v1(fn())
    agents = list(markov.par_env.possible_agents)
    spaces = {a: markov.par_env.action_space(a) for a in agents}
    env = ss.concat_vec_envs_v1(markov, num_envs, num_cpus=describe()["usable_cores"], base_class="gymnasium")
    env.reset(seed=0)
    # Its slots are env-major, the agents of an env side by side in possible_agents' order.
    rows = [np.stack([row[a] for a in agents], axis=1).reshape(-1) for row in multiagent_actions(spaces, num_envs)]
    return SyncRunner(env, env.step, rows, num_envs * len(agents), env.close)


def make_agilerl(env_id: str, num_envs: int) -> Runner:
    """AgileRL's AsyncPettingZooVecEnv: a process per env, shared memory for observations.

    agilerl 2.58 pins ``pettingzoo<1.27`` and pulls wandb, jax, minari and more, so it is in no extra; its vector env
    runs unchanged with pettingzoo 1.27 from a directory of its own on the path, with the five modules it imports::

        pip install --no-deps --target /tmp/agilerl agilerl lazy-loader tensordict pyvers accelerate safetensors
        PYTHONPATH=/tmp/agilerl fastvec bench --multiagent
    """
    from agilerl.vector.pz_async_vec_env import AsyncPettingZooVecEnv

    env = AsyncPettingZooVecEnv([parallel_env_fn(env_id)] * num_envs)
    env.reset(seed=0)
    spaces = {a: env.single_action_space(a) for a in env.agents}
    return SyncRunner(env, env.step, multiagent_actions(spaces, num_envs), num_envs * len(spaces), env.close)


def make_rllib_vector(env_id: str, num_envs: int) -> Runner:
    """RLlib's SyncVectorMultiAgentEnv over the env in RLlib's ParallelPettingZooEnv (what its MultiAgentEnvRunner
    steps), in this process; its step takes one dict of actions per env."""
    from ray.rllib.env.vector.sync_vector_multi_agent_env import SyncVectorMultiAgentEnv
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    fn = parallel_env_fn(env_id)
    env = SyncVectorMultiAgentEnv([lambda: ParallelPettingZooEnv(fn())] * num_envs)
    env.reset(seed=0)
    spaces = env.single_action_spaces
    assert spaces is not None  # set by its constructor
    rows = [
        [{a: v[i] for a, v in row.items()} for i in range(num_envs)] for row in multiagent_actions(spaces, num_envs)
    ]
    return SyncRunner(env, env.step, rows, num_envs * len(spaces), env.close)
