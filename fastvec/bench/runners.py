"""What is stepped: a runner (one constructed, reset vector env and the loop that steps it) for each
contender fastvec is compared with, built with the same work for every one (shared/BENCHMARKING.md)."""

from __future__ import annotations

import fnmatch
import functools
import importlib
import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from fastvec.bench.machine import installed
from fastvec.bench.measure import NotAvailable, calibrate, measure

CLASSIC_ENVS = ("CartPole-v1",)
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


@functools.cache
def _num_actions(env_id: str) -> int:
    if not is_atari(env_id):
        return 2
    import gymnasium as gym

    env = gym.make(_ale_id(env_id))
    n = int(env.action_space.n)
    env.close()
    return n


def make_fastvec(env_id: str, num_envs: int, num_threads: int | None, asynchronous: bool) -> Runner:
    import fastvec

    if env_id not in fastvec.list_envs():
        raise NotAvailable("not available in this build")
    return _fastvec_runner(env_id, num_envs, asynchronous, num_threads=num_threads)


def make_fastvec_python(env_id: str, num_envs: int) -> Runner:
    """The Python-env pool (worker processes, shared memory) stepping gymnasium's own env."""
    _classic_only(env_id)
    return _fastvec_runner(env_id, num_envs, False, backend="python")


def _fastvec_runner(env_id: str, num_envs: int, asynchronous: bool, **kwargs: Any) -> Runner:
    import fastvec

    if asynchronous:
        env = fastvec.make(env_id, num_envs, batch_size=num_envs // 2, seed=0, **kwargs)
        return AsyncRunner(env, _actions(num_envs, np.int64, env_id), num_envs // 2)
    env = fastvec.make(env_id, num_envs, seed=0, **kwargs)
    env.reset()
    return SyncRunner(env, env.step, _actions(num_envs, np.int64, env_id), num_envs, env.close)


def _classic_only(env_id: str) -> None:
    if env_id not in CLASSIC_ENVS:
        raise NotAvailable("not wired for this env")


def make_envpool(env_id: str, num_envs: int, num_threads: int, asynchronous: bool) -> Runner:
    import envpool

    kwargs: dict[str, Any] = {"env_type": "gymnasium", "num_envs": num_envs, "seed": 0, "num_threads": num_threads}
    if is_atari(env_id):
        # All set explicitly: EnvPool 1.2.5 defaults to no sticky actions, fire reset, episodic life and
        # reward clipping; use_inter_area_resize is the area resize everyone else does.
        kwargs.update(ATARI, max_episode_steps=ATARI_MAX_STEPS, use_inter_area_resize=True)
    else:
        _classic_only(env_id)
    if asynchronous:
        env = envpool.make(env_id, batch_size=num_envs // 2, **kwargs)
        return AsyncRunner(env, _actions(num_envs, np.int32, env_id), num_envs // 2)
    env = envpool.make(env_id, **kwargs)
    env.reset()
    return SyncRunner(env, env.step, _actions(num_envs, np.int32, env_id), num_envs, env.close)


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
        _classic_only(env_id)
        if mode == "vector_entry_point" and gym.spec(env_id).vector_entry_point is None:
            raise NotAvailable("gymnasium has no vector implementation")
        env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)
    env.reset(seed=0)
    return SyncRunner(env, env.step, _actions(num_envs, np.int64, env_id), num_envs, env.close)


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
        _classic_only(env_id)
        env = make_vec_env(env_id, n_envs=num_envs, seed=0, vec_env_cls=cls, vec_env_kwargs=cls_kwargs or None)
    env.reset()
    return SyncRunner(env, env.step, _actions(num_envs, np.int64, env_id), num_envs, env.close)


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


@dataclass(frozen=True)
class Contender:
    key: str
    label: str
    package: str
    make: Callable[[str, int], Runner]
    uses_processes: bool = False  # one OS process per env
    needs_batch: bool = False  # async with batch_size = num_envs // 2: needs num_envs >= 2
    max_envs: int | None = None  # above this, too slow to even construct on a small machine

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
    Contender("fastvec-python", "fastvec Python-env pool (gymnasium's env)", "fastvec", make_fastvec_python),
    Contender(
        "gym-numpy",
        "gymnasium vector_entry_point (numpy)",
        "gymnasium",
        lambda e, n: make_gymnasium(e, n, "vector_entry_point"),
    ),
    Contender("gym-sync", "gymnasium SyncVectorEnv", "gymnasium", lambda e, n: make_gymnasium(e, n, "sync")),
    Contender(
        "gym-async",
        "gymnasium AsyncVectorEnv",
        "gymnasium",
        lambda e, n: make_gymnasium(e, n, "async"),
        uses_processes=True,
    ),
    Contender("sb3-dummy", "SB3 DummyVecEnv", "stable_baselines3", lambda e, n: make_sb3(e, n, False)),
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


def is_atari(env_id: str) -> bool:
    return env_id not in CLASSIC_ENVS and env_id.endswith("-v5")
