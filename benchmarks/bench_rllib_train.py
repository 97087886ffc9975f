"""RLlib training end to end, RLlib's own EnvRunner vs FastvecEnvRunner, both on fastvec pools (CartPole,
64 envs per runner, torch on one thread): PPO with a local runner (the learner's epochs dominate) and APPO
with one remote runner (asynchronous: the learner takes what the runner samples).

    python benchmarks/bench_rllib_train.py --algos PPO APPO --iterations 3

Each run builds the algorithm, trains once to warm up, then times --iterations train() calls: seconds per
iteration and env steps sampled per second.
"""

from __future__ import annotations

import argparse
import time


def run(algo_name: str, runner_cls: type | None, iterations: int) -> tuple[float, float]:
    from fastvec.adapters.rllib import configure

    if algo_name == "PPO":
        from ray.rllib.algorithms.ppo import PPOConfig

        config = PPOConfig().env_runners(num_env_runners=0)
    else:
        from ray.rllib.algorithms.appo import APPOConfig

        config = APPOConfig().env_runners(num_env_runners=1).reporting(min_time_s_per_iteration=5)
    config.framework("torch").debugging(seed=0)
    configure(config, "CartPole-v1", num_envs=64, num_threads=1, env_runner_cls=runner_cls)
    algo = config.build_algo()
    try:
        algo.train()
        start, steps = time.perf_counter(), 0
        for _ in range(iterations):
            steps += algo.train()["env_runners"]["num_env_steps_sampled"]
        elapsed = time.perf_counter() - start
    finally:
        algo.stop()
    return elapsed / iterations, steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algos", nargs="+", default=["PPO", "APPO"], choices=["PPO", "APPO"])
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    import ray
    import torch

    from fastvec.adapters.rllib import FastvecEnvRunner

    torch.set_num_threads(1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    print("| algorithm | runner | s / iteration | env steps sampled / s |")
    print("|---|---|---:|---:|")
    for algo_name in args.algos:
        for label, cls in (("SingleAgentEnvRunner", None), ("FastvecEnvRunner", FastvecEnvRunner)):
            seconds, rate = run(algo_name, cls, args.iterations)
            print(f"| {algo_name} | {label} | {seconds:.2f} | {rate:.0f} |", flush=True)


if __name__ == "__main__":
    main()
