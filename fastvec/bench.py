"""``fastvec bench``: fastvec against the vector envs users switch from, side by side.

Counts environment steps per second (one step of one env = one step) for each
contender, env and ``num_envs``, following shared/BENCHMARKING.md: contenders
are interleaved (A B A B ...) over several repetitions, the median and min-max
are reported, actions are drawn before timing, construction and the first
reset are excluded, every runner is warmed up, and the machine's load is
recorded before and after. A contender whose package is missing is shown as
"not installed", never dropped.

    fastvec bench                                    # default run, a few minutes
    fastvec bench --quick                            # under a minute
    fastvec bench --envs CartPole-v1 --num-envs 8 4096 --contenders 'fastvec*' 'envpool*'
    fastvec bench --out results/ --json              # also results/bench.json and results/bench.png
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import gc
import importlib
import importlib.metadata
import importlib.util
import itertools
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DEFAULT_ENVS = ("CartPole-v1", "Pong-v5")
DEFAULT_NUM_ENVS = (1, 8, 256, 4096)
ATARI_NUM_ENVS = (1, 8, 32)  # Atari's default sweep: an emulator per env, ~0.1 s to load each
QUICK_NUM_ENVS = (8, 256)
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
MEMORY_NUM_ENVS = 16  # peak memory is measured at this num_envs, in a fresh process per contender
NUM_ACTION_ROWS = 64  # pre-drawn action arrays, cycled through
CHUNK_SECONDS = 0.01  # the timer is read once per chunk of calls, not per call
BUSY_OTHER_SHARE = 0.15  # share of the CPUs that other processes used, above which a measurement is "busy"
IDLE_PROBE_SECONDS = 1.0  # how long to watch the machine before starting


# -- runners -------------------------------------------------------------------


class Runner:
    """One constructed, reset vector env and the loop that steps it.

    ``run(calls)`` makes ``calls`` step calls (sync) or recv/send pairs (async)
    and returns the number of env steps they made.
    """

    steps_per_call: int

    def run(self, calls: int) -> int:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


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
    if not _is_atari(env_id):
        return 2
    import gymnasium as gym

    env = gym.make(_ale_id(env_id))
    n = int(env.action_space.n)
    env.close()
    return n


class NotAvailable(Exception):
    """The contender cannot run this env (shown in the table as the message)."""


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
    if _is_atari(env_id):
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

    if not _is_atari(env_id):
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

    if _is_atari(env_id):
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
    if _is_atari(env_id):
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
    """RLlib's EnvRunner.sample() (new API stack, PPO's default torch module: the policy's forward pass
    is in the loop, as in training), with RLlib's default vectorization (gymnasium's SyncVectorEnv over
    gymnasium's env; for Atari, RLlib's own Atari wrappers) or with fastvec."""

    def __init__(self, env_id: str, num_envs: int, use_fastvec: bool, num_threads: int = 1) -> None:
        import torch
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

        torch.set_num_threads(1)
        config = PPOConfig().framework("torch").debugging(seed=0)
        atari = _is_atari(env_id)
        if use_fastvec:
            from fastvec.adapters.rllib import configure

            configure(config, env_id, num_envs=num_envs, num_threads=num_threads, **(RLLIB_ATARI if atari else {}))
        else:
            config.environment(_rllib_atari_default(env_id) if atari else env_id)
            config.env_runners(num_envs_per_env_runner=num_envs)
        config.env_runners(num_env_runners=0)
        self._runner = SingleAgentEnvRunner(config=config)
        self.steps_per_call = num_envs
        self._runner.sample(num_timesteps=num_envs, random_actions=False)

    def run(self, calls: int) -> int:
        episodes = self._runner.sample(num_timesteps=calls * self.steps_per_call, random_actions=False)
        return sum(len(e) for e in episodes)

    def close(self) -> None:
        self._runner.stop()


def make_rllib(env_id: str, num_envs: int, use_fastvec: bool) -> Runner:
    return RLlibRunner(env_id, num_envs, use_fastvec)


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


CLASSIC_ENVS = ("CartPole-v1",)


@dataclass(frozen=True)
class Contender:
    key: str
    label: str
    package: str
    make: Callable[[str, int], Runner]
    uses_processes: bool = False  # one OS process per env
    needs_batch: bool = False  # async with batch_size = num_envs // 2: needs num_envs >= 2
    max_envs: int | None = None  # above this, too slow to even construct on a small machine


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
        lambda e, n: make_rllib(e, n, False),
        max_envs=256,
    ),
    Contender(
        "rllib-fastvec",
        "RLlib EnvRunner.sample() on fastvec",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, True),
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
# The default run: one configuration per library (sweeps over threads take --contenders '*').
DEFAULT_CONTENDERS = (
    "fastvec",
    "fastvec-async",
    "fastvec-python",
    "gym-numpy",
    "gym-async",
    "sb3-dummy",
    "sb3-subproc",
    "envpool-t1",
    "envpool-async-t1",
    "ray-actors",
    "rllib-default",
    "rllib-fastvec",
    "ale-py",
    "ale-py-async",
)
ROUND_TRIP_KEYS = ("fastvec", "envpool-t1", "envpool-t2")


# -- timing --------------------------------------------------------------------


def calibrate(runner: Runner, warmup_seconds: float) -> int:
    """Warms the runner up and returns a chunk size whose calls take about CHUNK_SECONDS."""
    chunk, per_call = 1, 0.0
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        runner.run(chunk)
        t1 = time.perf_counter()
        per_call = (t1 - t0) / chunk
        if t1 - start >= warmup_seconds and t1 - t0 >= CHUNK_SECONDS / 2:
            break
        if t1 - t0 < CHUNK_SECONDS:
            chunk *= 2
    return max(1, int(CHUNK_SECONDS / max(per_call, 1e-9)))


def measure(runner: Runner, chunk: int, seconds: float) -> dict[str, Any]:
    runner.run(chunk)  # re-warm caches after the other contenders ran
    share = CpuShare()
    steps = calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        steps += runner.run(chunk)
        calls += chunk
        now = time.perf_counter()
        if now >= deadline:
            break
    elapsed = now - start
    return {"steps_per_s": steps / elapsed, "us_per_call": elapsed / calls * 1e6, "other_cpu": share.other()}


# -- machine -------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# Busy detection counts user-space CPU time only: kernel housekeeping grows with the number of worker
# processes a contender keeps alive (a few % of the CPUs at 512 idle workers) and is not someone else's job.
# Per-process times are tick-sampled: with hundreds of briefly running workers and measurements well
# under a second, the workers' time is undercounted and a process-per-env row may be marked busy wrongly.


def _machine_user_cpu() -> float | None:
    """User-space CPU seconds of the whole machine so far, from /proc/stat (user + nice)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    return (int(fields[1]) + int(fields[2])) / os.sysconf("SC_CLK_TCK")


