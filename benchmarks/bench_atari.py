"""Atari (Pong) throughput and memory: fastvec vs EnvPool, ale-py's AtariVectorEnv, SB3 SubprocVecEnv and
gymnasium AsyncVectorEnv, side by side in one run, with one emulator in a C++ loop as the ceiling.

    python benchmarks/bench_atari.py                                     # full sweep, ~15 min on 2 cores
    python benchmarks/bench_atari.py --num-envs 8 --seconds 0.5 --reps 1 --no-memory   # smoke run
    python benchmarks/bench_atari.py --contenders 'fastvec-*' 'envpool-*' --json atari.json --verbose

Every contender does the same work (shared/BENCHMARKING.md): Pong, frame skip 4 with max-pooling of the last
two frames, 84x84 grayscale (area resize), frame stack 4, up to 30 noops at reset, sticky actions 0.25, no
episodic life, no reward clipping, no fire reset, 27000 steps (108000 frames) at most per episode, uniformly
random actions drawn before timing. Throughput counts agent steps/s (one step of one env = one step);
frames/s = 4 x steps/s, the unit of EnvPool's published Atari "FPS".

Method: for each num_envs every contender is constructed once, reset and warmed up, then timed for --seconds
in --reps interleaved repetitions (A B C ... A B C ..., order rotated each repetition); the table shows the
median and [min-max]. Threaded pools run with num_threads 1 and 2, sync (batch_size = num_envs) and async
(batch_size = num_envs // 2, at least 1: recv a batch, send actions for exactly those envs); the table shows
the best num_threads per mode, --verbose and --json every one. The baselines step one ALE in a C++ loop on
this thread (fastvec._core.atari_loop_rate), emulation only ("raw") and with the preprocessing; 2 x raw is
what two cores can emulate. Memory: RSS and PSS summed over every process of one contender at
--memory-envs envs, each measured in a fresh interpreter.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import json
import os
import platform
import shlex
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastvec.bench import machine, measure, report, runners

ENV_ID, GAME = "Pong-v5", "pong"
DEFAULT_NUM_ENVS = (1, 4, 8, 16, 32)
MEMORY_NUM_ENVS = 16
# The contenders and their settings are fastvec bench's (fastvec/bench/runners.py): EnvPool's option names, the ones
# fastvec takes; every contender gets the same settings in its own names.
ATARI = runners.ATARI
FRAME_SKIP = ATARI["frame_skip"]
MAX_EPISODE_STEPS = runners.ATARI_MAX_STEPS


# -- runners -------------------------------------------------------------------


def _asynchronous(num_envs: int, asynchronous: bool) -> bool:
    """Async runs use batch_size = num_envs // 2; with one env that is the sync pool."""
    return asynchronous and num_envs >= 2


class Timed:
    """A fastvec.bench runner with its warm-up and timing."""

    def __init__(self, runner: runners.Runner) -> None:
        self.runner = runner
        self.chunk = 1

    def warm_up(self, seconds: float) -> None:
        self.chunk = measure.calibrate(self.runner, seconds)

    def measure(self, seconds: float) -> dict[str, Any]:
        return measure.measure(self.runner, self.chunk, seconds)

    def close(self) -> None:
        self.runner.close()


class LoopBaseline:
    """One ALE stepped in a C++ loop on this thread; each measurement is one call of about ``seconds``."""

    def __init__(self, preprocess: bool) -> None:
        import fastvec
        from fastvec import _core

        self._rate = _core.atari_loop_rate
        self._options = {k: float(v) for k, v in ATARI.items()}
        self._strings = {"rom": str(fastvec.roms.rom_path(GAME))}
        self._preprocess = preprocess
        self._estimate = 1000.0

    def warm_up(self, seconds: float) -> None:
        self._estimate = self._rate(self._options, self._strings, 200, self._preprocess)
        self._estimate = self._rate(
            self._options, self._strings, max(200, int(self._estimate * seconds)), self._preprocess
        )

    def measure(self, seconds: float) -> dict[str, Any]:
        share = machine.CpuShare()
        rate = self._rate(self._options, self._strings, max(200, int(self._estimate * seconds)), self._preprocess)
        self._estimate = rate
        return {"steps_per_s": rate, "us_per_call": 1e6 / rate, "other_cpu": share.other()}

    def close(self) -> None:
        pass


