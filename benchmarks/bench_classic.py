"""CartPole-v1 throughput: fastvec against gymnasium, Stable-Baselines3 and EnvPool.

Counts environment steps per second (one step of one env = one step) for each
contender at several ``num_envs``, following shared/BENCHMARKING.md: contenders
are interleaved (A B A B ...) over several repetitions, the median and min-max
are reported, actions are drawn before timing, construction and the first
reset are excluded, every runner is warmed up, and the machine's load is
recorded before and after. A contender whose package is missing is shown as
"not installed".

    python benchmarks/bench_classic.py                          # default run, a few minutes
    python benchmarks/bench_classic.py --seconds 0.3 --reps 1   # smoke run
    python benchmarks/bench_classic.py --contenders 'fastvec*' 'envpool*' --num-envs 8 4096
"""

from __future__ import annotations

import argparse
import fnmatch
import gc
import importlib
import importlib.metadata
import importlib.util
import itertools
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ENV_ID = "CartPole-v1"
DEFAULT_NUM_ENVS = (1, 8, 256, 4096)
NUM_ACTION_ROWS = 64  # pre-drawn action arrays, cycled through
CHUNK_SECONDS = 0.01  # the timer is read once per chunk of calls, not per call
BUSY_OTHER_SHARE = 0.15  # share of the CPUs that other processes used, above which a measurement is "busy"
IDLE_PROBE_SECONDS = 1.0  # how long to watch the machine before starting


# -- runners -------------------------------------------------------------------


class Runner:
    """One constructed, reset vector env and the loop that steps it.

    ``run(calls)`` makes ``calls`` step calls (sync) or recv/send pairs (async)
    and returns the number of env steps they made.
    """

    steps_per_call: int

    def run(self, calls: int) -> int:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class SyncRunner(Runner):
    def __init__(self, env: Any, step: Callable[[np.ndarray], Any], actions: np.ndarray, num_envs: int,
                 close: Callable[[], None]) -> None:
        self.env = env  # kept alive for the lifetime of the runner
        self._step = step
        self._actions: Iterator[np.ndarray] = itertools.cycle(list(actions))
        self.steps_per_call = num_envs
        self._close = close

    def run(self, calls: int) -> int:
        step = self._step
        for a in itertools.islice(self._actions, calls):
            step(a)
        return calls * self.steps_per_call

    def close(self) -> None:
        self._close()


class AsyncRunner(Runner):
    """EnvPool's async idiom, which fastvec shares: recv a batch, send actions for exactly those envs."""

    def __init__(self, env: Any, actions: np.ndarray, batch_size: int) -> None:
        self.env = env
        self._actions: Iterator[np.ndarray] = itertools.cycle(list(actions[:, :batch_size]))
        self.steps_per_call = batch_size
        env.async_reset()
        # The first recv returns reset results, not steps: take it here, outside any timing.
        info = env.recv()[4]
        env.send(next(self._actions), info["env_id"])

    def run(self, calls: int) -> int:
        recv, send = self.env.recv, self.env.send
        for a in itertools.islice(self._actions, calls):
            info = recv()[4]
            send(a, info["env_id"])
        return calls * self.steps_per_call

    def close(self) -> None:
        self.env.close()


def _actions(num_envs: int, dtype: type) -> np.ndarray:
    rng = np.random.default_rng(12345)
    return rng.integers(0, 2, size=(NUM_ACTION_ROWS, num_envs)).astype(dtype)


