"""Stable-Baselines3 PPO end to end on CartPole-v1 and Pong-v5: fastvec.sb3_vec vs SB3's DummyVecEnv
and SubprocVecEnv (over gymnasium's envs, as make_vec_env / make_atari_env + VecFrameStack build
them), and the fraction of the training loop spent in the vector env.

    python benchmarks/bench_sb3.py --seconds 10 --reps 3 --num-envs 8 --envs CartPole-v1 Pong-v5
    python benchmarks/bench_sb3.py --envs Pong-v5 --torch-threads default   # learner and pool share the cores

CartPole: PPO with rl-zoo's settings (n_steps=32, batch_size=256, n_epochs=20, MlpPolicy 64x64).
Pong: PPO CnnPolicy with rl-zoo's Atari settings (n_steps=128, batch_size=256, n_epochs=4); every
contender does the same Atari work (fastvec.bench.work.ATARI: sticky actions 0.25, noops, frame skip 4,
84x84 gray, 4 frames). torch on one thread, or with --torch-threads default at torch's own count (one per
core: the learner and the pool then share the cores, as they do when a user trains). fastvec runs at its
default threads (which adapt to the load) and at num_threads=1. PPO learns in rollout-sized chunks for --seconds per
measurement; env time is the time spent in the VecEnv's reset/step_async/step_wait. Contenders are
interleaved and the median and min-max of --reps repetitions reported, as env steps/s.
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
from fastvec.bench.library_runners import make_sb3


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


CONTENDERS = ("fastvec", "fastvec-t1", "DummyVecEnv", "SubprocVecEnv")


def make(env_id: str, contender: str, num_envs: int):
    if contender.startswith("fastvec"):
        return fastvec.sb3_vec(env_id, num_envs, seed=0, num_threads=1 if contender == "fastvec-t1" else None)
    if env_id != "CartPole-v1":  # SB3's Atari pipeline, the same work as fastvec's defaults
        return make_sb3(env_id, num_envs, contender == "SubprocVecEnv").env
    cls = {"DummyVecEnv": DummyVecEnv, "SubprocVecEnv": SubprocVecEnv}[contender]
    return make_vec_env(env_id, n_envs=num_envs, seed=0, vec_env_cls=cls)


def measure(env_id: str, contender: str, num_envs: int, seconds: float) -> tuple[float, float]:
    env = EnvTimer(make(env_id, contender, num_envs))
    if env_id == "CartPole-v1":
        n_steps = 32
        model = PPO(
            "MlpPolicy",
            env,
            n_steps=n_steps,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate=1e-3,
            policy_kwargs={"net_arch": [64, 64]},
            seed=0,
            device="cpu",
        )
    else:
        n_steps = 128
        model = PPO(
            "CnnPolicy",
            env,
            n_steps=n_steps,
            batch_size=256,
            n_epochs=4,
            learning_rate=2.5e-4,
            clip_range=0.1,
            ent_coef=0.01,
            vf_coef=0.5,
            seed=0,
            device="cpu",
        )
    chunk = n_steps * num_envs
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
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1"], choices=["CartPole-v1", "Pong-v5"])
    parser.add_argument(
        "--torch-threads", default="1", help="torch's intra-op threads: a number, or 'default' (torch's own choice)"
    )
    parser.add_argument("--contenders", nargs="+", default=list(CONTENDERS), choices=CONTENDERS)
    args = parser.parse_args()
    if args.torch_threads != "default":
        torch.set_num_threads(int(args.torch_threads))
    contenders = args.contenders
    print(f"torch threads: {torch.get_num_threads()} ({args.torch_threads})")
    print("| env | num_envs | contender | PPO steps/s | env time / loop time |")
    print("|---|---:|---|---:|---:|")
    for env_id in args.envs:
        for n in args.num_envs:
            results: dict[str, list[tuple[float, float]]] = {c: [] for c in contenders}
            for _ in range(args.reps):
                for c in contenders:
                    results[c].append(measure(env_id, c, n, args.seconds))
            for c, runs in results.items():
                rates, fractions = [r for r, _ in runs], [f for _, f in runs]
                print(
                    f"| {env_id} | {n} | {c} | {statistics.median(rates):.0f} [{min(rates):.0f}-{max(rates):.0f}] | "
                    f"{100 * statistics.median(fractions):.1f}% |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
