"""PPO learns mpe2's simple_spread through fastvec.sb3_vec: one policy shared by every agent (SuperSuit's recipe),
a slot per (env, agent). Prints a random policy's and the trained policy's mean episode return per agent, both
measured alike (deterministic actions, the same seeds), and the training time.

    python benchmarks/bench_sb3_multiagent_learning.py                     # 200k agent-steps, about a minute
    python benchmarks/bench_sb3_multiagent_learning.py --steps 30000 --supersuit   # also through SuperSuit

With --supersuit the same training runs over SuperSuit's
``concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(env), n, base_class="stable_baselines3")``, whose slots give the
same values from the same seeds; its resets after the first are unseeded (its SB3 wrapper passes no seed on), so
the two scores agree within the noise of training, not exactly.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np


def mean_agent_return(model: Any, env: Any, seed: int, episodes_per_slot: int = 2) -> float:
    """Mean return of the slots' episodes: the model's deterministic actions, or uniform random ones without one."""
    rng = np.random.default_rng(seed)
    sums = np.zeros(env.num_envs)
    returns: list[float] = []
    env.seed(seed)
    obs = env.reset()
    while len(returns) < episodes_per_slot * env.num_envs:
        act = model.predict(obs, deterministic=True)[0] if model is not None else rng.integers(0, 5, env.num_envs)
        env.step_async(act)
        obs, rew, done, _ = env.step_wait()
        sums += rew
        returns += sums[done].tolist()
        sums[done] = 0.0
    return float(np.mean(returns))


def run(make_env: Any, name: str, steps: int, seed: int) -> None:
    from stable_baselines3 import PPO

    env = make_env()
    try:
        random_return = mean_agent_return(None, env, seed + 100)
        model = PPO(
            "MlpPolicy", env, n_steps=64, batch_size=512, n_epochs=4, learning_rate=1e-3, seed=seed, device="cpu"
        )
        start = time.perf_counter()
        model.learn(steps)
        seconds = time.perf_counter() - start
        trained = mean_agent_return(model, env, seed + 100)
        print(
            f"{name:10s} {env.num_envs} slots, {steps} agent-steps in {seconds:.1f} s: mean episode return per agent "
            f"random {random_return:.1f}, trained {trained:.1f}"
        )
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200_000, help="agent-steps of training (default 200000)")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--supersuit", action="store_true", help="also train through SuperSuit's vec env")
    args = parser.parse_args()

    import torch
    from mpe2 import simple_spread_v3

    import fastvec

    torch.set_num_threads(1)

    def env_fn() -> Any:
        return simple_spread_v3.parallel_env(max_cycles=25)

    run(lambda: fastvec.sb3_vec(env_fn, args.num_envs, seed=args.seed), "fastvec", args.steps, args.seed)
    if args.supersuit:
        import supersuit as ss

        def supersuit_env() -> Any:
            venv = ss.concat_vec_envs_v1(
                ss.pettingzoo_env_to_vec_env_v1(env_fn()), args.num_envs, num_cpus=0, base_class="stable_baselines3"
            )
            venv.seed = lambda seed=None: venv.venv.reset(seed=seed)  # SB3VecEnvWrapper.reset passes no seed on
            return venv

        run(supersuit_env, "supersuit", args.steps, args.seed)


if __name__ == "__main__":
    main()
