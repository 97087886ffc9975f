"""RLlib and Ray: RLlib's EnvRunner.sample() (on gymnasium's envs, on a fastvec pool, or FastvecEnvRunner; on a
multi-agent env, RLlib's MultiAgentEnvRunner or FastvecMultiAgentEnvRunner; with the pipelines of RLlib's own
atari_ppo.py and mujoco_ppo.py examples), FastvecEnvRunner's bare loop, and one Ray actor per env."""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

from fastvec.bench.runners import NotAvailable, Runner, SyncRunner
from fastvec.bench.work import (
    ATARI,
    ATARI_MAX_STEPS,
    ale_id,
    classic_only,
    discrete_actions,
    gym_atari_kwargs,
    is_atari,
    is_box2d,
    is_mujoco,
    is_multiagent,
    parallel_env,
    parallel_env_fn,
)

# RLlib's own Atari pipeline (wrap_atari_for_new_api_stack) loses a life per episode and presses FIRE at
# reset; its fastvec runs do the same. Its frames are channel-last, float32 x / 128 - 1 (fastvec's RLlib
# adapter gives them so).
RLLIB_ATARI = {**ATARI, "episodic_life": True, "use_fire_reset": True, "max_episode_steps": ATARI_MAX_STEPS}


def _rllib_atari_default(env_id: str) -> str:
    """Registers RLlib's standard Atari env (ALE single frames in wrap_atari_for_new_api_stack, 84x84,
    4 frames) with Ray Tune; returns its name."""
    from ray.tune.registry import register_env

    game = ale_id(env_id)
    kwargs = {k: v for k, v in gym_atari_kwargs().items() if k != "max_num_frames_per_episode"}

    def creator(config: dict[str, Any]) -> Any:
        import gymnasium as gym
        from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

        return wrap_atari_for_new_api_stack(
            gym.make(game, **kwargs), dim=ATARI["img_height"], framestack=ATARI["stack_num"]
        )

    name = f"rllib-atari-{env_id}"
    register_env(name, creator)
    return name


# RLlib's atari_ppo.py: ALE's env stepping single frames (its env_config: no sticky actions, the minimal action set)
# in wrap_atari_for_new_api_stack(..., framestack=None), 64x64 single frames stacked by FrameStackingEnvToModule(4);
# fastvec's Atari with those options. Its CNN; 1 env per runner and 2 runners for its 4000-step batches: 2000
# steps a sample() call.
ATARI_PPO_ENV: dict[str, Any] = {"frameskip": 1, "full_action_space": False, "repeat_action_probability": 0.0}
ATARI_PPO_FASTVEC = {
    **RLLIB_ATARI,
    "stack_num": 1,
    "img_height": 64,
    "img_width": 64,
    "repeat_action_probability": 0.0,
    "full_action_space": False,
}
ATARI_PPO_MODEL = {
    "conv_filters": [[16, 4, 2], [32, 4, 2], [64, 4, 2], [128, 4, 2]],
    "conv_activation": "relu",
    "head_fcnet_hiddens": [256],
    "vf_share_layers": True,
}
# RLlib's mujoco_ppo.py: MeanStdFilter, 16 envs per runner, 32 steps each a sample() call, its MLP.
MUJOCO_PPO_MODEL = {
    "vf_share_layers": False,
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "tanh",
    "head_fcnet_hiddens": [256],
    "head_fcnet_activation": None,
    "free_log_std": True,
}


def _frame_stacking(env: Any = None, spaces: Any = None, device: Any = None) -> Any:
    """atari_ppo.py's env-to-module connector (a module-level function: a remote runner gets it pickled)."""
    from ray.rllib.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule

    return FrameStackingEnvToModule(num_frames=4)


def _mean_std_filter(env: Any = None, spaces: Any = None, device: Any = None) -> Any:
    """mujoco_ppo.py's env-to-module connector."""
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    return MeanStdFilter()


def _rllib_atari_ppo_default(env_id: str) -> str:
    """Registers atari_ppo.py's env (ALE in wrap_atari_for_new_api_stack, single frames) with Ray Tune."""
    from ray.tune.registry import register_env

    game = ale_id(env_id)

    def creator(config: dict[str, Any]) -> Any:
        import gymnasium as gym
        from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

        return wrap_atari_for_new_api_stack(gym.make(game, **ATARI_PPO_ENV), framestack=None)

    name = f"rllib-atari_ppo-{env_id}"
    register_env(name, creator)
    return name


def example_timesteps(example: str, num_envs: int) -> int:
    """The env steps of one runner's sample() call in RLlib's example, at ``num_envs`` envs per runner."""
    return 2000 if example == "atari_ppo" else 32 * num_envs


