"""Python envs in worker processes: fastvec's Python-env pool vs SB3 SubprocVecEnv, gymnasium
AsyncVectorEnv (and PufferLib's multiprocessing backend when installed), side by side in one run.

    python benchmarks/bench_pyenv.py --seconds 2 --reps 3 --num-envs 2 8 32

Envs: gymnasium's Python CartPole-v1, HeavyEnv (about 50 us of numpy work a step, no sleeps), and
SleepEnv (``time.sleep(0.005)`` a step: an env that waits, as on I/O or a simulator over a socket).
fastvec runs twice: with its default number of worker processes (one fewer than the cores) and with
``num_workers="per_env"`` (one process per env, as the others run them), the option for envs that wait.
Each measurement: fresh vector env, reset, 0.3 s warm-up, then steps with pre-generated random
actions for --seconds; contenders are interleaved (A B C A B C ...) and the median and min-max of
--reps repetitions are reported, as steps/s (one step of one env = one step).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

from fastvec.bench import machine
from fastvec.bench.measure import Cell
from fastvec.bench.runners import SyncRunner, measure

HEAVY_ITERATIONS = 24
SLEEP_SECONDS = 0.005
WARMUP_SECONDS = 0.3
NUM_ACTION_ROWS = 256
CHUNK = 16  # step calls between readings of the timer


class HeavyEnv(gym.Env):
    """A Python env whose step does about 50 us of numpy work (a small recurrent net), no sleeps."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1, 1, (32,), np.float32)
        self.action_space = gym.spaces.Discrete(4)
        self.weights = np.random.default_rng(0).standard_normal((32, 32)) / 6
        self.x = np.zeros(32)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = self.np_random.uniform(-1, 1, 32)
        self.t = 0
        return self.x.astype(np.float32), {}

    def step(self, action):
        x = self.x
        x[int(action)] += 0.1
        for _ in range(HEAVY_ITERATIONS):
            x = np.tanh(self.weights @ x)
        self.x = x
        self.t += 1
        return x.astype(np.float32), float(x[0]), bool(abs(x[1]) > 0.99), self.t >= 200, {}


