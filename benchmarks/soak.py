"""Soak: long runs of each pool, watching resident memory and open file descriptors for leaks.

Runs 10^7 CartPole-v1 steps in a native sync pool and in a native async pool, 10^5 Pong-v5 steps in each,
and a Python-env pool (CartPole-v1, backend="python") for --python-seconds, plus make/close churn of both
kinds of pool. RSS (VmRSS of /proc/<pid>/status) and open fds (/proc/<pid>/fd) are sampled every
--sample-every seconds: of this process, and for the Python-env pool of every process (this one and its
workers). After a warm-up (the first --warmup of each run) RSS or fds growing by more than --threshold
percent fails the run (exit code 1). Steps are env steps (a sync step of 8 envs is 8).

    python benchmarks/soak.py                  # the full soak: about 6 minutes on 2 cores
    python benchmarks/soak.py --scale 0.01     # a quick run (about 20 s)
    python benchmarks/soak.py --workloads 'cartpole*'
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import gc
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import fastvec
from fastvec.bench import machine
from fastvec.bench.runners import AsyncRunner, SyncRunner

CARTPOLE_STEPS = 10**7
PONG_STEPS = 10**5


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@dataclass
class Result:
    name: str
    steps: int = 0
    seconds: float = 0.0
    samples: list[tuple[int, int, int]] = field(default_factory=list)  # (steps, rss kB, fds) after warm-up
    note: str = ""

    @property
    def rss(self) -> tuple[int, int, int]:
        """(start, end, peak) kB after warm-up."""
        values = [s[1] for s in self.samples]
        return values[0], values[-1], max(values)

    @property
    def fds(self) -> tuple[int, int, int]:
        values = [s[2] for s in self.samples]
        return values[0], values[-1], max(values)

    @staticmethod
    def growth(start: int, end: int) -> float:
        return 100.0 * (end - start) / start

    def failed(self, threshold: float) -> bool:
        (r0, r1, _), (f0, f1, _) = self.rss, self.fds
        return self.growth(r0, r1) > threshold or self.growth(f0, f1) > threshold


def measure(pids: list[int]) -> tuple[int, int]:
    return sum(machine.rss(p) // 1024 for p in pids), sum(fd_count(p) for p in pids)


def run(
    name: str,
    step: Callable[[], int],
    pids: Callable[[], list[int]],
    *,
    steps: int = 0,
    seconds: float = 0.0,
    warmup: float,
    sample_every: float,
) -> Result:
    """Calls ``step`` (which returns the env steps it took) until ``steps`` env steps or ``seconds`` have
    passed; samples RSS and fds from the end of the warm-up on."""
    print(f"  {name} ...", file=sys.stderr, flush=True)
    result = Result(name)
    warm_steps, warm_seconds = steps * warmup, seconds * warmup
    done = 0
    start = time.perf_counter()
    next_sample = None
    while True:
        done += step()
        now = time.perf_counter()
        if (steps and done >= steps) or (seconds and now - start >= seconds):
            break
        if next_sample is None:
            if (steps and done >= warm_steps) or (seconds and now - start >= warm_seconds):
                gc.collect()
                result.samples.append((done, *measure(pids())))
                next_sample = time.perf_counter() + sample_every
        elif now >= next_sample:
            result.samples.append((done, *measure(pids())))
            next_sample = now + sample_every
    result.seconds = time.perf_counter() - start
    result.steps = done
    gc.collect()
    result.samples.append((done, *measure(pids())))
    return result


def sync_loop(env, rng: np.random.Generator) -> Callable[[], int]:
    """One step call of every env a call."""
    actions = rng.integers(0, env.single_action_space.n, (256, env.num_envs))
    env.reset(seed=0)
    return functools.partial(SyncRunner(env, env.step, actions, env.num_envs, env.close).run, 1)


def async_loop(env, rng: np.random.Generator) -> Callable[[], int]:
    """One recv of a batch and a send to those envs a call."""
    actions = rng.integers(0, env.single_action_space.n, (256, env.batch_size))
    return functools.partial(AsyncRunner(env, actions, env.batch_size).run, 1)


def churn(make: Callable[[], object], use: Callable[[object], None]) -> Callable[[], int]:
    """Makes a pool, uses it briefly, closes it: counts one step per pool."""

    def step() -> int:
        env = make()
        use(env)
        env.close()
        return 1

    return step


def use_briefly(env) -> None:
    env.reset(seed=0)
    for _ in range(5):
        env.step(np.zeros(env.num_envs, np.int64))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=float, default=1.0, help="multiplies every step count and duration (default 1)")
    p.add_argument(
        "--python-seconds",
        type=float,
        default=240.0,
        help="how long the Python-env pool runs, before --scale (default 240)",
    )
    p.add_argument("--warmup", type=float, default=0.1, help="fraction of each run before sampling (default 0.1)")
    p.add_argument("--threshold", type=float, default=1.0, help="allowed growth after warm-up, percent (default 1)")
    p.add_argument("--sample-every", type=float, default=0.5, help="seconds between samples (default 0.5)")
    p.add_argument(
        "--workloads",
        nargs="+",
        default=["*"],
        metavar="PATTERN",
        help="run only workloads whose key matches (keys: cartpole-sync, cartpole-async, pong-sync, "
        "pong-async, python-cartpole, native-churn, python-churn)",
    )
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    me = os.getpid()

    def scaled(n: float) -> int:
        return max(1, round(n * args.scale))

    def processes(env) -> Callable[[], list[int]]:
        """This process, and a Python-env pool's workers."""
        return lambda: [me, *getattr(env, "worker_pids", [])]

    # (key, row label, make the env, the loop, budget)
    workloads = [
        (
            "cartpole-sync",
            "CartPole-v1 native sync (8 envs)",
            lambda: fastvec.make("CartPole-v1", 8, seed=0),
            sync_loop,
            {"steps": scaled(CARTPOLE_STEPS)},
        ),
        (
            "cartpole-async",
            "CartPole-v1 native async (16 envs, batch 8, same_step)",
            lambda: fastvec.make("CartPole-v1", 16, batch_size=8, seed=0, autoreset_mode="same_step"),
            async_loop,
            {"steps": scaled(CARTPOLE_STEPS)},
        ),
        (
            "pong-sync",
            "Pong-v5 native sync (4 envs)",
            lambda: fastvec.make("Pong-v5", 4, seed=0),
            sync_loop,
            {"steps": scaled(PONG_STEPS)},
        ),
        (
            "pong-async",
            "Pong-v5 native async (4 envs, batch 2)",
            lambda: fastvec.make("Pong-v5", 4, batch_size=2, seed=0),
            async_loop,
            {"steps": scaled(PONG_STEPS)},
        ),
        (
            "python-cartpole",
            "CartPole-v1 Python-env pool (4 envs, default workers)",
            lambda: fastvec.make("CartPole-v1", 4, seed=0, backend="python"),
            sync_loop,
            {"seconds": args.python_seconds * args.scale},
        ),
    ]
    churns = [
        (
            "native-churn",
            "make/close churn: CartPole-v1 native pools (8 envs, 2 threads)",
            churn(
                lambda: fastvec.make("CartPole-v1", 8, num_threads=2, batch_size=4),
                lambda env: (env.async_reset(), env.recv(), env.recv()),
            ),
            {"steps": scaled(20_000)},
        ),
        (
            "python-churn",
            "make/close churn: CartPole-v1 Python-env pools (2 envs)",
            churn(lambda: fastvec.make("CartPole-v1", 2, backend="python"), use_briefly),
            {"steps": scaled(150)},
        ),
    ]

    def chosen(key: str) -> bool:
        return any(fnmatch.fnmatch(key, pat) for pat in args.workloads)

    results: list[Result] = []
    t0 = time.perf_counter()
    for key, label, make, loop, budget in workloads:
        if not chosen(key):
            continue
        env = make()
        results.append(
            run(label, loop(env, rng), processes(env), warmup=args.warmup, sample_every=args.sample_every, **budget)
        )
        env.close()
    for key, label, step, budget in churns:
        if chosen(key):
            results.append(run(label, step, lambda: [me], warmup=args.warmup, sample_every=args.sample_every, **budget))
    for r in results:
        if r.name.startswith("make/close"):
            r.note = "steps = pools made and closed"

    print(f"# Soak: growth after a {args.warmup:.0%} warm-up (fail above {args.threshold:g}%)\n")
    print(
        "| workload | steps | wall time | steps/s | RSS start→end (MB) | RSS growth | RSS peak (MB) | "
        "fds start→end | fds growth | result |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    failed = False
    for r in results:
        (r0, r1, rpeak), (f0, f1, _) = r.rss, r.fds
        bad = r.failed(args.threshold)
        failed |= bad
        print(
            f"| {r.name} | {r.steps:,} | {r.seconds:.1f} s | {r.steps / r.seconds:,.0f} | "
            f"{r0 / 1024:.1f} → {r1 / 1024:.1f} | {Result.growth(r0, r1):+.2f}% | {rpeak / 1024:.1f} | "
            f"{f0} → {f1} | {Result.growth(f0, f1):+.2f}% | {'LEAK?' if bad else 'ok'} |"
        )
    notes = sorted({r.note for r in results if r.note})
    if notes:
        print("\n" + "; ".join(notes) + ".")
    print(
        f"\nRSS and fds: this process (Python-env pool: this process and its workers, summed); samples every "
        f"{args.sample_every:g} s; total wall time {time.perf_counter() - t0:.0f} s; {os.cpu_count()} CPUs."
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