class RLlibRunner(Runner):
    """RLlib's EnvRunner.sample() as RLlib's algorithms call it (new API stack, PPO's default torch module:
    the policy's forward pass is in the loop, as in training): ``timesteps`` env steps per call, then
    ``get_metrics()``, as ``synchronous_parallel_sample`` does. ``runner``: "default" (RLlib's runner and
    vectorization: gymnasium's SyncVectorEnv over gymnasium's env; for Atari, RLlib's own Atari
    wrappers), "stock" (RLlib's SingleAgentEnvRunner on a fastvec pool), "fastvec" (FastvecEnvRunner).

    A multi-agent env (one policy shared by its agents, as ``configure`` sets it): "default" is RLlib's
    MultiAgentEnvRunner over its SyncVectorMultiAgentEnv of the PettingZoo env, "fastvec" FastvecMultiAgentEnvRunner
    over fastvec's native port, "fastvec-python" over the PettingZoo env in the Python-env pool; ``run`` counts the
    agent steps of the episodes sampled (one step of one agent = one step).

    ``example``: the pipeline of RLlib's ``atari_ppo.py`` (Atari ids) or ``mujoco_ppo.py`` (MuJoCo ids), its
    connectors and model, ``timesteps`` its sample() size."""

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        runner: str = "fastvec",
        num_threads: int = 1,
        timesteps: int = 4000,
        example: str | None = None,
    ) -> None:
        import torch
        from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
        from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

        torch.set_num_threads(1)
        config = rllib_config(env_id, num_envs, runner, num_threads, example)
        self._multiagent = config.is_multi_agent
        cls = config.env_runner_cls or (MultiAgentEnvRunner if self._multiagent else SingleAgentEnvRunner)
        self._runner = cls(config=config)
        self.steps_per_call = self.timesteps = max(timesteps, num_envs)
        self._runner.sample(num_timesteps=self.timesteps, random_actions=False)
        self._runner.get_metrics()

    def run(self, calls: int) -> int:
        steps = 0
        for _ in range(calls):
            episodes = self._runner.sample(num_timesteps=self.timesteps, random_actions=False)
            self._runner.get_metrics()
            steps += sum(e.agent_steps() if self._multiagent else len(e) for e in episodes)
        return steps

    def close(self) -> None:
        self._runner.stop()


def rllib_config(env_id: str, num_envs: int, runner: str, num_threads: int = 1, example: str | None = None) -> Any:
    """PPO's config for one local EnvRunner of ``num_envs`` envs (see RLlibRunner for ``runner`` and ``example``)."""
    from ray.rllib.algorithms.ppo import PPOConfig

    config = PPOConfig().framework("torch").debugging(seed=0)
    if example is not None:
        return _example_config(config, example, env_id, num_envs, runner, num_threads).env_runners(num_env_runners=0)
    if is_multiagent(env_id):
        return _multiagent_config(config, env_id, num_envs, runner, num_threads).env_runners(num_env_runners=0)
    atari = is_atari(env_id)
    if runner == "default":
        config.environment(_rllib_atari_default(env_id) if atari else env_id)
        config.env_runners(num_envs_per_env_runner=num_envs)
    else:
        from fastvec.adapters._rllib_runner import FastvecEnvRunner
        from fastvec.adapters.rllib import configure

        cls = FastvecEnvRunner if runner == "fastvec" else None
        options = RLLIB_ATARI if atari else {}
        configure(config, env_id, num_envs=num_envs, num_threads=num_threads, env_runner_cls=cls, **options)
    return config.env_runners(num_env_runners=0)


def _example_config(config: Any, example: str, env_id: str, num_envs: int, runner: str, num_threads: int) -> Any:
    """``config`` as RLlib's ``example`` script sets it up, on RLlib's default runner or through fastvec's configure."""
    from fastvec.adapters.rllib import configure

    if example == "atari_ppo":
        if not is_atari(env_id):
            raise NotAvailable("atari_ppo: Atari ids only")
        connector, model, options = _frame_stacking, ATARI_PPO_MODEL, ATARI_PPO_FASTVEC
        default_env = _rllib_atari_ppo_default(env_id) if runner == "default" else ""
    elif example == "mujoco_ppo":
        if not is_mujoco(env_id):
            raise NotAvailable("mujoco_ppo: MuJoCo ids only")
        connector, model, options, default_env = _mean_std_filter, MUJOCO_PPO_MODEL, {}, env_id
    else:
        raise ValueError(f"unknown RLlib example {example!r}")
    config.rl_module(model_config=model).env_runners(env_to_module_connector=connector)
    if runner == "default":
        return config.environment(default_env).env_runners(num_envs_per_env_runner=num_envs)
    cls = None if runner == "stock" else _fastvec_runner_cls()
    return configure(config, env_id, num_envs=num_envs, num_threads=num_threads, env_runner_cls=cls, **options)


