"""CartPole-v1 throughput and the spine's targets: fastvec vs gymnasium, SB3 and EnvPool.

The measuring machinery is fastvec.bench (``fastvec bench``); this script runs
the classic-control grid and prints the ratios the targets are stated in:
fastvec vs gymnasium's numpy CartPoleVectorEnv and vs EnvPool, and the 1-env
step round trip.

    python benchmarks/bench_classic.py                          # a few minutes
    python benchmarks/bench_classic.py --seconds 0.3 --reps 1   # smoke run
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

from fastvec.bench import contenders, machine, measure, report
from fastvec.bench.cli import DEFAULT_NUM_ENVS

ENV_ID = "CartPole-v1"
KEYS = (
    "fastvec",
    "fastvec-t1",
    "fastvec-t2",
    "fastvec-async",
    "gym-numpy",
    "gym-async",
    "sb3-subproc",
    "envpool-t1",
    "envpool-t2",
    "envpool-async-t1",
    "envpool-async-t2",
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement (default 2)")
    p.add_argument("--reps", type=int, default=3, help="interleaved repetitions per contender (default 3)")
    p.add_argument("--num-envs", type=int, nargs="+", default=list(DEFAULT_NUM_ENVS))
    p.add_argument("--contenders", nargs="+", default=["*"], metavar="PATTERN", help=", ".join(KEYS))
    p.add_argument("--max-processes", type=int, default=256)
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = p.parse_args(argv)
    args.warmup = min(0.5, args.seconds / 4)
    chosen = [c for c in contenders.select(contenders.CONTENDERS, args.contenders) if c.key in KEYS]
    if not chosen:
        p.error(f"--contenders matched nothing; keys are: {', '.join(KEYS)}")
    warnings.filterwarnings("ignore")

    monitor = machine.LoadMonitor()
    sizes = sorted(set(args.num_envs))
    t0 = time.perf_counter()
    protocol = {"seconds": args.seconds, "reps": args.reps, "warmup": args.warmup, "max_processes": args.max_processes}
    grid = {}
    for n in sizes:
        print(f"  num_envs={n} ...", file=sys.stderr, flush=True)
        grid[n] = measure.run_grid(chosen, ENV_ID, n, **protocol)
    rt_cells = grid.get(1)
    rt_keys = [c for c in chosen if c.key in report.ROUND_TRIP_KEYS]
    if rt_cells is None and rt_keys:
        rt_cells = measure.run_grid(rt_keys, ENV_ID, 1, **protocol)
    load = monitor.finish()

    ratios = [
        report.ratio("fastvec / gymnasium CartPoleVectorEnv (numpy) at 4096 envs", 5, grid, 4096, ["gym-numpy"]),
        report.ratio(
            "fastvec / EnvPool sync (best num_threads) at 4096 envs", 100, grid, 4096, ["envpool-t1", "envpool-t2"]
        ),
        report.ratio(
            "fastvec / EnvPool (best of sync, async, num_threads) at 8 envs",
            3,
            grid,
            8,
            ["envpool-t1", "envpool-t2", "envpool-async-t1", "envpool-async-t2"],
        ),
    ]
    rt = report.round_trip(rt_cells or {})
    print(f"# {ENV_ID} throughput, env steps/s: median [min-max] of {args.reps} x {args.seconds:g} s\n")
    print(report.markdown_table(chosen, sizes, grid))
    print("\n| ratio (medians) | value [worst-best] | target | met |\n|---|---:|---:|:---:|")
    for r in ratios:
        if r.value is None:
            print(f"| {r.name} | n/a ({r.note}) | {r.target} | - |")
        else:
            print(f"| {r.name} | {r.value:.1f}x [{r.low:.1f}-{r.high:.1f}] | {r.target} | {'yes' if r.met else 'NO'} |")
    for key, v in rt.items():
        if "median_us" in v:
            target, met = ("< 3 µs", "yes" if v["median_us"] < 3 else "NO") if key == "fastvec" else ("-", "-")
            print(
                f"| {key} 1-env step round trip | {v['median_us']:.2f} µs "
                f"[{v['min_us']:.2f}-{v['max_us']:.2f}] | {target} | {met} |"
            )
    print(
        f"\nmachine: {machine.cpu_model()}; load average before: "
        + " ".join(f"{x:.2f}" for x in load["load_before"])
        + f"; wall time {time.perf_counter() - t0:.0f} s"
    )
    if load["busy"]:
        print("WARNING: BUSY MACHINE, results are not trustworthy: " + "; ".join(load["busy_reasons"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "ratios": [r.__dict__ for r in ratios],
                    "round_trip_us": rt,
                    "results": {str(n): {k: c.steps_per_s for k, c in cells.items()} for n, cells in grid.items()},
                },
                f,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