def make_fastvec(num_envs: int, num_threads: int | None, asynchronous: bool) -> Runner:
    import fastvec

    if asynchronous:
        env = fastvec.make(ENV_ID, num_envs, batch_size=num_envs // 2, num_threads=num_threads, seed=0)
        return AsyncRunner(env, _actions(num_envs, np.int64), num_envs // 2)
    env = fastvec.make(ENV_ID, num_envs, num_threads=num_threads, seed=0)
    env.reset()
    return SyncRunner(env, env.step, _actions(num_envs, np.int64), num_envs, env.close)


def make_envpool(num_envs: int, num_threads: int, asynchronous: bool) -> Runner:
    import envpool

    kwargs: dict[str, Any] = {"env_type": "gymnasium", "num_envs": num_envs, "seed": 0,
                              "num_threads": num_threads}
    if asynchronous:
        env = envpool.make(ENV_ID, batch_size=num_envs // 2, **kwargs)
        return AsyncRunner(env, _actions(num_envs, np.int32), num_envs // 2)
    env = envpool.make(ENV_ID, **kwargs)
    env.reset()
    return SyncRunner(env, env.step, _actions(num_envs, np.int32), num_envs, env.close)


def make_gymnasium(num_envs: int, mode: str) -> Runner:
    import gymnasium as gym

    env = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode=mode)
    env.reset(seed=0)
    return SyncRunner(env, env.step, _actions(num_envs, np.int64), num_envs, env.close)


def make_sb3_subproc(num_envs: int) -> Runner:
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    # fork, like gymnasium's AsyncVectorEnv here: SB3's default forkserver makes every worker
    # import torch again, which costs minutes at hundreds of workers and nothing once stepping.
    env = make_vec_env(ENV_ID, n_envs=num_envs, seed=0, vec_env_cls=SubprocVecEnv,
                       vec_env_kwargs={"start_method": "fork"})
    env.reset()
    return SyncRunner(env, env.step, _actions(num_envs, np.int64), num_envs, env.close)


@dataclass(frozen=True)
class Contender:
    key: str
    label: str
    package: str
    make: Callable[[int], Runner]
    uses_processes: bool = False  # one OS process per env
    needs_batch: bool = False  # async with batch_size = num_envs // 2: needs num_envs >= 2


CONTENDERS = [
    Contender("fastvec", "fastvec sync (default threads)", "fastvec", lambda n: make_fastvec(n, None, False)),
    Contender("fastvec-t1", "fastvec sync, num_threads=1", "fastvec", lambda n: make_fastvec(n, 1, False)),
    Contender("fastvec-t2", "fastvec sync, num_threads=2", "fastvec", lambda n: make_fastvec(n, 2, False)),
    Contender("fastvec-async", "fastvec async (default threads)", "fastvec",
              lambda n: make_fastvec(n, None, True), needs_batch=True),
    Contender("gym-numpy", "gymnasium CartPoleVectorEnv (numpy)", "gymnasium",
              lambda n: make_gymnasium(n, "vector_entry_point")),
    Contender("gym-async", "gymnasium AsyncVectorEnv", "gymnasium", lambda n: make_gymnasium(n, "async"),
              uses_processes=True),
    Contender("sb3-subproc", "SB3 SubprocVecEnv", "stable_baselines3", make_sb3_subproc, uses_processes=True),
    Contender("envpool-t1", "EnvPool sync, num_threads=1", "envpool", lambda n: make_envpool(n, 1, False)),
    Contender("envpool-t2", "EnvPool sync, num_threads=2", "envpool", lambda n: make_envpool(n, 2, False)),
    Contender("envpool-async-t1", "EnvPool async, num_threads=1", "envpool",
              lambda n: make_envpool(n, 1, True), needs_batch=True),
    Contender("envpool-async-t2", "EnvPool async, num_threads=2", "envpool",
              lambda n: make_envpool(n, 2, True), needs_batch=True),
]
ROUND_TRIP_KEYS = ("fastvec", "envpool-t1", "envpool-t2")


# -- timing --------------------------------------------------------------------


def calibrate(runner: Runner, warmup_seconds: float) -> int:
    """Warms the runner up and returns a chunk size whose calls take about CHUNK_SECONDS."""
    chunk, per_call = 1, 0.0
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        runner.run(chunk)
        t1 = time.perf_counter()
        per_call = (t1 - t0) / chunk
        if t1 - start >= warmup_seconds and t1 - t0 >= CHUNK_SECONDS / 2:
            break
        if t1 - t0 < CHUNK_SECONDS:
            chunk *= 2
    return max(1, int(CHUNK_SECONDS / max(per_call, 1e-9)))


def measure(runner: Runner, chunk: int, seconds: float) -> dict[str, Any]:
    runner.run(chunk)  # re-warm caches after the other contenders ran
    share = CpuShare()
    steps = calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        steps += runner.run(chunk)
        calls += chunk
        now = time.perf_counter()
        if now >= deadline:
            break
    elapsed = now - start
    return {"steps_per_s": steps / elapsed, "us_per_call": elapsed / calls * 1e6, "other_cpu": share.other()}


# -- machine -------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# Busy detection counts user-space CPU time only: kernel housekeeping grows with the number of worker
# processes a contender keeps alive (a few % of the CPUs at 512 idle workers) and is not someone else's job.
# Per-process times are tick-sampled: with hundreds of briefly running workers and measurements well
# under a second, the workers' time is undercounted and a process-per-env row may be marked busy wrongly.


def _machine_user_cpu() -> float | None:
    """User-space CPU seconds of the whole machine so far, from /proc/stat (user + nice)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    return (int(fields[1]) + int(fields[2])) / os.sysconf("SC_CLK_TCK")


def _live_children_user_cpu() -> float:
    """User-space CPU seconds used so far by this process's live children (the workers of open envs)."""
    me, hz, total = os.getpid(), os.sysconf("SC_CLK_TCK"), 0.0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == me:  # fields[1] is the ppid, fields[11] the utime
            total += int(fields[11]) / hz
    return total


def _own_user_cpu() -> float:
    """User-space CPU seconds used by this process, its reaped children and its live ones."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    return own + reaped + _live_children_user_cpu()


class CpuShare:
    """Share of the machine's CPUs that other processes used in user space since construction."""

    def __init__(self) -> None:
        self._machine = _machine_user_cpu()
        self._own = _own_user_cpu()
        self._wall = time.perf_counter()

    def other(self) -> float | None:
        machine = _machine_user_cpu()
        if machine is None or self._machine is None:
            return None
        wall = time.perf_counter() - self._wall
        other = (machine - self._machine) - (_own_user_cpu() - self._own)
        return max(0.0, other) / (wall * (os.cpu_count() or 1))


class LoadMonitor:
    """Load averages before and after; other processes' CPU share just before and during the run.

    The load average lags by a minute and counts this run's own worker processes, so it is recorded
    but the CPU shares decide whether the machine was busy.
    """

    def __init__(self) -> None:
        self.load_before = os.getloadavg()
        probe = CpuShare()
        time.sleep(IDLE_PROBE_SECONDS)
        self.share_before = probe.other()
        self._share = CpuShare()

    def finish(self) -> dict[str, Any]:
        load_after = os.getloadavg()
        other_share = self._share.other()
        reasons = []
        if self.share_before is not None and self.share_before > BUSY_OTHER_SHARE:
            reasons.append(f"other processes used {self.share_before:.0%} of the CPUs just before the run")
        if other_share is not None and other_share > BUSY_OTHER_SHARE:
            reasons.append(f"other processes used {other_share:.0%} of the CPUs during the run")
        return {"load_before": self.load_before, "load_after": load_after,
                "other_cpu_share_before": self.share_before, "other_cpu_share": other_share,
                "busy": bool(reasons), "busy_reasons": reasons}


def source_state() -> str:
    """The commit of the fastvec checkout this script sits in, and whether its tracked files were edited.

    The numbers are for the installed fastvec, which is this checkout only if it was (re)installed from it.
    """
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{head}{' with uncommitted changes' if dirty else ''}"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("fastvec", "numpy", "gymnasium", "stable-baselines3", "envpool", "torch"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


# -- driving -------------------------------------------------------------------


@dataclass
class Cell:
    status: str = "ok"  # "ok", or why there is no number
    steps_per_s: list[float] = field(default_factory=list)
    us_per_call: list[float] = field(default_factory=list)
    other_cpu: list[float | None] = field(default_factory=list)  # other processes' CPU share, per rep

    @property
    def disturbed(self) -> bool:
        return any(x is not None and x > BUSY_OTHER_SHARE for x in self.other_cpu)

    @property
    def median(self) -> float | None:
        return statistics.median(self.steps_per_s) if self.steps_per_s else None


def installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def skip_reason(c: Contender, num_envs: int, max_processes: int) -> str | None:
    if not installed(c.package):
        return "not installed"
    if c.needs_batch and num_envs < 2:
        return "n/a (batch_size = num_envs/2)"
    if c.uses_processes and num_envs > max_processes:
        return "skipped (too many processes)"
    return None


def run_grid(contenders: list[Contender], num_envs: int, args: argparse.Namespace) -> dict[str, Cell]:
    """Measures every contender at one num_envs, interleaved over args.reps repetitions."""
    cells = {c.key: Cell() for c in contenders}
    runners: dict[str, Runner] = {}
    chunks: dict[str, int] = {}
    # Process-based contenders fork first, before this round's thread pools exist.
    for c in sorted(contenders, key=lambda c: not c.uses_processes):
        reason = skip_reason(c, num_envs, args.max_processes)
        if reason:
            cells[c.key].status = reason
            continue
        try:
            runners[c.key] = c.make(num_envs)
        except Exception as e:
            cells[c.key].status = f"failed: {type(e).__name__}: {e}"[:80]
            print(f"  {c.key} at num_envs={num_envs} failed to start: {e!r}", file=sys.stderr)
    for key, runner in runners.items():
        chunks[key] = calibrate(runner, args.warmup)
    order = [c.key for c in contenders if c.key in runners]
    try:
        for rep in range(args.reps):
            # Rotate the order each repetition so no contender always runs right after the same one.
            shift = rep % max(1, len(order))
            for key in order[shift:] + order[:shift]:
                m = measure(runners[key], chunks[key], args.seconds)
                cells[key].steps_per_s.append(m["steps_per_s"])
                cells[key].us_per_call.append(m["us_per_call"])
                cells[key].other_cpu.append(m["other_cpu"])
    finally:
        for runner in runners.values():
            runner.close()
        runners.clear()
        gc.collect()
    return cells


def si(x: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.3g}"


def format_cell(cell: Cell) -> str:
    if not cell.steps_per_s:
        return cell.status
    v = cell.steps_per_s
    mark = " (busy)" if cell.disturbed else ""
    if len(v) == 1:
        return si(v[0]) + mark
    return f"{si(statistics.median(v))} [{si(min(v))}-{si(max(v))}]{mark}"


def markdown_table(contenders: list[Contender], sizes: list[int], grid: dict[int, dict[str, Cell]]) -> str:
    head = "| contender | " + " | ".join(f"num_envs={n}" for n in sizes) + " |"
    rule = "|---|" + "---:|" * len(sizes)
    rows = [head, rule]
    for c in contenders:
        rows.append(f"| {c.label} | " + " | ".join(format_cell(grid[n][c.key]) for n in sizes) + " |")
    return "\n".join(rows)


@dataclass
class Ratio:
    name: str
    target: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    met: bool | None = None
    note: str = ""


def best_of(grid: dict[str, Cell], keys: list[str]) -> tuple[str, Cell] | None:
    measured = [(k, grid[k]) for k in keys if k in grid and grid[k].steps_per_s]
    return max(measured, key=lambda kc: kc[1].median or 0.0) if measured else None


def ratio(name: str, target: float, grid: dict[int, dict[str, Cell]], num_envs: int,
          other_keys: list[str]) -> Ratio:
    r = Ratio(name, f">= {target:g}x")
    cells = grid.get(num_envs)
    if cells is None:
        r.note = f"num_envs={num_envs} not measured"
        return r
    fv = cells.get("fastvec")
    other = best_of(cells, other_keys)
    if fv is None or not fv.steps_per_s:
        r.note = "fastvec: " + (fv.status if fv else "not selected")
        return r
    if other is None:
        statuses = {cells[k].status for k in other_keys if k in cells}
        r.note = "other side: " + (", ".join(sorted(statuses)) or "not selected")
        return r
    key, oc = other
    r.value = fv.median / oc.median
    r.low = min(fv.steps_per_s) / max(oc.steps_per_s)
    r.high = max(fv.steps_per_s) / min(oc.steps_per_s)
    r.met = r.value >= target
    r.note = f"fastvec sync (default threads) vs {key}"
    return r


def round_trip(grid1: dict[str, Cell]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ROUND_TRIP_KEYS:
        cell = grid1.get(key)
        if cell is None:
            continue
        if cell.us_per_call:
            us = cell.us_per_call
            out[key] = {"median_us": statistics.median(us), "min_us": min(us), "max_us": max(us)}
        else:
            out[key] = {"status": cell.status}
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement (default 2)")
    p.add_argument("--reps", type=int, default=3, help="interleaved repetitions per contender (default 3)")
    p.add_argument("--num-envs", type=int, nargs="+", default=list(DEFAULT_NUM_ENVS),
                   help="num_envs values (default: %(default)s)")
    p.add_argument("--contenders", nargs="+", default=["*"], metavar="PATTERN",
                   help="contender keys or glob patterns (default: all): " + ", ".join(c.key for c in CONTENDERS))
    p.add_argument("--max-processes", type=int, default=256,
                   help="skip process-per-env contenders above this num_envs (default 256)")
    p.add_argument("--warmup", type=float, default=None,
                   help="untimed warm-up seconds per runner after construction (default: min(0.5, seconds/4))")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.reps < 1 or min(args.num_envs) < 1:
        p.error("--seconds must be > 0, --reps >= 1 and every --num-envs >= 1")
    if args.warmup is None:
        args.warmup = min(0.5, args.seconds / 4)
    chosen = [c for c in CONTENDERS if any(fnmatch.fnmatch(c.key, pat) for pat in args.contenders)]
    if not chosen:
        p.error(f"--contenders matched nothing; keys are: {', '.join(c.key for c in CONTENDERS)}")
    args.chosen = chosen
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Gymnasium and EnvPool warn about float64 box bounds and the like on every construction.
    warnings.filterwarnings("ignore")
    for c in args.chosen:  # import up front, so no import lands inside a timed loop or a forked worker
        if installed(c.package):
            importlib.import_module(c.package)
    if any(c.key == "sb3-subproc" for c in args.chosen) and installed("stable_baselines3"):
        importlib.import_module("stable_baselines3.common.vec_env")

    command = "python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv or sys.argv[1:])])
    machine = {"cpu": cpu_model(), "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
               "platform": platform.platform(), "versions": versions(), "fastvec_source": source_state()}
    monitor = LoadMonitor()
    print(f"# {ENV_ID} throughput, env steps/s: median [min-max] of {args.reps} x {args.seconds:g} s")
    print(f"command: {command}")
    print(f"machine: {machine['cpu']}, {machine['cores']} cores; load average before: "
          + " ".join(f"{x:.2f}" for x in monitor.load_before))
    if monitor.share_before is not None and monitor.share_before > BUSY_OTHER_SHARE:
        print(f"WARNING: the machine is already busy: other processes use {monitor.share_before:.0%} of the CPUs",
              file=sys.stderr)

    sizes = sorted(set(args.num_envs))
    grid: dict[int, dict[str, Cell]] = {}
    t0 = time.perf_counter()
    for n in sizes:
        print(f"  num_envs={n} ...", file=sys.stderr, flush=True)
        grid[n] = run_grid(args.chosen, n, args)
    rt_cells = grid.get(1)
    rt_keys = [c for c in args.chosen if c.key in ROUND_TRIP_KEYS]
    if rt_cells is None and rt_keys:  # the round trip is measured at num_envs=1 even when it is not in the table
        print("  num_envs=1 (round trip only) ...", file=sys.stderr, flush=True)
        rt_cells = run_grid(rt_keys, 1, args)
    elapsed = time.perf_counter() - t0
    load = monitor.finish()

    ratios = [
        ratio("fastvec / gymnasium CartPoleVectorEnv (numpy) at 4096 envs", 5, grid, 4096, ["gym-numpy"]),
        ratio("fastvec / EnvPool sync (best num_threads) at 4096 envs", 100, grid, 4096,
              ["envpool-t1", "envpool-t2"]),
        ratio("fastvec / EnvPool (best of sync, async, num_threads) at 8 envs", 3, grid, 8,
              ["envpool-t1", "envpool-t2", "envpool-async-t1", "envpool-async-t2"]),
    ]
    rt = round_trip(rt_cells or {})

    print()
    print(markdown_table(args.chosen, sizes, grid))
    print()
    print("| ratio (medians) | value [worst-best] | target | met |")
    print("|---|---:|---:|:---:|")
    for r in ratios:
        if r.value is None:
            print(f"| {r.name} | n/a ({r.note}) | {r.target} | - |")
        else:
            print(f"| {r.name} | {r.value:.1f}x [{r.low:.1f}-{r.high:.1f}] | {r.target} | "
                  f"{'yes' if r.met else 'NO'} |")
    fv_rt = rt.get("fastvec", {})
    if "median_us" in fv_rt:
        met = "yes" if fv_rt["median_us"] < 3 else "NO"
        print(f"| fastvec 1-env step round trip | {fv_rt['median_us']:.2f} µs "
              f"[{fv_rt['min_us']:.2f}-{fv_rt['max_us']:.2f}] | < 3 µs | {met} |")
    for key in ("envpool-t1", "envpool-t2"):
        if "median_us" in rt.get(key, {}):
            v = rt[key]
            print(f"| {key} 1-env step round trip | {v['median_us']:.2f} µs "
                  f"[{v['min_us']:.2f}-{v['max_us']:.2f}] | - | - |")
    print()
    print("Process-per-env contenders fork their workers (SB3 with start_method='fork'). "
          f"'(busy)': other processes took over {BUSY_OTHER_SHARE:.0%} of the CPUs during a repetition.")
    print(f"machine: {machine['cpu']}, {machine['cores']} cores ({machine['usable_cores']} usable), "
          f"{machine['platform']}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
          + f"; checkout: {machine['fastvec_source']}")
    print("load average before: " + " ".join(f"{x:.2f}" for x in load["load_before"])
          + "; after: " + " ".join(f"{x:.2f}" for x in load["load_after"])
          + " (the load after counts this run's own worker processes too)")
    if load["other_cpu_share"] is not None:
        print(f"other processes' user CPU share: {load['other_cpu_share_before']:.0%} in the "
              f"{IDLE_PROBE_SECONDS:g} s before the run, {load['other_cpu_share']:.0%} during it")
    disturbed = sorted({f"{k}@{n}" for n, cells in grid.items() for k, c in cells.items() if c.disturbed})
    if disturbed:
        load["busy"] = True
        load["busy_reasons"].append(f"{len(disturbed)} cell(s) measured while other processes were busy")
    print(f"wall time: {elapsed:.0f} s")
    if load["busy"]:
        print("WARNING: BUSY MACHINE, results are not trustworthy: " + "; ".join(load["busy_reasons"]))

    if args.json:
        doc = {
            "env_id": ENV_ID, "command": command, "seconds": args.seconds, "reps": args.reps,
            "machine": machine, "load": load, "wall_seconds": elapsed,
            "results": {str(n): {k: {"status": c.status, "median_steps_per_s": c.median,
                                     "steps_per_s": c.steps_per_s, "us_per_call": c.us_per_call,
                                     "other_cpu_share": c.other_cpu}
                                 for k, c in cells.items()} for n, cells in grid.items()},
            "ratios": [r.__dict__ for r in ratios],
            "round_trip_us": rt,
        }
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"JSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
