"""xla(): a rollout of --steps steps as one jitted jax.lax.scan over the pool's XLA step, against the Python loop
over the same pool (env.step per step), and against EnvPool 1.2.5's xla() on JAX's CPU backend.

    python benchmarks/bench_xla.py                                    # CartPole-v1 and Pong-v5
    python benchmarks/bench_xla.py --env CartPole-v1 --num-envs 64 --steps 500 --reps 3

Every contender does the same work: fastvec.envpool's and EnvPool's pools made with the same EnvPool options
(so the same Atari settings: EnvPool's defaults), num_threads --num-threads, sync (batch_size = num_envs), the
same uniformly random actions drawn before timing ((steps, num_envs) int32, a jax array for the scans). A scan is
compiled and run once before timing. Each repetition times every contender once, in rotated order (interleaved);
the table shows steps/s (one step of one env = one step), median and [min-max], and each one's ratio to the
fastvec scan's median.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def scan_rollout(env: Any, actions: Any) -> Callable[[], None]:
    """A timed call: the whole rollout as one jitted lax.scan over env.xla()'s step (the handle carried)."""
    import jax

    handle, _, _, step = env.xla()

    def body(h: Any, a: Any) -> tuple[Any, Any]:
        h, (_, reward, *_) = step(h, a)
        return h, reward.sum()

    rollout = jax.jit(lambda h, a: jax.lax.scan(body, h, a))
    state = {"handle": handle}

    def run() -> None:
        state["handle"], rewards = rollout(state["handle"], actions)
        jax.block_until_ready(rewards)

    run()  # compile, and warm up
    return run


def python_loop(env: Any, actions: np.ndarray) -> Callable[[], None]:
    def run() -> None:
        for a in actions:
            env.step(a)

    run()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", nargs="+", default=["CartPole-v1", "Pong-v5"])
    parser.add_argument("--num-envs", type=int, nargs="+", default=None, help="default: 64 CartPole, 8 Pong")
    parser.add_argument("--num-threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=None, help="steps per rollout (default: 1000 CartPole, 100 Pong)")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()

    import envpool
    import jax

    import fastvec.envpool as fastvec_envpool

    print(f"jax {jax.__version__} ({jax.default_backend()}), envpool {envpool.__version__}")
    for env_id in args.env:
        atari = env_id.endswith("-v5")
        for num_envs in args.num_envs or [8 if atari else 64]:
            steps = args.steps or (100 if atari else 1000)
            n_actions = 6 if atari else 2
            rng = np.random.default_rng(0)
            actions = rng.integers(0, n_actions, size=(steps, num_envs)).astype(np.int32)
            kw = dict(env_type="gymnasium", num_envs=num_envs, num_threads=args.num_threads, seed=0)
            envs = {
                "fastvec scan": fastvec_envpool.make(env_id, **kw),
                "fastvec python loop": fastvec_envpool.make(env_id, **kw),
                "envpool scan": envpool.make(env_id, **kw),
            }
            for env in envs.values():
                env.reset()
            runs = {
                "fastvec scan": scan_rollout(envs["fastvec scan"], jax.numpy.asarray(actions)),
                "fastvec python loop": python_loop(envs["fastvec python loop"], actions),
                "envpool scan": scan_rollout(envs["envpool scan"], jax.numpy.asarray(actions)),
            }
            rates: dict[str, list[float]] = {name: [] for name in runs}
            names = list(runs)
            for rep in range(args.reps):
                for name in names[rep % len(names) :] + names[: rep % len(names)]:
                    start = time.perf_counter()
                    runs[name]()
                    rates[name].append(steps * num_envs / (time.perf_counter() - start))
            base = statistics.median(rates["fastvec scan"])
            print(f"\n{env_id}, num_envs={num_envs}, num_threads={args.num_threads}, {steps} steps per rollout")
            for name, r in rates.items():
                med = statistics.median(r)
                print(f"  {name:22s} {med:12,.0f} steps/s  [{min(r):,.0f}-{max(r):,.0f}]  {med / base:5.2f}x")
            for env in envs.values():
                env.close()


if __name__ == "__main__":
    main()
