"""What is stepped: a runner (one constructed, reset vector env and the loop that steps it) for each
contender fastvec is compared with, built with the same work for every one (shared/BENCHMARKING.md)."""

from __future__ import annotations

import fnmatch
import functools
import importlib
import itertools
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from typing import Any

import numpy as np

from fastvec.bench.machine import CpuShare, installed
from fastvec.bench.measure import NotAvailable, calibrate, measure
from fastvec.registry import family_ids

CLASSIC_ENVS = ("CartPole-v1",)
# gymnasium's MuJoCo v5 envs: fastvec runs them natively, and EnvPool 1.2.5 has each as the same v5 (frame skip,
# observation, action bounds and episode limit checked equal to gymnasium's: 1000 steps, Pusher 100, Reacher 50).
# Every contender steps the env as gymnasium makes it, with uniformly random actions within its bounds.
MUJOCO_ENVS = family_ids("mujoco")
# Every Atari contender runs the same work: gymnasium v5's settings (sticky actions 0.25, noop starts up
# to 30, frame skip 4 with max-pooling, 84x84 grayscale area resize, 4 frames), no life loss or reward
# clipping, episodes cut at 27,000 steps.
ATARI = {
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


class Runner:
    """One constructed, reset vector env and the loop that steps it.

    ``run(calls)`` makes ``calls`` step calls (sync) or recv/send pairs (async)
    and returns the number of env steps they made.
    """

    steps_per_call: int
    chunk = 1  # calls timed at once, set by the warm-up

    def run(self, calls: int) -> int:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def warm_up(self, seconds: float) -> None:
        """Untimed stepping for at least ``seconds``, which also picks the chunk of calls timed at once."""
        self.chunk = calibrate(self, seconds)

    def timed(self, seconds: float) -> dict[str, Any]:
        """One measurement of about ``seconds``: :func:`fastvec.bench.measure.measure`'s dict."""
        return measure(self, self.chunk, seconds)


class SyncRunner(Runner):
    def __init__(
        self, env: Any, step: Callable[[np.ndarray], Any], actions: np.ndarray, num_envs: int, close: Callable[[], None]
    ) -> None:
        self.env = env  # kept alive for the lifetime of the runner
        self._step = step
        self._actions: Iterator[np.ndarray] = itertools.cycle(list(actions))
        self.steps_per_call = num_envs
        self._close = close

    def run(self, calls: int) -> int:
        step = self._step
        for a in itertools.islice(self._actions, calls):
            step(a)
        return calls * self.steps_per_call

    def close(self) -> None:
        self._close()


class AsyncRunner(Runner):
    """EnvPool's async idiom, which fastvec shares: recv a batch, send actions for exactly those envs."""

    def __init__(self, env: Any, actions: np.ndarray, batch_size: int) -> None:
        self.env = env
        self._actions: Iterator[np.ndarray] = itertools.cycle(list(actions[:, :batch_size]))
        self.steps_per_call = batch_size
        env.async_reset()
        # The first recv returns reset results, not steps: take it here, outside any timing.
        info = env.recv()[4]
        env.send(next(self._actions), info["env_id"])

    def run(self, calls: int) -> int:
        recv, send = self.env.recv, self.env.send
        for a in itertools.islice(self._actions, calls):
            info = recv()[4]
            send(a, info["env_id"])
        return calls * self.steps_per_call

    def close(self) -> None:
        self.env.close()


def _actions(num_envs: int, dtype: type, env_id: str = "CartPole-v1") -> np.ndarray:
    """Uniformly random actions, drawn before timing (CartPole: 2 actions; an Atari game: its minimal set)."""
    rng = np.random.default_rng(12345)
    return rng.integers(0, _num_actions(env_id), size=(NUM_ACTION_ROWS, num_envs)).astype(dtype)


def _box_actions(space: Any, num_envs: int) -> np.ndarray:
    """Uniformly random continuous actions within ``space`` (a Box), in its dtype, drawn before timing.

    Each contender draws from its own action space, so that its memory probe loads no other library's env;
    the spaces are all gymnasium's (EnvPool's bounds equal them in float64) and the stream is the same.
    """
    rng = np.random.default_rng(12345)
    low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
    u = rng.random((NUM_ACTION_ROWS, num_envs, *space.shape))
    return np.clip(low + u * (high - low), low, high).astype(space.dtype)


def _actions_for(env_id: str, space: Any, num_envs: int, discrete: type) -> np.ndarray:
    """A contender's actions: within its Box (in the Box's dtype) for MuJoCo, else :func:`_actions` in ``discrete``."""
    return _box_actions(space, num_envs) if is_mujoco(env_id) else _actions(num_envs, discrete, env_id)


@functools.cache
def _num_actions(env_id: str) -> int:
    if not is_atari(env_id):
        return 2
    import gymnasium as gym

    env = gym.make(_ale_id(env_id))
    n = int(env.action_space.n)
    env.close()
    return n


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
    """The Python-env pool (worker processes, shared memory) stepping gymnasium's own env; ``num_workers``
    worker processes, its ``num_threads`` (None: its default, one fewer than the cores), at most one per env."""
    _gymnasium_env_only(env_id)
    if num_workers is not None and num_workers > num_envs:
        raise NotAvailable("n/a (more workers than envs)")
    return _fastvec_runner(env_id, num_envs, False, backend="python", num_threads=num_workers)


def _fastvec_runner(env_id: str, num_envs: int, asynchronous: bool, **kwargs: Any) -> Runner:
    import fastvec

    if asynchronous:
        env = fastvec.make(env_id, num_envs, batch_size=num_envs // 2, seed=0, **kwargs)
        return AsyncRunner(env, _actions_for(env_id, env.single_action_space, num_envs, np.int64), num_envs // 2)
    env = fastvec.make(env_id, num_envs, seed=0, **kwargs)
    env.reset()
    actions = _actions_for(env_id, env.single_action_space, num_envs, np.int64)
    return SyncRunner(env, env.step, actions, num_envs, env.close)


def _classic_only(env_id: str) -> None:
    if env_id not in CLASSIC_ENVS:
        raise NotAvailable("not wired for this env")


def _gymnasium_env_only(env_id: str) -> None:
    """Refuses Atari, whose preprocessing each library wires its own way (the Python-env pool is not wired for
    it); classic control and MuJoCo are the env ``gymnasium.make(env_id)`` makes, the same work everywhere."""
    if env_id not in CLASSIC_ENVS and not is_mujoco(env_id):
        raise NotAvailable("not wired for this env")


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
    else:
        _classic_only(env_id)
    if asynchronous:
        env = envpool.make(env_id, batch_size=num_envs // 2, **kwargs)
        return AsyncRunner(env, _actions_for(env_id, env.action_space, num_envs, np.int32), num_envs // 2)
    env = envpool.make(env_id, **kwargs)
    env.reset()
    return SyncRunner(env, env.step, _actions_for(env_id, env.action_space, num_envs, np.int32), num_envs, env.close)


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
    else:
        _classic_only(env_id)
    actions = _actions(num_envs, np.int64, env_id)  # as the fastvec rows: the front door's cost alone
    if asynchronous:
        env = fastvec.envpool.make(env_id, env_type="gymnasium", batch_size=num_envs // 2, **kwargs)
        return AsyncRunner(env, actions, num_envs // 2)
    env = fastvec.envpool.make(env_id, env_type="gymnasium", **kwargs)
    env.reset()
    return SyncRunner(env, env.step, actions, num_envs, env.close)


def _ale_id(env_id: str) -> str:
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    return f"ALE/{env_id}"


def _gym_atari_kwargs() -> dict[str, Any]:
    """ALE/<Game>-v5 stepping single frames: the wrappers do the frame skip, as gymnasium's docs say."""
    return {
        "frameskip": 1,
        "repeat_action_probability": ATARI["repeat_action_probability"],
        "full_action_space": ATARI["full_action_space"],
        "max_num_frames_per_episode": ATARI_MAX_STEPS * 4,
    }


def gym_atari_env(env_id: str) -> Any:
    """gymnasium's standard Atari pipeline: AtariPreprocessing + FrameStackObservation."""
    import gymnasium as gym
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    env = gym.make(_ale_id(env_id), **_gym_atari_kwargs())
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
    return SyncRunner(env, env.step, _actions(batch, np.int64, env_id), batch, env.close)


def _atari_roms() -> list[str]:
    from ale_py import roms

    return roms.get_all_rom_ids()


def make_gymnasium(env_id: str, num_envs: int, mode: str) -> Runner:
    import gymnasium as gym

    if is_atari(env_id):
        if mode == "vector_entry_point":
            raise NotAvailable("gymnasium has no vector implementation")
        fns = [functools.partial(gym_atari_env, env_id)] * num_envs
        env = gym.vector.SyncVectorEnv(fns) if mode == "sync" else gym.vector.AsyncVectorEnv(fns, context="fork")
    else:
        _gymnasium_env_only(env_id)
        if mode == "vector_entry_point" and gym.spec(env_id).vector_entry_point is None:
            raise NotAvailable("gymnasium has no vector implementation")
        env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)
    env.reset(seed=0)
    actions = _actions_for(env_id, env.single_action_space, num_envs, np.int64)
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
            _ale_id(env_id),
            n_envs=num_envs,
            seed=0,
            vec_env_cls=cls,
            vec_env_kwargs=cls_kwargs,
            env_kwargs=_gym_atari_kwargs(),
            wrapper_kwargs={
                "noop_max": ATARI["noop_max"],
                "frame_skip": ATARI["frame_skip"],
                "screen_size": ATARI["img_height"],
                "terminal_on_life_loss": ATARI["episodic_life"],
                "clip_reward": ATARI["reward_clip"],
            },
        )
        env = VecFrameStack(env, n_stack=ATARI["stack_num"])
    else:
        _gymnasium_env_only(env_id)
        env = make_vec_env(env_id, n_envs=num_envs, seed=0, vec_env_cls=cls, vec_env_kwargs=cls_kwargs or None)
    env.reset()
    return SyncRunner(env, env.step, _actions_for(env_id, env.action_space, num_envs, np.int64), num_envs, env.close)


# RLlib's own Atari pipeline (wrap_atari_for_new_api_stack) loses a life per episode and presses FIRE at
# reset; its fastvec runs do the same. Its frames are channel-last, float32 x / 128 - 1 (fastvec's RLlib
# adapter gives them so).
RLLIB_ATARI = {**ATARI, "episodic_life": True, "use_fire_reset": True, "max_episode_steps": ATARI_MAX_STEPS}


def _rllib_atari_default(env_id: str) -> str:
    """Registers RLlib's standard Atari env (ALE single frames in wrap_atari_for_new_api_stack, 84x84,
    4 frames) with Ray Tune; returns its name."""
    from ray.tune.registry import register_env

    ale_id = _ale_id(env_id)
    kwargs = {k: v for k, v in _gym_atari_kwargs().items() if k != "max_num_frames_per_episode"}

    def creator(config: dict[str, Any]) -> Any:
        import gymnasium as gym
        from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

        return wrap_atari_for_new_api_stack(
            gym.make(ale_id, **kwargs), dim=ATARI["img_height"], framestack=ATARI["stack_num"]
        )

    name = f"rllib-atari-{env_id}"
    register_env(name, creator)
    return name


class RLlibRunner(Runner):
    """RLlib's EnvRunner.sample() as RLlib's algorithms call it (new API stack, PPO's default torch module:
    the policy's forward pass is in the loop, as in training): ``timesteps`` env steps per call, then
    ``get_metrics()``, as ``synchronous_parallel_sample`` does. ``runner``: "default" (RLlib's runner and
    vectorization: gymnasium's SyncVectorEnv over gymnasium's env; for Atari, RLlib's own Atari
    wrappers), "stock" (RLlib's SingleAgentEnvRunner on a fastvec pool), "fastvec" (FastvecEnvRunner)."""

    def __init__(
        self, env_id: str, num_envs: int, runner: str = "fastvec", num_threads: int = 1, timesteps: int = 4000
    ) -> None:
        import torch
        from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

        torch.set_num_threads(1)
        config = rllib_config(env_id, num_envs, runner, num_threads)
        cls = config.env_runner_cls or SingleAgentEnvRunner
        self._runner = cls(config=config)
        self.steps_per_call = self.timesteps = max(timesteps, num_envs)
        self._runner.sample(num_timesteps=self.timesteps, random_actions=False)
        self._runner.get_metrics()

    def run(self, calls: int) -> int:
        steps = 0
        for _ in range(calls):
            episodes = self._runner.sample(num_timesteps=self.timesteps, random_actions=False)
            self._runner.get_metrics()
            steps += sum(len(e) for e in episodes)
        return steps

    def close(self) -> None:
        self._runner.stop()


def rllib_config(env_id: str, num_envs: int, runner: str, num_threads: int = 1) -> Any:
    """PPO's config for one local EnvRunner of ``num_envs`` envs (see RLlibRunner for ``runner``)."""
    from ray.rllib.algorithms.ppo import PPOConfig

    config = PPOConfig().framework("torch").debugging(seed=0)
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


class RLlibLoopRunner(Runner):
    """The ceiling of any EnvRunner on fastvec: FastvecEnvRunner's own batched loop (its forward pass and
    actions, the pool's step) with no episodes built and no metrics kept."""

    def __init__(self, env_id: str, num_envs: int, num_threads: int = 1, timesteps: int = 4000) -> None:
        import torch

        from fastvec.adapters._rllib_runner import FastvecEnvRunner, _action_map

        torch.set_num_threads(1)
        self._runner = FastvecEnvRunner(config=rllib_config(env_id, num_envs, "fastvec", num_threads))
        self._runner.module.eval()
        self._to_env = _action_map(self._runner.env.single_action_space, True, False)
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


def make_rllib(env_id: str, num_envs: int, runner: str) -> Runner:
    return RLlibRunner(env_id, num_envs, runner)


def make_ray_actors(env_id: str, num_envs: int) -> Runner:
    """One Ray actor per env, stepped with ray.get: what a naive Ray user would write."""
    import gymnasium as gym
    import ray

    _classic_only(env_id)
    if not ray.is_initialized():
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, logging_level="ERROR")

    @ray.remote
    class EnvActor:
        def __init__(self, seed: int) -> None:
            self.env = gym.make(env_id)
            self.env.reset(seed=seed)

        def step(self, action: int) -> tuple:
            obs, reward, terminated, truncated, _ = self.env.step(action)
            if terminated or truncated:
                obs, _ = self.env.reset()
            return obs, reward, terminated, truncated

    actors = [EnvActor.remote(i) for i in range(num_envs)]
    ray.get([a.step.remote(0) for a in actors])

    def step(actions: np.ndarray) -> list:
        return ray.get([a.step.remote(int(x)) for a, x in zip(actors, actions, strict=True)])

    def close() -> None:
        for a in actors:
            ray.kill(a)

    return SyncRunner(actors, step, _actions(num_envs, np.int64), num_envs, close)


class LoopCeiling(Runner):
    """The ceiling: one fastvec env stepped alone in a C++ loop on this thread (``fastvec._core.loop_rate``)
    with uniformly random actions, its own terminations, the registry's episode limit and resets (``next_step``:
    a step of their own, as the pool's default autoreset mode has them; else within the step that ended the
    episode, as same-step autoreset): the trajectories the pool steps, with no pool around them (not a bare
    physics or emulator loop). One thread can step no faster; k threads, k times faster at most. It does not
    depend on num_envs.

    ``loops`` > 1 runs that many such loops at once, one env each on threads of their own (loop_rate releases
    the GIL), and sums their rates: what the cores really deliver side by side (a shared cache, memory
    bandwidth, a VM's vCPUs), against which the projection (``loops`` x one loop) can be checked.

    Each measurement is one loop of about ``seconds``; its rate excludes the env's construction, which every
    loop repeats (a MuJoCo model is parsed again), so the loop is never timed from Python.
    """

    steps_per_call = 1
    MIN_STEPS = 100

    def __init__(self, env_id: str, loops: int = 1, next_step: bool = True) -> None:
        import fastvec
        from fastvec import _core
        from fastvec.vector import _env_options

        if env_id not in fastvec.list_envs():
            raise NotAvailable("not available in this build")
        entry = fastvec.registry.lookup(env_id)
        options = _env_options(entry, {})  # the options fastvec.make(env_id) steps with: its defaults
        self._loop = functools.partial(
            _core.loop_rate,
            entry.native,
            options.numbers,
            options.texts,
            options.ranges,
            max_episode_steps=entry.max_episode_steps or 0,
            next_step=next_step,
        )
        self._loops = loops
        self._threads = ThreadPoolExecutor(loops) if loops > 1 else None
        self._steps_per_s = 0.0  # of all loops together

    def run(self, calls: int) -> int:
        """Steps ``calls`` steps in each loop (constructions included: for the timing, see :meth:`timed`)."""
        if self._threads is None:
            self._steps_per_s = self._loop(steps=calls)
        else:
            self._steps_per_s = sum(self._threads.map(lambda steps: self._loop(steps=steps), [calls] * self._loops))
        return calls * self._loops

    def _steps_for(self, seconds: float) -> int:
        return max(self.MIN_STEPS, int(self._steps_per_s / self._loops * seconds))

    def warm_up(self, seconds: float) -> None:
        """Loops until ``seconds`` have passed, which also estimates the rate :meth:`timed` sizes its loop by."""
        start, steps = time.perf_counter(), self.MIN_STEPS
        while True:
            self.run(steps)
            if time.perf_counter() - start >= seconds:
                return
            steps = self._steps_for(min(seconds, 0.25))

    def timed(self, seconds: float) -> dict[str, Any]:
        share = CpuShare()
        self.run(self._steps_for(seconds))
        rate = self._steps_per_s
        return {"steps_per_s": rate, "us_per_call": 1e6 / rate, "other_cpu": share.other()}

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown()


def make_ceiling(env_id: str, num_envs: int, loops: int = 1, next_step: bool = True) -> Runner:
    if loops > num_envs:
        raise NotAvailable(f"n/a (fewer envs than {loops} loops)")
    return LoopCeiling(env_id, loops, next_step)


# Importing the mujoco Python bindings (gymnasium's MuJoCo envs do) installs MuJoCo's timer callback (mjcb_time) in
# the libmujoco that fastvec's MuJoCo envs share, and from then on every mj_step in the process reads the clock
# around each of its stages: fastvec's envs and the ceiling step 14-19% slower (HalfCheetah, Hopper; EnvPool, with
# its own MuJoCo, does not). So a contender that would load them steps a MuJoCo env in a process of its own
# (OwnProcessRunner, from Contender.build) and the measuring process never loads them; a process that measures no
# fastvec (the memory probe) builds it in place (Contender.make).


class ChildExited(RuntimeError):
    """The process an :class:`OwnProcessRunner` steps in is gone."""


class OwnProcessRunner(Runner):
    """A contender's runner built, warmed up and timed in a fresh interpreter of its own, driven over a pipe: the
    measurements are the child's, taken as in this process; its construction and its messages are not timed."""

    def __init__(self, key: str, env_id: str, num_envs: int) -> None:
        self._conn, child = Pipe()
        code = f"from fastvec.bench.runners import serve_runner; serve_runner({child.fileno()})"
        # Not in the caller's directory, which may be fastvec's source tree (see measure.memory_in_fresh_interpreter).
        self._proc = subprocess.Popen(
            [sys.executable, "-c", code], pass_fds=[child.fileno()], cwd=tempfile.gettempdir()
        )
        child.close()
        try:
            self.steps_per_call = self._call("make", key, env_id, num_envs)
        except Exception:
            self._conn.close()
            self._proc.wait()
            raise

    def _call(self, *message: Any) -> Any:
        try:
            self._conn.send(message)
            status, value = self._conn.recv()
        except (EOFError, OSError) as exc:
            raise ChildExited(f"the process stepping it exited with code {self._proc.wait()}") from exc
        if status == "not available":
            raise NotAvailable(value)
        if status == "error":
            raise RuntimeError(value)
        return value

    def run(self, calls: int) -> int:
        return self._call("run", calls)

    def warm_up(self, seconds: float) -> None:
        self._call("warm_up", seconds)

    def timed(self, seconds: float) -> dict[str, Any]:
        return self._call("timed", seconds)

    def close(self) -> None:
        try:
            self._call("close")
        except ChildExited:
            pass  # gone already: what it failed with was reported when it did
        finally:
            self._conn.close()
            self._proc.wait()


def serve_runner(fd: int) -> None:
    """The child's side of :class:`OwnProcessRunner`: makes the runner it is asked for, in place, and answers
    each call until "close"."""
    warnings.filterwarnings("ignore")  # as the measuring process: gymnasium warns on every construction
    conn, runner, parent = Connection(fd), None, os.getppid()
    while True:
        while not conn.poll(1.0):
            if os.getppid() != parent:
                return  # the bench died without closing it (processes it forked may hold the pipe open)
        method, *args = conn.recv()
        try:
            if method == "make":
                key, env_id, num_envs = args
                import_packages([contender(key)])
                runner = contender(key).make(env_id, num_envs)
                value = runner.steps_per_call
            else:
                value = getattr(runner, method)(*args)
        except NotAvailable as exc:
            conn.send(("not available", str(exc)))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        else:
            conn.send(("ok", value))
        if method == "close" or (method == "make" and runner is None):
            return


@dataclass(frozen=True)
class Contender:
    key: str
    label: str
    package: str
    make: Callable[[str, int], Runner]
    uses_processes: bool = False  # one OS process per env
    needs_batch: bool = False  # async with batch_size = num_envs // 2: needs num_envs >= 2
    max_envs: int | None = None  # above this, too slow to even construct on a small machine
    # A ceiling: that many envs, each stepped in a C++ loop of its own (no vector env): the same at every
    # num_envs, no memory probe.
    ceiling: int = 0
    mujoco_bindings: bool = False  # makes gymnasium's envs in this process: a MuJoCo env loads the mujoco bindings

    def build(self, env_id: str, num_envs: int) -> Runner:
        """``make``, in a process of its own where it would load the mujoco Python bindings into this one (see
        :class:`OwnProcessRunner`)."""
        if self.mujoco_bindings and is_mujoco(env_id):
            return OwnProcessRunner(self.key, env_id, num_envs)
        return self.make(env_id, num_envs)

    def skip_reason(self, num_envs: int, max_processes: int | None = None) -> str | None:
        """Why this contender does not run at num_envs (None: it runs)."""
        if not installed(self.package):
            return "not installed"
        if self.needs_batch and num_envs < 2:
            return "n/a (batch_size = num_envs/2)"
        too_many = max_processes is not None and self.uses_processes and num_envs > max_processes
        if too_many or (self.max_envs is not None and num_envs > self.max_envs):
            return "skipped (too many processes)"
        return None


CONTENDERS = [
    Contender("fastvec", "fastvec sync (default threads)", "fastvec", lambda e, n: make_fastvec(e, n, None, False)),
    Contender("fastvec-t1", "fastvec sync, num_threads=1", "fastvec", lambda e, n: make_fastvec(e, n, 1, False)),
    Contender("fastvec-t2", "fastvec sync, num_threads=2", "fastvec", lambda e, n: make_fastvec(e, n, 2, False)),
    Contender(
        "fastvec-async",
        "fastvec async (default threads)",
        "fastvec",
        lambda e, n: make_fastvec(e, n, None, True),
        needs_batch=True,
    ),
    Contender(
        "fastvec-async-t1",
        "fastvec async, num_threads=1",
        "fastvec",
        lambda e, n: make_fastvec(e, n, 1, True),
        needs_batch=True,
    ),
    Contender(
        "fastvec-async-t2",
        "fastvec async, num_threads=2",
        "fastvec",
        lambda e, n: make_fastvec(e, n, 2, True),
        needs_batch=True,
    ),
    *(
        Contender(
            f"fastvec{'-async' if a else ''}-same-step-t{t}",
            f"fastvec {'async' if a else 'sync'}, same-step autoreset, num_threads={t}",
            "fastvec",
            lambda e, n, t=t, a=a: make_fastvec(e, n, t, a, "same_step"),
            needs_batch=a,
        )
        for a in (False, True)
        for t in (1, 2)
    ),
    Contender("fastvec-python", "fastvec Python-env pool (gymnasium's env)", "fastvec", make_fastvec_python),
    Contender(
        "fastvec-python-t1",
        "fastvec Python-env pool (gymnasium's env), 1 worker",
        "fastvec",
        lambda e, n: make_fastvec_python(e, n, 1),
    ),
    Contender(
        "fastvec-python-t2",
        "fastvec Python-env pool (gymnasium's env), 2 workers",
        "fastvec",
        lambda e, n: make_fastvec_python(e, n, 2),
    ),
    Contender(
        "gym-numpy",
        "gymnasium vector_entry_point (numpy)",
        "gymnasium",
        lambda e, n: make_gymnasium(e, n, "vector_entry_point"),
    ),
    Contender(
        "gym-sync",
        "gymnasium SyncVectorEnv",
        "gymnasium",
        lambda e, n: make_gymnasium(e, n, "sync"),
        mujoco_bindings=True,
    ),
    Contender(
        "gym-async",
        "gymnasium AsyncVectorEnv",
        "gymnasium",
        lambda e, n: make_gymnasium(e, n, "async"),
        uses_processes=True,
        mujoco_bindings=True,  # it makes one env in this process, for its spaces
    ),
    Contender(
        "sb3-dummy",
        "SB3 DummyVecEnv",
        "stable_baselines3",
        lambda e, n: make_sb3(e, n, False),
        mujoco_bindings=True,
    ),
    Contender(
        "sb3-subproc", "SB3 SubprocVecEnv", "stable_baselines3", lambda e, n: make_sb3(e, n, True), uses_processes=True
    ),
    Contender(
        "fastvec-envpool",
        "fastvec.envpool (EnvPool's API) sync",
        "fastvec",
        lambda e, n: make_fastvec_envpool(e, n, False),
    ),
    Contender(
        "fastvec-envpool-async",
        "fastvec.envpool (EnvPool's API) async",
        "fastvec",
        lambda e, n: make_fastvec_envpool(e, n, True),
        needs_batch=True,
    ),
    Contender("envpool-t1", "EnvPool sync, num_threads=1", "envpool", lambda e, n: make_envpool(e, n, 1, False)),
    Contender("envpool-t2", "EnvPool sync, num_threads=2", "envpool", lambda e, n: make_envpool(e, n, 2, False)),
    Contender(
        "envpool-async-t1",
        "EnvPool async, num_threads=1",
        "envpool",
        lambda e, n: make_envpool(e, n, 1, True),
        needs_batch=True,
    ),
    Contender(
        "envpool-async-t2",
        "EnvPool async, num_threads=2",
        "envpool",
        lambda e, n: make_envpool(e, n, 2, True),
        needs_batch=True,
    ),
    Contender(
        "ray-actors", "Ray, one actor per env (ray.get)", "ray", make_ray_actors, uses_processes=True, max_envs=32
    ),
    Contender(
        "rllib-default",
        "RLlib EnvRunner.sample(), default vectorization",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "default"),
        max_envs=256,
        mujoco_bindings=True,
    ),
    Contender(
        "rllib-fastvec-stock",
        "RLlib SingleAgentEnvRunner.sample() on fastvec",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "stock"),
        max_envs=256,
    ),
    Contender(
        "rllib-fastvec",
        "RLlib FastvecEnvRunner.sample()",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "fastvec"),
        max_envs=256,
    ),
    Contender(
        "ale-py",
        "ale-py AtariVectorEnv sync (default threads)",
        "ale_py",
        lambda e, n: make_ale_vector(e, n, None, False),
    ),
    Contender(
        "ale-py-t1", "ale-py AtariVectorEnv sync, num_threads=1", "ale_py", lambda e, n: make_ale_vector(e, n, 1, False)
    ),
    Contender(
        "ale-py-t2", "ale-py AtariVectorEnv sync, num_threads=2", "ale_py", lambda e, n: make_ale_vector(e, n, 2, False)
    ),
    Contender(
        "ale-py-async",
        "ale-py AtariVectorEnv async (default threads)",
        "ale_py",
        lambda e, n: make_ale_vector(e, n, None, True),
        needs_batch=True,
    ),
    Contender("ceiling", "ceiling: 1 fastvec env in a C++ loop, 1 thread", "fastvec", make_ceiling, ceiling=1),
    Contender(
        "ceiling-same-step",
        "ceiling, same-step resets: 1 fastvec env in a C++ loop, 1 thread",
        "fastvec",
        lambda e, n: make_ceiling(e, n, 1, next_step=False),
        ceiling=1,
    ),
    Contender(
        "ceiling-t2",
        "2 such loops at once, 2 threads (measured)",
        "fastvec",
        lambda e, n: make_ceiling(e, n, 2),
        ceiling=2,
    ),
]


def select(contenders: list[Contender], patterns: list[str]) -> list[Contender]:
    """The contenders whose key matches one of the glob patterns, in their order."""
    return [c for c in contenders if any(fnmatch.fnmatch(c.key, pat) for pat in patterns)]


def import_packages(contenders: list[Contender]) -> None:
    """Imports every installed package of ``contenders`` up front, so that no import lands inside a timed
    loop or a forked worker."""
    for c in contenders:
        if installed(c.package):
            importlib.import_module(c.package)
    if any(c.package == "stable_baselines3" for c in contenders) and installed("stable_baselines3"):
        importlib.import_module("stable_baselines3.common.vec_env")


def contender(key: str) -> Contender:
    return next(c for c in CONTENDERS if c.key == key)


def is_mujoco(env_id: str) -> bool:
    return env_id in MUJOCO_ENVS


def is_atari(env_id: str) -> bool:
    return env_id not in CLASSIC_ENVS and not is_mujoco(env_id) and env_id.endswith("-v5")
