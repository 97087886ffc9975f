"""RLlib EnvRunner.sample() throughput on CartPole-v1: fastvec pools vs RLlib's default
vectorization (gymnasium's SyncVectorEnv over gymnasium's CartPole), new API stack.

    python benchmarks/bench_rllib.py --seconds 3 --reps 3 --num-envs 8 64

Each measurement builds a local SingleAgentEnvRunner (PPO's default torch RLModule, so the
policy's forward pass is in the loop, as in training), samples once to warm up, then calls
sample(num_timesteps=...) for --seconds. Contenders are interleaved and the median and min-max
of --reps repetitions reported, as env steps/s.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

from fastvec.adapters.rllib import configure


def runner(contender: str, num_envs: int) -> SingleAgentEnvRunner:
    config = PPOConfig().framework("torch").debugging(seed=0)
    if contender == "fastvec":
        configure(config, "CartPole-v1", num_envs=num_envs, num_threads=1)
    else:
        config.environment("CartPole-v1").env_runners(num_envs_per_env_runner=num_envs)
    config.env_runners(num_env_runners=0)
    return SingleAgentEnvRunner(config=config)


def measure(contender: str, num_envs: int, seconds: float) -> float:
    r = runner(contender, num_envs)
    chunk = 32 * num_envs
    r.sample(num_timesteps=chunk, random_actions=False)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        episodes = r.sample(num_timesteps=chunk, random_actions=False)
        steps += sum(len(e) for e in episodes)
    rate = steps / (time.perf_counter() - start)
    r.stop()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[8, 64])
    args = parser.parse_args()
    torch.set_num_threads(1)
    contenders = ["fastvec", "rllib-sync"]
    print("| num_envs_per_env_runner | fastvec | RLlib default (gymnasium SyncVectorEnv) | ratio |")
    print("|---:|---:|---:|---:|")
    for n in args.num_envs:
        rates: dict[str, list[float]] = {c: [] for c in contenders}
        for _ in range(args.reps):
            for c in contenders:
                rates[c].append(measure(c, n, args.seconds))
        med = {c: statistics.median(v) for c, v in rates.items()}
        cells = [f"{med[c] / 1e3:.1f}k [{min(v) / 1e3:.1f}k-{max(v) / 1e3:.1f}k]" for c, v in rates.items()]
        print(f"| {n} | {cells[0]} | {cells[1]} | {med['fastvec'] / med['rllib-sync']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
