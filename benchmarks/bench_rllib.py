"""RLlib EnvRunner.sample() throughput, new API stack, measured as RLlib's algorithms sample: --timesteps
env steps per sample() call, then get_metrics() (as synchronous_parallel_sample does, so finished
episodes do not pile up).

    python benchmarks/bench_rllib.py --seconds 5 --reps 3 --num-envs 8 64 256 --envs CartPole-v1
    python benchmarks/bench_rllib.py --seconds 10 --reps 3 --num-envs 8 64 --envs Pong-v5

Each measurement builds a local EnvRunner (PPO's default torch RLModule, torch on one thread, so the
policy's forward pass is in the loop, as in training), samples once to warm up, then calls sample() for
--seconds. Contenders: RLlib's default (its SingleAgentEnvRunner over gymnasium's SyncVectorEnv; for
Pong, over RLlib's own Atari wrappers), RLlib's SingleAgentEnvRunner on a fastvec pool, fastvec's
FastvecEnvRunner with 1 and 2 pool threads, and the "loop only" ceiling: FastvecEnvRunner's batched loop
(forward pass, actions, pool step) with no episodes built, 1 thread. Pong does the same env work
everywhere: RLlib's wrap_atari_for_new_api_stack (sticky actions 0.25, noops, frame skip 4, 84x84 gray, 4
frames, a life per episode, FIRE at reset) and fastvec with those options
(fastvec.bench.ray_runners.RLLIB_ATARI). Contenders are interleaved; the median and min-max of --reps
repetitions are reported, as env steps/s.
"""

from __future__ import annotations

import argparse
import time

from fastvec.bench.machine import cpu_model
from fastvec.bench.measure import Cell
from fastvec.bench.ray_runners import RLlibLoopRunner, RLlibRunner
from fastvec.bench.runners import measure

CONTENDERS = {
    "default": ("RLlib default", lambda e, n, ts: RLlibRunner(e, n, "default", timesteps=ts)),
    "stock": ("SingleAgentEnvRunner on fastvec", lambda e, n, ts: RLlibRunner(e, n, "stock", 1, ts)),
    "fastvec-t1": ("FastvecEnvRunner, 1 thread", lambda e, n, ts: RLlibRunner(e, n, "fastvec", 1, ts)),
    "fastvec-t2": ("FastvecEnvRunner, 2 threads", lambda e, n, ts: RLlibRunner(e, n, "fastvec", 2, ts)),
    "loop": ("loop only (no episodes), 1 thread", lambda e, n, ts: RLlibLoopRunner(e, n, 1, ts)),
}


def measure_fresh(key: str, env_id: str, num_envs: int, seconds: float, timesteps: int) -> dict:
    """A fresh EnvRunner, one sample() call to warm up, then sample() calls for ``seconds``."""
    runner = CONTENDERS[key][1](env_id, num_envs, timesteps)
    try:
        return measure(runner, 1, seconds)
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
    parser.add_argument("--timesteps", type=int, default=4000, help="env steps per sample() call")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1"])
    parser.add_argument("--contenders", nargs="+", default=list(CONTENDERS), choices=list(CONTENDERS))
    args = parser.parse_args()
    keys = args.contenders
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu_model()}")
    ratios = [(k, "default") for k in ("stock", "fastvec-t1", "fastvec-t2") if k in keys and "default" in keys]
    if "fastvec-t1" in keys and "loop" in keys:
        ratios.append(("fastvec-t1", "loop"))
    print(
        f"| env | num_envs_per_env_runner | {' | '.join(CONTENDERS[k][0] for k in keys)} | "
        + " | ".join(f"{a} / {b}" for a, b in ratios)
        + " |"
    )
    print("|---|---:|" + "---:|" * (len(keys) + len(ratios)))
    for env_id in args.envs:
        for n in args.num_envs:
            cells = {k: Cell() for k in keys}
            for _ in range(args.reps):  # the same order every repetition
                for k in keys:
                    cells[k].add(measure_fresh(k, env_id, n, args.seconds, args.timesteps))
            med = {k: c.median for k, c in cells.items()}
            row = " | ".join(_cell(cells[k]) for k in keys)
            shares = " | ".join(f"{med[a] / med[b]:.2f}x" for a, b in ratios)
            print(f"| {env_id} | {n} | {row} | {shares} |", flush=True)


if __name__ == "__main__":
    main()