def _processes() -> Iterator[tuple[int, list[str]]]:
    """(pid, fields of /proc/pid/stat after the command name) for every live process.

    Fields, 0-based: 1 the parent's pid, 11 the user time in ticks, 21 the resident pages.
    """
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                yield int(name), f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue


def _tree(root: int) -> list[tuple[int, list[str]]]:
    """``_processes()`` of ``root`` and all its live descendants."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for pid, fields in _processes():
        children.setdefault(int(fields[1]), []).append(pid)
        stats[pid] = fields
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            out.append((pid, stats[pid]))
        todo.extend(children.get(pid, []))
    return out


def _live_children_user_cpu() -> float:
    """User-space CPU seconds used so far by this process's live descendants (the workers of open envs,
    also those a forkserver started)."""
    me, hz = os.getpid(), os.sysconf("SC_CLK_TCK")
    return sum(int(fields[11]) / hz for pid, fields in _tree(me) if pid != me)


def _own_user_cpu() -> float:
    """User-space CPU seconds used by this process, its reaped children and its live ones."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    return own + reaped + _live_children_user_cpu()


class CpuShare:
    """Share of the machine's CPUs that other processes used in user space since construction."""

    def __init__(self) -> None:
        self._machine = _machine_user_cpu()
        self._own = _own_user_cpu()
        self._wall = time.perf_counter()

    def other(self) -> float | None:
        machine = _machine_user_cpu()
        if machine is None or self._machine is None:
            return None
        wall = time.perf_counter() - self._wall
        other = (machine - self._machine) - (_own_user_cpu() - self._own)
        return max(0.0, other) / (wall * (os.cpu_count() or 1))


