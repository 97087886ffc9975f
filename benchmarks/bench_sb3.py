"""Stable-Baselines3 PPO end to end on CartPole-v1: fastvec.sb3_vec vs SB3's DummyVecEnv and
SubprocVecEnv (over gymnasium's CartPole, Monitor-wrapped as make_vec_env does), and the
fraction of the training loop spent in the vector env.

    python benchmarks/bench_sb3.py --seconds 10 --reps 3 --num-envs 8

PPO with rl-zoo's CartPole settings (n_steps=32, batch_size=256, n_epochs=20, MlpPolicy 64x64,
torch on one thread) learns in rollout-sized chunks for --seconds per measurement; env time is
the time spent in the VecEnv's reset/step_async/step_wait. Contenders are interleaved and the
median and min-max of --reps repetitions reported, as env steps/s.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnvWrapper

import fastvec


class EnvTimer(VecEnvWrapper):
    """Adds up the wall time spent inside the wrapped VecEnv."""

    def __init__(self, venv) -> None:
        super().__init__(venv)
        self.seconds = 0.0

    def reset(self):
        t = time.perf_counter()
        obs = self.venv.reset()
        self.seconds += time.perf_counter() - t
        return obs

    def step_async(self, actions) -> None:
        t = time.perf_counter()
        self.venv.step_async(actions)
        self.seconds += time.perf_counter() - t

    def step_wait(self):
        t = time.perf_counter()
        out = self.venv.step_wait()
        self.seconds += time.perf_counter() - t
        return out


def make(contender: str, num_envs: int):
    if contender == "fastvec":
        return fastvec.sb3_vec("CartPole-v1", num_envs, seed=0, num_threads=1)
    cls = {"DummyVecEnv": DummyVecEnv, "SubprocVecEnv": SubprocVecEnv}[contender]
    return make_vec_env("CartPole-v1", n_envs=num_envs, seed=0, vec_env_cls=cls)


def measure(contender: str, num_envs: int, seconds: float) -> tuple[float, float]:
    env = EnvTimer(make(contender, num_envs))
    model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
                ent_coef=0.0, learning_rate=1e-3, policy_kwargs={"net_arch": [64, 64]}, seed=0, device="cpu")
    chunk = 32 * num_envs
    model.learn(chunk)  # warm-up
    env.seconds, steps0, start = 0.0, model.num_timesteps, time.perf_counter()
    while time.perf_counter() - start < seconds:
        model.learn(chunk, reset_num_timesteps=False)
    elapsed = time.perf_counter() - start
    rate, env_fraction = (model.num_timesteps - steps0) / elapsed, env.seconds / elapsed
    env.close()
    return rate, env_fraction


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[8])
    args = parser.parse_args()
    torch.set_num_threads(1)
    contenders = ["fastvec", "DummyVecEnv", "SubprocVecEnv"]
    print("| num_envs | contender | PPO steps/s | env time / loop time |")
    print("|---:|---|---:|---:|")
    for n in args.num_envs:
        results: dict[str, list[tuple[float, float]]] = {c: [] for c in contenders}
        for _ in range(args.reps):
            for c in contenders:
                results[c].append(measure(c, n, args.seconds))
        for c, runs in results.items():
            rates, fractions = [r for r, _ in runs], [f for _, f in runs]
            print(f"| {n} | {c} | {statistics.median(rates):.0f} [{min(rates):.0f}-{max(rates):.0f}] | "
                  f"{100 * statistics.median(fractions):.1f}% |", flush=True)


if __name__ == "__main__":
    main()
