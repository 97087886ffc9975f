"""RLlib EnvRunner.sample() throughput, new API stack: fastvec pools vs RLlib's default vectorization
(gymnasium's SyncVectorEnv over gymnasium's env; for Atari, over RLlib's own Atari wrappers).

    python benchmarks/bench_rllib.py --seconds 5 --reps 3 --num-envs 8 64 --envs CartPole-v1 Pong-v5

Each measurement builds a local SingleAgentEnvRunner (PPO's default torch RLModule, torch on one
thread, so the policy's forward pass is in the loop, as in training), samples once to warm up, then
calls sample() for --seconds. fastvec runs with 1 thread (the one CPU RLlib's default uses) and with 2.
Pong does the same env work everywhere: RLlib's wrap_atari_for_new_api_stack (sticky actions 0.25,
noops, frame skip 4, 84x84 gray, 4 frames, a life per episode, FIRE at reset) and fastvec with those
options (fastvec.bench.runners.RLLIB_ATARI). Contenders are interleaved; the median and min-max of --reps
repetitions are reported, as env steps/s.
"""

from __future__ import annotations

import argparse
import time

from fastvec.bench import measure
from fastvec.bench.machine import cpu_model
from fastvec.bench.measure import Cell
from fastvec.bench.runners import RLlibRunner

CONTENDERS = {
    "default": ("RLlib default", lambda env_id, n: RLlibRunner(env_id, n, use_fastvec=False)),
    "fastvec-t1": ("fastvec, 1 thread", lambda env_id, n: RLlibRunner(env_id, n, use_fastvec=True, num_threads=1)),
    "fastvec-t2": ("fastvec, 2 threads", lambda env_id, n: RLlibRunner(env_id, n, use_fastvec=True, num_threads=2)),
}


def measure_fresh(key: str, env_id: str, num_envs: int, seconds: float) -> dict:
    """A fresh EnvRunner, one sample() call to warm up, then sample() calls for ``seconds``."""
    runner = CONTENDERS[key][1](env_id, num_envs)
    try:
        calls = max(1, 256 // num_envs)  # env steps per sample() call: at least 256
        return measure.measure(runner, calls, seconds)
    finally:
        runner.close()


def _cell(cell: Cell) -> str:
    def k(x: float) -> str:
        return f"{x / 1e3:.2f}k" if x < 1e4 else f"{x / 1e3:.1f}k"

    rates = cell.steps_per_s
    return f"{k(cell.median)} [{k(min(rates))}-{k(max(rates))}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1", "Pong-v5"])
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu_model()}")
    names = [CONTENDERS[k][0] for k in CONTENDERS]
    print(
        f"| env | num_envs_per_env_runner | {' | '.join(names)} | fastvec 1 thread / default | "
        "fastvec 2 threads / default |"
    )
    print("|---|---:|" + "---:|" * (len(names) + 2))
    for env_id in args.envs:
        for n in args.num_envs:
            cells = {k: Cell() for k in CONTENDERS}
            for _ in range(args.reps):  # the same order every repetition
                for k in CONTENDERS:
                    cells[k].add(measure_fresh(k, env_id, n, args.seconds))
            med = {k: c.median for k, c in cells.items()}
            row = " | ".join(_cell(cells[k]) for k in CONTENDERS)
            print(
                f"| {env_id} | {n} | {row} | {med['fastvec-t1'] / med['default']:.2f}x | "
                f"{med['fastvec-t2'] / med['default']:.2f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()