class LoadMonitor:
    """Load averages before and after; other processes' CPU share just before and during the run.

    The load average lags by a minute and counts this run's own worker processes, so it is recorded
    but the CPU shares decide whether the machine was busy.
    """

    def __init__(self) -> None:
        self.load_before = os.getloadavg()
        probe = CpuShare()
        time.sleep(IDLE_PROBE_SECONDS)
        self.share_before = probe.other()
        self._share = CpuShare()

    def finish(self) -> dict[str, Any]:
        load_after = os.getloadavg()
        other_share = self._share.other()
        reasons = []
        if self.share_before is not None and self.share_before > BUSY_OTHER_SHARE:
            reasons.append(f"other processes used {self.share_before:.0%} of the CPUs just before the run")
        if other_share is not None and other_share > BUSY_OTHER_SHARE:
            reasons.append(f"other processes used {other_share:.0%} of the CPUs during the run")
        return {
            "load_before": self.load_before,
            "load_after": load_after,
            "other_cpu_share_before": self.share_before,
            "other_cpu_share": other_share,
            "busy": bool(reasons),
            "busy_reasons": reasons,
        }


def source_state() -> str:
    """The commit of the fastvec checkout this script sits in, and whether its tracked files were edited.

    The numbers are for the installed fastvec, which is this checkout only if it was (re)installed from it.
    """
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(
            ["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{head}{' with uncommitted changes' if dirty else ''}"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("fastvec", "numpy", "gymnasium", "ale-py", "stable-baselines3", "envpool", "torch", "ray"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


# -- driving -------------------------------------------------------------------


@dataclass
class Cell:
    status: str = "ok"  # "ok", or why there is no number
    steps_per_s: list[float] = field(default_factory=list)
    us_per_call: list[float] = field(default_factory=list)
    other_cpu: list[float | None] = field(default_factory=list)  # other processes' CPU share, per rep

    @property
    def disturbed(self) -> bool:
        return any(x is not None and x > BUSY_OTHER_SHARE for x in self.other_cpu)

    @property
    def median(self) -> float | None:
        return statistics.median(self.steps_per_s) if self.steps_per_s else None

    def add(self, m: dict[str, Any]) -> None:
        """Records one measurement (:func:`measure`'s dict)."""
        self.steps_per_s.append(m["steps_per_s"])
        self.us_per_call.append(m["us_per_call"])
        self.other_cpu.append(m["other_cpu"])


def interleaved(keys: list[str], reps: int) -> Iterator[tuple[int, str]]:
    """(repetition, key) for ``reps`` repetitions of every key, A B C, B C A, ...: the order rotates
    each repetition so that no contender always runs right after the same one."""
    for rep in range(reps):
        shift = rep % max(1, len(keys))
        for key in keys[shift:] + keys[:shift]:
            yield rep, key


def installed(package: str) -> bool:
    """Whether ``package`` (maybe dotted: ``ray.rllib``) can be imported."""
    try:
        return importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def skip_reason(c: Contender, num_envs: int, max_processes: int) -> str | None:
    if not installed(c.package):
        return "not installed"
    if c.needs_batch and num_envs < 2:
        return "n/a (batch_size = num_envs/2)"
    if (c.uses_processes and num_envs > max_processes) or (c.max_envs is not None and num_envs > c.max_envs):
        return "skipped (too many processes)"
    return None


def run_grid(
    contenders: list[Contender], env_id: str, num_envs: int, args: argparse.Namespace, progress: Any = None
) -> dict[str, Cell]:
    """Measures every contender at one num_envs, interleaved over args.reps repetitions."""
    cells = {c.key: Cell() for c in contenders}
    runners: dict[str, Runner] = {}
    chunks: dict[str, int] = {}
    # Process-based contenders fork first, before this round's thread pools exist.
    for c in sorted(contenders, key=lambda c: not c.uses_processes):
        reason = skip_reason(c, num_envs, args.max_processes)
        if reason is None:
            try:
                runners[c.key] = c.make(env_id, num_envs)
            except NotAvailable as e:
                reason = str(e)
            except Exception as e:
                reason = f"failed: {type(e).__name__}: {e}"[:80]
                print(f"  {c.key} {env_id} num_envs={num_envs} failed to start: {e!r}", file=sys.stderr)
        if reason is not None:
            cells[c.key].status = reason
            if progress is not None:
                progress.update(args.reps)
    for key, runner in runners.items():
        chunks[key] = calibrate(runner, args.warmup)
    order = [c.key for c in contenders if c.key in runners]
    try:
        for _, key in interleaved(order, args.reps):
            cells[key].add(measure(runners[key], chunks[key], args.seconds))
            if progress is not None:
                progress.update(1)
    finally:
        for runner in runners.values():
            runner.close()
        runners.clear()
        gc.collect()
    return cells


def si(x: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.3g}"


def format_cell(cell: Cell) -> str:
    if not cell.steps_per_s:
        return cell.status
    v = cell.steps_per_s
    mark = " (busy)" if cell.disturbed else ""
    if len(v) == 1:
        return si(v[0]) + mark
    return f"{si(statistics.median(v))} [{si(min(v))}-{si(max(v))}]{mark}"


def markdown_table(
    contenders: list[Contender],
    sizes: list[int],
    grid: dict[int, dict[str, Cell]],
    memory: dict[str, tuple[float | None, str]] | None = None,
) -> str:
    mem_head = f" peak memory @{MEMORY_NUM_ENVS} envs |" if memory else ""
    head = "| contender | " + " | ".join(f"num_envs={n}" for n in sizes) + " |" + mem_head
    rule = "|---|" + "---:|" * len(sizes) + ("---:|" if memory else "")
    rows = [head, rule]
    for c in contenders:
        row = f"| {c.label} | " + " | ".join(format_cell(grid[n][c.key]) for n in sizes) + " |"
        if memory:
            mib, status = memory.get(c.key, (None, "-"))
            row += f" {mib:.0f} MiB |" if mib is not None else f" {status} |"
        rows.append(row)
    return "\n".join(rows)


def ratios_to_sb3(grid: dict[int, dict[str, Cell]]) -> dict[str, dict[str, float]]:
    """Median steps/s of each contender over SB3 SubprocVecEnv's, per num_envs where both ran."""
    out: dict[str, dict[str, float]] = {}
    for n, cells in grid.items():
        base = cells.get("sb3-subproc")
        if base is None or not base.median:
            continue
        for key, cell in cells.items():
            if cell.median:
                out.setdefault(key, {})[str(n)] = cell.median / base.median
    return out


def _times(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def ratio_table(contenders: list[Contender], sizes: list[int], grid: dict[int, dict[str, Cell]]) -> str:
    r = ratios_to_sb3(grid)
    if not r:
        return "Ratio to SB3 SubprocVecEnv: n/a (SubprocVecEnv did not run)."
    head = "| x SB3 SubprocVecEnv | " + " | ".join(f"num_envs={n}" for n in sizes) + " |"
    rows = [head, "|---|" + "---:|" * len(sizes)]
    for c in contenders:
        if c.key in r:
            rows.append(
                f"| {c.label} | "
                + " | ".join(_times(r[c.key][str(n)]) if str(n) in r[c.key] else "-" for n in sizes)
                + " |"
            )
    return "\n".join(rows)


@dataclass
class Ratio:
    name: str
    target: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    met: bool | None = None
    note: str = ""


def best_of(grid: dict[str, Cell], keys: list[str]) -> tuple[str, Cell] | None:
    measured = [(k, grid[k]) for k in keys if k in grid and grid[k].steps_per_s]
    return max(measured, key=lambda kc: kc[1].median or 0.0) if measured else None


def ratio(name: str, target: float, grid: dict[int, dict[str, Cell]], num_envs: int, other_keys: list[str]) -> Ratio:
    r = Ratio(name, f">= {target:g}x")
    cells = grid.get(num_envs)
    if cells is None:
        r.note = f"num_envs={num_envs} not measured"
        return r
    fv = cells.get("fastvec")
    other = best_of(cells, other_keys)
    if fv is None or not fv.steps_per_s:
        r.note = "fastvec: " + (fv.status if fv else "not selected")
        return r
    if other is None:
        statuses = {cells[k].status for k in other_keys if k in cells}
        r.note = "other side: " + (", ".join(sorted(statuses)) or "not selected")
        return r
    key, oc = other
    r.value = fv.median / oc.median
    r.low = min(fv.steps_per_s) / max(oc.steps_per_s)
    r.high = max(fv.steps_per_s) / min(oc.steps_per_s)
    r.met = r.value >= target
    r.note = f"fastvec sync (default threads) vs {key}"
    return r


def round_trip(grid1: dict[str, Cell]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ROUND_TRIP_KEYS:
        cell = grid1.get(key)
        if cell is None:
            continue
        if cell.us_per_call:
            us = cell.us_per_call
            out[key] = {"median_us": statistics.median(us), "min_us": min(us), "max_us": max(us)}
        else:
            out[key] = {"status": cell.status}
    return out


def _memory_probe(key: str, env_id: str, num_envs: int) -> None:
    """Run in a fresh interpreter: builds one contender, steps it, prints the RSS of every process it runs."""
    warnings.filterwarnings("ignore")
    contender = next(c for c in CONTENDERS if c.key == key)
    runner = contender.make(env_id, num_envs)
    deadline = time.perf_counter() + 0.3
    while time.perf_counter() < deadline:
        runner.run(8)
    print(json.dumps({"rss_bytes": tree_rss(os.getpid())}))
    runner.close()


def tree_rss(root: int) -> int:
    """Resident memory of a process and all its descendants, summed (shared pages count once per process)."""
    return sum(int(fields[21]) for _, fields in _tree(root)) * os.sysconf("SC_PAGE_SIZE")


def peak_memory(c: Contender, env_id: str, num_envs: int, max_processes: int) -> tuple[float | None, str]:
    """Memory of every process one contender runs at num_envs, measured in a fresh interpreter."""
    reason = skip_reason(c, num_envs, max_processes)
    if reason:
        return None, reason
    code = f"from fastvec.bench import _memory_probe; _memory_probe({c.key!r}, {env_id!r}, {num_envs})"
    try:
        # Not in the caller's directory: `python -c` imports from there first, and in a source checkout
        # (where the README runs the bench) that is fastvec's source tree, without its built extension.
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tempfile.gettempdir()
        )
    except subprocess.TimeoutExpired:
        return None, "timed out"
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["failed"])[-1]
        return None, "not available" if "NotAvailable" in last else last[:60]
    return json.loads(out.stdout.strip().splitlines()[-1])["rss_bytes"] / 2**20, "ok"


def plot(
    path: str, env_id: str, contenders: list[Contender], sizes: list[int], grid: dict[int, dict[str, Cell]]
) -> bool:
    """steps/s against num_envs per contender, log-log. False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(8, 5))
    for c in contenders:
        xs = [n for n in sizes if grid[n][c.key].median]
        if xs:
            ax.plot(xs, [grid[n][c.key].median for n in xs], marker="o", label=c.label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("num_envs")
    ax.set_ylabel("env steps / s (median)")
    ax.set_title(f"{env_id}: throughput")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fastvec bench", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"under a minute: CartPole only, num_envs {' '.join(map(str, QUICK_NUM_ENVS))}, "
        "1 x 0.3 s, no memory probe",
    )
    p.add_argument("--envs", nargs="+", metavar="ENV_ID", help=f"env ids (default: {' '.join(DEFAULT_ENVS)})")
    p.add_argument("--num-envs", type=int, nargs="+", help="num_envs values (default: 1 8 256 4096; Atari: 1 8 32)")
    p.add_argument("--seconds", type=float, help="timed seconds per measurement (default 2)")
    p.add_argument("--reps", type=int, help="interleaved repetitions per contender (default 3)")
    p.add_argument(
        "--contenders",
        nargs="+",
        default=list(DEFAULT_CONTENDERS),
        metavar="PATTERN",
        help="contender keys or glob patterns, '*' for all (default: %(default)s); all: "
        + ", ".join(c.key for c in CONTENDERS),
    )
    p.add_argument(
        "--max-processes",
        type=int,
        default=256,
        help="skip process-per-env contenders above this num_envs (default 256)",
    )
    p.add_argument(
        "--warmup",
        type=float,
        default=None,
        help="untimed warm-up seconds per runner after construction (default: min(0.5, seconds/4))",
    )
    p.add_argument(
        "--memory",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"measure peak memory of each contender at num_envs={MEMORY_NUM_ENVS} (default: on, off with --quick)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        default="fastvec-bench",
        help="where results.md, results.json and one PNG per env go (default: ./fastvec-bench)",
    )
    p.add_argument("--json", action="store_true", help="print the JSON results on stdout instead of the table")
    return p


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = make_parser()
    args = p.parse_args(argv)
    quick = args.quick
    args.envs = args.envs or (["CartPole-v1"] if quick else list(DEFAULT_ENVS))
    args.sizes_given = args.num_envs is not None
    args.num_envs = args.num_envs or list(QUICK_NUM_ENVS if quick else DEFAULT_NUM_ENVS)
    args.seconds = args.seconds if args.seconds is not None else (0.3 if quick else 2.0)
    args.reps = args.reps if args.reps is not None else (1 if quick else 3)
    args.memory = (not quick) if args.memory is None else args.memory
    if args.seconds <= 0 or args.reps < 1 or min(args.num_envs) < 1:
        p.error("--seconds must be > 0, --reps >= 1 and every --num-envs >= 1")
    if args.warmup is None:
        args.warmup = min(0.5, args.seconds / 4)
    unknown = [pat for pat in args.contenders if not any(fnmatch.fnmatch(c.key, pat) for c in CONTENDERS)]
    if unknown:
        p.error(f"unknown contender(s) {', '.join(unknown)}; contenders are: {', '.join(c.key for c in CONTENDERS)}")
    args.chosen = [c for c in CONTENDERS if any(fnmatch.fnmatch(c.key, pat) for pat in args.contenders)]
    return args


def _is_atari(env_id: str) -> bool:
    return env_id not in CLASSIC_ENVS and env_id.endswith("-v5")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tqdm import tqdm

    # Gymnasium and EnvPool warn about float64 box bounds and the like on every construction.
    warnings.filterwarnings("ignore")
    for c in args.chosen:  # import up front, so no import lands inside a timed loop or a forked worker
        if installed(c.package):
            importlib.import_module(c.package)
    if any(c.package == "stable_baselines3" for c in args.chosen) and installed("stable_baselines3"):
        importlib.import_module("stable_baselines3.common.vec_env")

    command = "fastvec bench " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    machine = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "platform": platform.platform(),
        "versions": versions(),
        "fastvec_source": source_state(),
    }
    monitor = LoadMonitor()
    if monitor.share_before is not None and monitor.share_before > BUSY_OTHER_SHARE:
        print(
            f"WARNING: the machine is already busy: other processes use {monitor.share_before:.0%} of the CPUs",
            file=sys.stderr,
        )

    def sizes_of(env_id: str) -> list[int]:
        given = args.sizes_given or not _is_atari(env_id)
        return sorted(set(args.num_envs if given else ATARI_NUM_ENVS))

    total = sum(len(sizes_of(e)) for e in args.envs) * len(args.chosen) * args.reps
    results: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    with tqdm(total=total, desc="fastvec bench", unit="run", file=sys.stderr) as progress:
        for env_id in args.envs:
            sizes = sizes_of(env_id)
            grid: dict[int, dict[str, Cell]] = {}
            for n in sizes:
                progress.set_postfix_str(f"{env_id} num_envs={n}")
                grid[n] = run_grid(args.chosen, env_id, n, args, progress)
            memory: dict[str, tuple[float | None, str]] = {}
            if args.memory:
                for c in args.chosen:
                    if not any(grid[n][c.key].steps_per_s for n in sizes):
                        continue  # it could not run this env at all
                    progress.set_postfix_str(f"{env_id} memory of {c.key}")
                    memory[c.key] = peak_memory(c, env_id, MEMORY_NUM_ENVS, args.max_processes)
            results[env_id] = {"grid": grid, "memory": memory}
    elapsed = time.perf_counter() - t0
    load = monitor.finish()

    os.makedirs(args.out, exist_ok=True)
    report = [
        f"# fastvec bench: env steps/s, median [min-max] of {args.reps} x {args.seconds:g} s",
        "",
        f"command: `{command}`",
        "",
    ]
    doc: dict[str, Any] = {
        "command": command,
        "seconds": args.seconds,
        "reps": args.reps,
        "machine": machine,
        "load": load,
        "wall_seconds": elapsed,
        "envs": {},
    }
    for env_id, res in results.items():
        grid, memory = res["grid"], res["memory"]
        sizes = sorted(grid)
        frames = ATARI["frame_skip"] if _is_atari(env_id) else 1
        report += [f"## {env_id}", ""]
        if not any(cell.steps_per_s for cells in grid.values() for cell in cells.values()):
            statuses = sorted({cell.status for cells in grid.values() for cell in cells.values()})
            report += [f"No contender ran {env_id}: {'; '.join(statuses)}.", ""]
            doc["envs"][env_id] = {
                "results": {str(n): {k: {"status": c.status} for k, c in cells.items()} for n, cells in grid.items()}
            }
            continue
        if _is_atari(env_id):
            report += [
                f"Atari: frames/s = {frames} x steps/s (frame skip {frames}); same settings on every "
                "contender: sticky actions 0.25, noop starts up to 30, 84x84 grayscale, 4 frames.",
                "",
            ]
        report.append(markdown_table(args.chosen, sizes, grid, memory))
        report += ["", ratio_table(args.chosen, sizes, grid), ""]
        png = os.path.join(args.out, f"{env_id}.png")
        if plot(png, env_id, args.chosen, sizes, grid):
            report += [f"plot: {png}", ""]
        else:
            report += ["plot: matplotlib is not installed (pip install 'fastvec[bench]')", ""]
        doc["envs"][env_id] = {
            "results": {
                str(n): {
                    k: {
                        "status": c.status,
                        "median_steps_per_s": c.median,
                        "median_frames_per_s": c.median * frames if c.median else None,
                        "steps_per_s": c.steps_per_s,
                        "us_per_call": c.us_per_call,
                        "other_cpu_share": c.other_cpu,
                    }
                    for k, c in cells.items()
                }
                for n, cells in grid.items()
            },
            "peak_memory_mib": {
                k: {"num_envs": MEMORY_NUM_ENVS, "mib": m, "status": st} for k, (m, st) in memory.items()
            },
            "ratio_to_sb3_subproc": ratios_to_sb3(grid),
        }
    disturbed = sorted(
        {
            f"{env_id}:{k}@{n}"
            for env_id, res in results.items()
            for n, cells in res["grid"].items()
            for k, c in cells.items()
            if c.disturbed
        }
    )
    if disturbed:
        load["busy"] = True
        load["busy_reasons"].append(f"{len(disturbed)} cell(s) measured while other processes were busy")
    report += [
        f"'(busy)': other processes took over {BUSY_OTHER_SHARE:.0%} of the CPUs during a repetition. "
        "Process-per-env contenders fork their workers (SB3 with start_method='fork').",
        f"machine: {machine['cpu']}, {machine['cores']} cores ({machine['usable_cores']} usable), "
        f"{machine['platform']}",
        "versions: "
        + ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
        + f"; checkout: {machine['fastvec_source']}",
        "load average before: "
        + " ".join(f"{x:.2f}" for x in load["load_before"])
        + "; after: "
        + " ".join(f"{x:.2f}" for x in load["load_after"]),
        f"wall time: {elapsed:.0f} s",
    ]
    if load["busy"]:
        report.append("WARNING: BUSY MACHINE, results are not trustworthy: " + "; ".join(load["busy_reasons"]))
    text = "\n".join(report) + "\n"
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=2)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(text, end="")
        print(f"written: {os.path.join(args.out, 'results.md')}, results.json and the plots", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
