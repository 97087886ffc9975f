"""A learning check: PPO (one policy shared by the three agents) on mpe2's simple_spread_v3 through fastvec's
multi-agent RLlib runner, for --seconds of training; prints the mean episode return (summed over the agents) of
each iteration, then the first and the best.

    python scripts/rllib_spread_learning.py --seconds 240 --num-envs 16

Not a test: learning takes minutes. The test suite's PPO test checks that it samples and trains.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=240.0)
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import ray
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig

    from fastvec.adapters.rllib import configure

    torch.set_num_threads(1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    config = PPOConfig().framework("torch").debugging(seed=args.seed)
    configure(config, "simple_spread_v3", num_envs=args.num_envs, num_threads=1, max_cycles=25)
    config.env_runners(num_env_runners=0, rollout_fragment_length=100)
    config.training(train_batch_size_per_learner=4800, minibatch_size=600, num_epochs=6, lr=3e-4, entropy_coeff=0.01)
    algo = config.build_algo()
    returns = []
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < args.seconds:
            result = algo.train()["env_runners"]
            ret = result.get("episode_return_mean", float("nan"))
            returns.append(ret)
            print(
                f"iteration {len(returns):3d}  {time.perf_counter() - start:6.1f} s  "
                f"env steps {int(result['num_env_steps_sampled_lifetime']):7d}  episode return {ret:8.2f}",
                flush=True,
            )
    finally:
        algo.stop()
    print(f"first {returns[0]:.2f}, best {max(returns):.2f}, last {returns[-1]:.2f}")


if __name__ == "__main__":
    main()