def make_fastvec(num_envs: int, num_threads: int, asynchronous: bool) -> Timed:
    return Timed(runners.make_fastvec(ENV_ID, num_envs, num_threads, _asynchronous(num_envs, asynchronous)))


def make_envpool(num_envs: int, num_threads: int, asynchronous: bool) -> Timed:
    return Timed(runners.make_envpool(ENV_ID, num_envs, num_threads, _asynchronous(num_envs, asynchronous)))


def make_ale_vector(num_envs: int, num_threads: int, asynchronous: bool) -> Timed:
    return Timed(runners.make_ale_vector(ENV_ID, num_envs, num_threads, _asynchronous(num_envs, asynchronous)))


def make_sb3(num_envs: int) -> Timed:
    return Timed(runners.make_sb3(ENV_ID, num_envs, subprocess=True))


def make_gym_async(num_envs: int) -> Timed:
    return Timed(runners.make_gymnasium(ENV_ID, num_envs, "async"))


# -- contenders ----------------------------------------------------------------


@dataclass(frozen=True)
class Contender:
    key: str
    group: str  # the table shows the best (highest median) contender of each group
    package: str
    make: Callable[[int], Any]
    threads: int | None = None
    uses_processes: bool = False  # one worker process per env
    baseline: bool = False  # one emulator, independent of num_envs; no memory probe


def _threaded(prefix: str, name: str, package: str, make: Callable[[int, int, bool], Any]) -> list[Contender]:
    return [
        Contender(
            f"{prefix}-{mode}-t{t}",
            f"{name} {mode}",
            package,
            lambda n, t=t, a=(mode == "async"): make(n, t, a),
            threads=t,
        )
        for mode in ("sync", "async")
        for t in (1, 2)
    ]


CONTENDERS = [
    *_threaded("fastvec", "fastvec", "fastvec", make_fastvec),
    *_threaded("envpool", "EnvPool", "envpool", make_envpool),
    *_threaded("ale", "ale-py AtariVectorEnv", "ale_py", make_ale_vector),
    Contender("sb3-subproc", "SB3 SubprocVecEnv (fork)", "stable_baselines3", make_sb3, uses_processes=True),
    Contender("gym-async", "gymnasium AsyncVectorEnv (fork)", "gymnasium", make_gym_async, uses_processes=True),
    Contender("loop-raw", "1 ALE, C++ loop, emulation only", "fastvec", lambda n: LoopBaseline(False), baseline=True),
    Contender(
        "loop-pre", "1 ALE, C++ loop, with preprocessing", "fastvec", lambda n: LoopBaseline(True), baseline=True
    ),
]
BY_KEY = {c.key: c for c in CONTENDERS}
GROUPS = list(dict.fromkeys(c.group for c in CONTENDERS))
RAW, PRE = "1 ALE, C++ loop, emulation only", "1 ALE, C++ loop, with preprocessing"
FV_SYNC, FV_ASYNC = "fastvec sync", "fastvec async"


# -- measuring -----------------------------------------------------------------