class SleepEnv(gym.Env):
    """A Python env whose step waits 5 ms (time.sleep) and computes nothing: the CPU is free meanwhile."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1, 1, (4,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        time.sleep(SLEEP_SECONDS)
        self.t += 1
        return np.zeros(4, np.float32), 1.0, False, self.t >= 200, {}


def make_cartpole() -> gym.Env:
    return gym.make("CartPole-v1")


def make_heavy() -> gym.Env:
    return HeavyEnv()


def make_sleep() -> gym.Env:
    return SleepEnv()


ENVS: dict[str, Callable[[], gym.Env]] = {
    "CartPole-v1": make_cartpole,
    "HeavyEnv (~50 us/step)": make_heavy,
    "SleepEnv (sleeps 5 ms/step)": make_sleep,
}


def _fastvec(env_fn, n):
    import fastvec

    env = fastvec.make([env_fn] * n)
    env.reset(seed=0)
    return env


def _fastvec_per_env(env_fn, n):
    import fastvec

    env = fastvec.make([env_fn] * n, num_workers="per_env")
    env.reset(seed=0)
    return env


def _sb3(env_fn, n):
    from stable_baselines3.common.vec_env import SubprocVecEnv

    # fork, as gymnasium's AsyncVectorEnv and fastvec do here: SB3's default forkserver makes every
    # worker import torch again, which costs minutes per pool on 2 cores and nothing once stepping.
    env = SubprocVecEnv([env_fn] * n, start_method="fork")
    env.reset()
    return env  # its step() is step_async() + step_wait()


def _gym_async(env_fn, n):
    env = gym.vector.AsyncVectorEnv([env_fn] * n)
    env.reset(seed=0)
    return env


def _pufferlib(env_fn, n):
    import pufferlib.emulation
    import pufferlib.vector

    def creator(buf=None, seed=0):
        return pufferlib.emulation.GymnasiumPufferEnv(env_creator=env_fn, buf=buf, seed=seed)

    env = pufferlib.vector.make(
        creator, num_envs=n, backend=pufferlib.vector.Multiprocessing, num_workers=min(n, os.cpu_count() or 1)
    )
    env.reset(seed=0)
    return env


CONTENDERS = {
    "fastvec pyenv": ("fastvec", _fastvec),
    'fastvec pyenv, num_workers="per_env"': ("fastvec", _fastvec_per_env),
    "SB3 SubprocVecEnv": ("stable_baselines3", _sb3),
    "gymnasium AsyncVectorEnv": ("gymnasium", _gym_async),
    "PufferLib Multiprocessing": ("pufferlib", _pufferlib),
}


def measure_fresh(factory, env_fn, n: int, seconds: float) -> dict:
    """A fresh vector env, reset, stepped for WARMUP_SECONDS untimed, then timed for ``seconds``."""
    env = factory(env_fn, n)
    runner = SyncRunner(env, env.step, np.random.default_rng(0).integers(0, 2, (NUM_ACTION_ROWS, n)), n, env.close)
    try:
        deadline = time.perf_counter() + WARMUP_SECONDS
        while time.perf_counter() < deadline:
            runner.run(1)
        return measure(runner, CHUNK, seconds)
    finally:
        runner.close()


def heavy_step_us() -> float:
    env = HeavyEnv()
    env.reset(seed=0)
    start = time.perf_counter()
    for i in range(2000):
        env.step(i % 4)
    return (time.perf_counter() - start) / 2000 * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions per config")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[2, 8, 32])
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    parser.add_argument("--contenders", nargs="+", default=list(CONTENDERS), choices=list(CONTENDERS))
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    cpu = machine.cpu_model()
    load_before = os.getloadavg()
    print(
        f"machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"gymnasium {gym.__version__}; load average before: {load_before[0]:.2f}"
    )
    print(f"HeavyEnv step alone: {heavy_step_us():.0f} us")
    if load_before[0] > (os.cpu_count() or 1) * 0.5:
        print(
            f"WARNING: the machine is busy (load {load_before[0]:.2f} on {os.cpu_count()} cores): "
            "compare ratios within this run only"
        )
    results = []
    available = {name: c for name, c in CONTENDERS.items() if name in args.contenders and machine.installed(c[0])}
    for env_name in args.envs:
        for n in args.num_envs:
            cells = {name: Cell() for name in available}
            for _ in range(args.reps):  # the same order every repetition
                for name, (_, factory) in available.items():
                    cells[name].add(measure_fresh(factory, ENVS[env_name], n, args.seconds))
            for name in args.contenders:
                row = {"env": env_name, "num_envs": n, "contender": name}
                if name in cells:
                    rates = cells[name].steps_per_s
                    row.update(median=cells[name].median, min=min(rates), max=max(rates))
                results.append(row)
                print(".", end="", flush=True)
    load_after = os.getloadavg()
    print(f"\nload average after: {load_after[0]:.2f}\n")
    print("| env | num_envs | contender | steps/s (median) | min-max | fastvec speed-up |")
    print("|---|---|---|---|---|---|")
    for row in results:
        if "median" not in row:
            print(f"| {row['env']} | {row['num_envs']} | {row['contender']} | not installed | | |")
            continue
        ours = next(  # (the first fastvec contender measured: the default, unless --contenders left it out)
            r
            for r in results
            if r["env"] == row["env"] and r["num_envs"] == row["num_envs"] and r["contender"].startswith("fastvec")
        )
        ratio = ours["median"] / row["median"]
        print(
            f"| {row['env']} | {row['num_envs']} | {row['contender']} | {row['median']:,.0f} | "
            f"{row['min']:,.0f}-{row['max']:,.0f} | {ratio:.2f}x |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "machine": cpu,
                    "cores": os.cpu_count(),
                    "load_before": load_before,
                    "load_after": load_after,
                    "results": results,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