def _fastvec_runner_cls() -> type:
    from fastvec.adapters._rllib_runner import FastvecEnvRunner

    return FastvecEnvRunner


def _multiagent_config(config: Any, env_id: str, num_envs: int, runner: str, num_threads: int) -> Any:
    """``config`` set up for the multi-agent ``env_id`` by fastvec's ``configure`` (see RLlibRunner for ``runner``)."""
    import fastvec
    from fastvec.adapters.rllib import configure

    if not _box_observations(env_id):
        # PPO's default module takes Box observations; RLlib's own rock-paper-scissors examples one-hot rps_v2's.
        config.env_runners(env_to_module_connector=_flatten_observations)
    if runner == "default":
        return configure(config, parallel_env_fn(env_id), num_envs=num_envs, env_runner_cls=None)
    if runner == "fastvec-python":
        return configure(config, parallel_env_fn(env_id), num_envs=num_envs, num_threads=num_threads)
    if runner != "fastvec":
        raise ValueError(f"runner {runner!r} has no multi-agent form")
    if env_id not in fastvec.list_envs():
        raise NotAvailable("no native port")
    return configure(config, env_id, num_envs=num_envs, num_threads=num_threads)


def _box_observations(env_id: str) -> bool:
    import gymnasium as gym

    env = parallel_env(env_id)
    try:
        return all(isinstance(env.observation_space(a), gym.spaces.Box) for a in env.possible_agents)
    finally:
        env.close()


def _flatten_observations(env: Any, spaces: Any = None, device: Any = None) -> Any:
    """The env-to-module connector of both runners on an env whose observations are not Boxes (a module-level
    function: a remote runner gets it pickled)."""
    from ray.rllib.connectors.env_to_module import FlattenObservations

    return FlattenObservations(multi_agent=True)


class RLlibLoopRunner(Runner):
    """The ceiling of any EnvRunner on fastvec: FastvecEnvRunner's own batched loop (its forward pass and
    actions, the pool's step) with no episodes built and no metrics kept."""

    def __init__(self, env_id: str, num_envs: int, num_threads: int = 1, timesteps: int = 4000) -> None:
        import torch

        from fastvec.adapters._rllib_runner import FastvecEnvRunner, action_map

        torch.set_num_threads(1)
        self._runner = FastvecEnvRunner(config=rllib_config(env_id, num_envs, "fastvec", num_threads))
        self._runner.module.eval()
        self._to_env = action_map(self._runner.env.single_action_space, True, False)
        self.num_envs = num_envs
        self.steps_per_call = self.timesteps = max(timesteps, num_envs)
        self._obs, _ = self._runner.env.env.reset(seed=0)
        self.run(1)

    def run(self, calls: int) -> int:
        runner, env = self._runner, self._runner.env.env
        forward = runner.module._forward_exploration
        obs, steps = self._obs, 0
        for _ in range(calls * (self.timesteps // self.num_envs)):
            _, actions, _ = runner._policy(obs, forward, True, 0, self._to_env)
            obs = env.step(actions)[0]
            steps += self.num_envs
        self._obs = obs
        return steps

    def close(self) -> None:
        self._runner.stop()


def make_rllib(env_id: str, num_envs: int, runner: str, example: str | None = None) -> Runner:
    if example is None:
        return RLlibRunner(env_id, num_envs, runner)
    return RLlibRunner(env_id, num_envs, runner, timesteps=example_timesteps(example, num_envs), example=example)


def make_ray_actors(env_id: str, num_envs: int) -> Runner:
    """One Ray actor per env, stepped with ray.get: what a naive Ray user would write."""
    import gymnasium as gym
    import ray

    classic_only(env_id)
    if is_box2d(env_id):
        raise NotAvailable("not wired for this env")  # its actors take int actions
    if not ray.is_initialized():
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)

    class EnvActor:
        def __init__(self, seed: int) -> None:
            self.env = gym.make(env_id)
            self.env.reset(seed=seed)

        def step(self, action: int) -> tuple:
            obs, reward, terminated, truncated, _ = self.env.step(action)
            if terminated or truncated:
                obs, _ = self.env.reset()
            return obs, reward, terminated, truncated

    actor = ray.remote(EnvActor)
    actors: list[Any] = [actor.remote(i) for i in range(num_envs)]  # handles, whose methods Ray makes
    ray.get([a.step.remote(0) for a in actors])

    def step(actions: np.ndarray) -> list:
        return ray.get([a.step.remote(int(x)) for a, x in zip(actors, actions, strict=True)])

    def close() -> None:
        for a in actors:
            ray.kill(a)

    return SyncRunner(actors, step, discrete_actions(num_envs, np.int64, env_id), num_envs, close)