def run_grid(
    chosen: list[Contender], num_envs: int, args: argparse.Namespace
) -> tuple[dict[str, measure.Cell], dict[str, float]]:
    """Every chosen contender at one num_envs, interleaved over args.reps repetitions; and construction times."""
    cells = {c.key: measure.Cell() for c in chosen}
    runners: dict[str, Any] = {}
    built: dict[str, float] = {}
    # Process pools fork first, before this round's thread pools exist.
    for c in sorted(chosen, key=lambda c: not c.uses_processes):
        if not machine.installed(c.package):
            cells[c.key].status = "not installed"
            continue
        print(f"  num_envs={num_envs}: constructing {c.key}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            runners[c.key] = c.make(num_envs)
            runners[c.key].warm_up(args.warmup)
        except Exception as e:  # reported in the table, the run goes on
            cells[c.key].status = f"failed: {type(e).__name__}: {e}"[:80]
            print(f"  {c.key} num_envs={num_envs} failed: {e!r}", file=sys.stderr)
            runners.pop(c.key, None)
            continue
        built[c.key] = time.perf_counter() - t0
    order = [c.key for c in chosen if c.key in runners]
    try:
        for rep, key in measure.interleaved(order, args.reps):
            if key == order[rep % max(1, len(order))]:
                print(f"  num_envs={num_envs}: repetition {rep + 1}/{args.reps}", file=sys.stderr, flush=True)
            cells[key].add(runners[key].measure(args.seconds))
    finally:
        for runner in runners.values():
            runner.close()
    return cells, built


def process_memory(pid: int) -> tuple[int, int | None]:
    """(RSS, PSS) of one process in bytes; PSS is None when smaps_rollup is unreadable."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) * 1024
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            pss = next(int(line.split()[1]) for line in f if line.startswith("Pss:")) * 1024
    except (OSError, StopIteration):
        pss = None
    return rss, pss


def tree_memory(root: int) -> dict[str, Any]:
    """RSS and PSS summed over a process and all its descendants, and how many processes there are."""
    rss, pss, count = 0, 0, 0
    for pid, _ in machine.process_tree(root):
        try:
            r, p = process_memory(pid)
        except (OSError, StopIteration):  # exited meanwhile
            continue
        rss += r
        pss = None if pss is None or p is None else pss + p
        count += 1
    return {"rss_mib": rss / 2**20, "pss_mib": None if pss is None else pss / 2**20, "processes": count}


def memory_probe(key: str, num_envs: int) -> None:
    """Run in a fresh interpreter: builds one contender, steps it for 1 s, prints the memory of its processes."""
    warnings.filterwarnings("ignore")
    before = tree_memory(os.getpid())
    runner = BY_KEY[key].make(num_envs)
    runner.warm_up(1.0)
    print(json.dumps({**tree_memory(os.getpid()), "interpreter_rss_mib": before["rss_mib"]}))
    runner.close()


def measure_memory(c: Contender, num_envs: int) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--memory-probe", c.key, "--memory-envs", str(num_envs)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return {"status": "timed out"}
    if out.returncode != 0:
        return {"status": "failed: " + (out.stderr.strip().splitlines() or ["?"])[-1][:70]}
    return {"status": "ok", **json.loads(out.stdout.strip().splitlines()[-1])}


# -- reporting -----------------------------------------------------------------


def best(cells: dict[str, measure.Cell], group: str) -> tuple[str, measure.Cell] | None:
    """The contender of ``group`` with the highest median at one num_envs."""
    ran = [(k, c) for k, c in cells.items() if BY_KEY[k].group == group and c.steps_per_s]
    return max(ran, key=lambda kc: kc[1].median) if ran else None


def best_fastvec(cells: dict[str, measure.Cell]) -> tuple[str, measure.Cell] | None:
    ran = [b for b in (best(cells, FV_SYNC), best(cells, FV_ASYNC)) if b]
    return max(ran, key=lambda kc: kc[1].median) if ran else None


def format_cell(key: str, cell: measure.Cell, show_threads: bool) -> str:
    """steps/s median [min-max] / frames/s median, then T=num_threads and (busy) when they apply."""
    if not cell.steps_per_s:
        return cell.status
    v = cell.steps_per_s
    text = f"{report.si(cell.median)} [{report.si(min(v))}-{report.si(max(v))}] / {report.si(cell.median * FRAME_SKIP)}"
    threads = BY_KEY[key].threads
    if show_threads and threads:
        text += f" T={threads}"
    return text + (" (busy)" if cell.disturbed else "")


def group_status(cells: dict[str, measure.Cell], group: str) -> str:
    statuses = sorted({c.status for k, c in cells.items() if BY_KEY[k].group == group})
    return "; ".join(statuses) if statuses else "-"


def throughput_table(groups: list[str], sizes: list[int], grid: dict[int, dict[str, measure.Cell]]) -> list[str]:
    rows = [
        "| contender (best num_threads) | " + " | ".join(f"num_envs={n}" for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for g in groups:
        out = []
        for n in sizes:
            b = best(grid[n], g)
            out.append(format_cell(*b, show_threads=True) if b else group_status(grid[n], g))
        rows.append(f"| {g} | " + " | ".join(out) + " |")
    if RAW in groups:
        out = []
        for n in sizes:
            b = best(grid[n], RAW)
            out.append(f"{report.si(2 * b[1].median)} / {report.si(2 * b[1].median * FRAME_SKIP)}" if b else "-")
        rows.append("| 2 x raw: what 2 cores can emulate | " + " | ".join(out) + " |")
    return rows


def per_key_table(chosen: list[Contender], sizes: list[int], grid: dict[int, dict[str, measure.Cell]]) -> list[str]:
    rows = ["| contender | " + " | ".join(f"num_envs={n}" for n in sizes) + " |", "|---|" + "---:|" * len(sizes)]
    for c in chosen:
        rows.append(f"| {c.key} | " + " | ".join(format_cell(c.key, grid[n][c.key], False) for n in sizes) + " |")
    return rows


def _ratio(
    a: tuple[str, measure.Cell] | None, b: tuple[str, measure.Cell] | None, scale: float = 1.0
) -> dict[str, Any] | None:
    """Median over median, and the worst and best case (min over max, max over min)."""
    if a is None or b is None:
        return None
    (ka, ca), (kb, cb) = a, b
    return {
        "value": ca.median / cb.median / scale,
        "low": min(ca.steps_per_s) / max(cb.steps_per_s) / scale,
        "high": max(ca.steps_per_s) / min(cb.steps_per_s) / scale,
        "of": ka,
        "to": kb,
    }


RATIOS: list[tuple[str, Callable[[dict[str, measure.Cell]], dict[str, Any] | None], bool]] = [
    (
        "fastvec sync / ale-py AtariVectorEnv sync",
        lambda c: _ratio(best(c, FV_SYNC), best(c, "ale-py AtariVectorEnv sync")),
        False,
    ),
    (
        "fastvec async / ale-py AtariVectorEnv async",
        lambda c: _ratio(best(c, FV_ASYNC), best(c, "ale-py AtariVectorEnv async")),
        False,
    ),
    ("fastvec sync / EnvPool sync", lambda c: _ratio(best(c, FV_SYNC), best(c, "EnvPool sync")), False),
    ("fastvec async / EnvPool async", lambda c: _ratio(best(c, FV_ASYNC), best(c, "EnvPool async")), False),
    (
        "fastvec (best mode) / SB3 SubprocVecEnv",
        lambda c: _ratio(best_fastvec(c), best(c, "SB3 SubprocVecEnv (fork)")),
        False,
    ),
    (
        "fastvec (best mode) / gymnasium AsyncVectorEnv",
        lambda c: _ratio(best_fastvec(c), best(c, "gymnasium AsyncVectorEnv (fork)")),
        False,
    ),
    (
        "fastvec (best mode) as % of 2 x raw emulation (target at 8+ envs)",
        lambda c: _ratio(best_fastvec(c), best(c, RAW), 2 / 100),
        True,
    ),
    (
        "fastvec (best mode) as % of 2 x C++ loop with preprocessing",
        lambda c: _ratio(best_fastvec(c), best(c, PRE), 2 / 100),
        True,
    ),
]


def ratio_table(sizes: list[int], grid: dict[int, dict[str, measure.Cell]]) -> tuple[list[str], dict[str, Any]]:
    rows = [
        "| ratio of medians [worst-best] | " + " | ".join(f"num_envs={n}" for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    doc: dict[str, Any] = {}
    for name, fn, percent in RATIOS:
        out = []
        for n in sizes:
            r = fn(grid[n])
            doc.setdefault(name, {})[str(n)] = r
            if r is None:
                out.append("-")
            elif percent:
                out.append(f"{r['value']:.0f}% [{r['low']:.0f}-{r['high']:.0f}]")
            else:
                out.append(f"{r['value']:.2f}x [{r['low']:.2f}-{r['high']:.2f}]")
        rows.append(f"| {name} | " + " | ".join(out) + " |")
    return rows, doc


def memory_table(memory: dict[str, dict[str, Any]], num_envs: int) -> list[str]:
    rows = [
        f"| contender @ {num_envs} envs | RSS, all processes | PSS, all processes | processes | "
        "interpreter before construction (RSS) |",
        "|---|---:|---:|---:|---:|",
    ]
    for key, m in memory.items():
        if m["status"] != "ok":
            rows.append(f"| {key} | {m['status']} | | | |")
            continue
        pss = f"{m['pss_mib']:.0f} MiB" if m["pss_mib"] is not None else "n/a"
        rows.append(
            f"| {key} | {m['rss_mib']:.0f} MiB | {pss} | {m['processes']} | {m['interpreter_rss_mib']:.0f} MiB |"
        )
    return rows


def construction_table(chosen: list[Contender], sizes: list[int], built: dict[int, dict[str, float]]) -> list[str]:
    keys = [c.key for c in chosen if not c.baseline]
    rows = [
        "| construction + reset + warm-up (s) | " + " | ".join(f"num_envs={n}" for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for k in keys:
        rows.append(f"| {k} | " + " | ".join(f"{built[n][k]:.1f}" if k in built[n] else "-" for n in sizes) + " |")
    return rows


# -- main ----------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--num-envs", type=int, nargs="+", default=list(DEFAULT_NUM_ENVS), help="num_envs values (default: %(default)s)"
    )
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement (default 2)")
    p.add_argument("--reps", type=int, default=3, help="interleaved repetitions per contender (default 3)")
    p.add_argument(
        "--warmup", type=float, help="untimed seconds per contender after its reset (default: min(0.5, seconds/4))"
    )
    p.add_argument(
        "--contenders",
        nargs="+",
        default=["*"],
        metavar="PATTERN",
        help="keys or glob patterns (default: all): " + ", ".join(BY_KEY),
    )
    p.add_argument(
        "--memory",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure memory in a fresh interpreter per contender (default: on)",
    )
    p.add_argument("--memory-envs", type=int, default=MEMORY_NUM_ENVS, help="num_envs of the memory probe")
    p.add_argument("--json", metavar="PATH", help="also write every measurement as JSON to PATH")
    p.add_argument("--verbose", action="store_true", help="also print every num_threads variant")
    p.add_argument("--memory-probe", metavar="KEY", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.reps < 1 or min(args.num_envs) < 1 or args.memory_envs < 1:
        p.error("--seconds must be > 0, --reps >= 1 and every --num-envs, --memory-envs >= 1")
    if args.warmup is None:
        args.warmup = min(0.5, args.seconds / 4)
    args.chosen = [c for c in CONTENDERS if any(fnmatch.fnmatch(c.key, pat) for pat in args.contenders)]
    if not args.chosen:
        p.error(f"--contenders matched nothing; keys are: {', '.join(BY_KEY)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")  # gymnasium and EnvPool warn on every construction
    if args.memory_probe:
        memory_probe(args.memory_probe, args.memory_envs)
        return 0
    # Import up front, so no import lands in a timed loop or in a forked worker.
    for module in ("fastvec", "envpool", "ale_py", "stable_baselines3.common.vec_env", "gymnasium"):
        if any(c.package == module.split(".")[0] for c in args.chosen) and machine.installed(module.split(".")[0]):
            importlib.import_module(module)

    command = "python benchmarks/bench_atari.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    versions = machine.versions()
    versions["ale-py"] = _version("ale-py")
    monitor = machine.LoadMonitor()
    sizes = sorted(set(args.num_envs))
    t0 = time.perf_counter()
    grid: dict[int, dict[str, measure.Cell]] = {}
    built: dict[int, dict[str, float]] = {}
    for n in sizes:
        grid[n], built[n] = run_grid(args.chosen, n, args)
    memory: dict[str, dict[str, Any]] = {}
    if args.memory:
        for c in args.chosen:
            if c.baseline:
                continue
            if not machine.installed(c.package):
                memory[c.key] = {"status": "not installed"}
                continue
            print(f"  memory of {c.key} at {args.memory_envs} envs", file=sys.stderr, flush=True)
            memory[c.key] = measure_memory(c, args.memory_envs)
    load = monitor.finish()
    elapsed = time.perf_counter() - t0

    groups = [g for g in GROUPS if any(c.group == g for c in args.chosen)]
    ratios, ratio_doc = ratio_table(sizes, grid)
    out = [
        f"# Pong-v5 throughput: agent steps/s median [min-max] / frames/s median, {args.reps} x {args.seconds:g} s",
        "",
        f"command: `{command}`",
        "",
        *throughput_table(groups, sizes, grid),
        "",
    ]
    if args.verbose:
        out += ["Every num_threads variant (T = num_threads):", "", *per_key_table(args.chosen, sizes, grid), ""]
    out += ["Ratios (best num_threads on each side; sync vs sync, async vs async):", "", *ratios, ""]
    if memory:
        out += [
            f"Memory at {args.memory_envs} envs, after 1 s of stepping, each contender in a fresh interpreter "
            "(RSS counts shared pages once per process; PSS splits them):",
            "",
            *memory_table(memory, args.memory_envs),
            "",
        ]
    out += [*construction_table(args.chosen, sizes, built), ""]
    busy = sorted(f"{k}@{n}" for n, cells in grid.items() for k, c in cells.items() if c.disturbed)
    if busy:
        load["busy"] = True
        measured = sum(bool(c.steps_per_s) for cells in grid.values() for c in cells.values())
        load["busy_reasons"].append(
            f"{len(busy)} of {measured} cells measured while other processes were busy"
            + (": " + ", ".join(busy) if len(busy) <= 8 else "")
        )
    out += [
        "Same work everywhere: frame skip 4 + max-pool, 84x84 gray (area resize), stack 4, noop_max 30, sticky 0.25, "
        "no episodic life, no reward clip, no fire reset (SB3's AtariWrapper adds FireResetEnv for Pong regardless: "
        "2 steps per episode reset), 27000-step limit, random actions. Async: batch_size = max(1, num_envs // 2); "
        "at num_envs=1 that is batch_size = num_envs. '(busy)': other processes took over "
        f"{machine.BUSY_OTHER_SHARE:.0%} of the CPUs during a repetition.",
        f"machine: {machine.cpu_model()}, {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable), "
        f"{platform.platform()}",
        "versions: "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f"; this checkout: {checkout_state()}; installed fastvec built {_built_at()}",
        "load average before: "
        + " ".join(f"{x:.2f}" for x in load["load_before"])
        + "; after: "
        + " ".join(f"{x:.2f}" for x in load["load_after"])
        + f"; other processes' CPU share before: {_pct(load['other_cpu_share_before'])}, "
        f"during: {_pct(load['other_cpu_share'])}",
        f"wall time: {elapsed:.0f} s",
    ]
    if load["busy"]:
        out.append("WARNING: BUSY MACHINE, compare ratios within this run only: " + "; ".join(load["busy_reasons"]))
    print("\n".join(out))
    if args.json:
        doc = {
            "command": command,
            "seconds": args.seconds,
            "reps": args.reps,
            "settings": ATARI,
            "max_episode_steps": MAX_EPISODE_STEPS,
            "versions": versions,
            "load": load,
            "wall_seconds": elapsed,
            "results": {
                str(n): {
                    k: {
                        "status": c.status,
                        "median_steps_per_s": c.median,
                        "steps_per_s": c.steps_per_s,
                        "us_per_call": c.us_per_call,
                        "other_cpu_share": c.other_cpu,
                        "construct_seconds": built[n].get(k),
                        "num_threads": BY_KEY[k].threads,
                    }
                    for k, c in cells.items()
                }
                for n, cells in grid.items()
            },
            "ratios": ratio_doc,
            "memory": {"num_envs": args.memory_envs, "contenders": memory},
        }
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


def _version(dist: str) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def checkout_state() -> str:
    """The commit of the checkout this script sits in, and whether tracked files differ from it. The numbers are
    for the installed fastvec, which is this checkout only if it was (re)installed from it."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        git = ["git", "-C", repo]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def _built_at() -> str:
    """When the installed fastvec's native module was written (it measures this checkout only if installed from it)."""
    try:
        from fastvec import _core

        return time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(_core.__file__)))
    except (ImportError, OSError):
        return "at an unknown time"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


if __name__ == "__main__":
    sys.exit(main())
