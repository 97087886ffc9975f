"""Atari (Pong) throughput and memory: fastvec vs EnvPool, ale-py's AtariVectorEnv, SB3 SubprocVecEnv and
gymnasium AsyncVectorEnv, side by side in one run, with one emulator in a C++ loop as the ceiling.

    python benchmarks/bench_atari.py                                     # full sweep, ~15 min on 2 cores
    python benchmarks/bench_atari.py --num-envs 8 --seconds 0.5 --reps 1 --no-memory   # smoke run
    python benchmarks/bench_atari.py --contenders 'fastvec-*' 'envpool-*' --json atari.json --verbose

Every contender does the same work: Pong, frame skip 4 with max-pooling of the last
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
import json
import os
import shlex
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastvec.bench import contenders, machine, measure, report, runners
from fastvec.bench.fastvec_runners import make_fastvec
from fastvec.bench.library_runners import make_ale_vector, make_envpool, make_gymnasium, make_sb3
from fastvec.bench.machine import BUSY_OTHER_SHARE
from fastvec.bench.measure import Cell
from fastvec.bench.work import ATARI, ATARI_MAX_STEPS

ENV_ID, GAME = "Pong-v5", "pong"
DEFAULT_NUM_ENVS = (1, 4, 8, 16, 32)
MEMORY_NUM_ENVS = 16
MEMORY_SECONDS = 1.0  # how long the memory probe steps before it reads
# The contenders and their settings are fastvec bench's (fastvec/bench/contenders.py, work.py): EnvPool's option
# names, the ones fastvec takes; every contender gets the same settings in its own names.
FRAME_SKIP = ATARI["frame_skip"]


# -- contenders ----------------------------------------------------------------


def _asynchronous(num_envs: int, asynchronous: bool) -> bool:
    """Async runs use batch_size = num_envs // 2; with one env that is the sync pool."""
    return asynchronous and num_envs >= 2


class LoopBaseline(runners.Runner):
    """One ALE stepped in a C++ loop on this thread; each measurement is one call of about ``seconds``."""

    steps_per_call = 1

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

    def timed(self, seconds: float) -> dict[str, Any]:
        share = machine.CpuShare()
        rate = self._rate(self._options, self._strings, max(200, int(self._estimate * seconds)), self._preprocess)
        self._estimate = rate
        return {"steps_per_s": rate, "us_per_call": 1e6 / rate, "other_cpu": share.other()}

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class Contender(contenders.Contender):
    """A fastvec bench contender whose label is its group: the table shows the best (highest median)
    contender of each group."""

    threads: int | None = None
    baseline: bool = False  # one emulator, independent of num_envs; no memory probe


def _threaded(prefix: str, name: str, package: str, make: Callable[[str, int, int, bool], Any]) -> list[Contender]:
    return [
        Contender(
            f"{prefix}-{mode}-t{t}",
            f"{name} {mode}",
            package,
            lambda e, n, t=t, a=(mode == "async"): make(e, n, t, _asynchronous(n, a)),
            threads=t,
        )
        for mode in ("sync", "async")
        for t in (1, 2)
    ]


RAW, PRE = "1 ALE, C++ loop, emulation only", "1 ALE, C++ loop, with preprocessing"
CONTENDERS = [
    *_threaded("fastvec", "fastvec", "fastvec", make_fastvec),
    *_threaded("envpool", "EnvPool", "envpool", make_envpool),
    *_threaded("ale", "ale-py AtariVectorEnv", "ale_py", make_ale_vector),
    Contender(
        "sb3-subproc",
        "SB3 SubprocVecEnv (fork)",
        "stable_baselines3",
        lambda e, n: make_sb3(e, n, subprocess=True),
        uses_processes=True,
    ),
    Contender(
        "gym-async",
        "gymnasium AsyncVectorEnv (fork)",
        "gymnasium",
        lambda e, n: make_gymnasium(e, n, "async"),
        uses_processes=True,
    ),
    Contender("loop-raw", RAW, "fastvec", lambda e, n: LoopBaseline(False), baseline=True),
    Contender("loop-pre", PRE, "fastvec", lambda e, n: LoopBaseline(True), baseline=True),
]
BY_KEY = {c.key: c for c in CONTENDERS}
GROUPS = list(dict.fromkeys(c.label for c in CONTENDERS))
FV_SYNC, FV_ASYNC = "fastvec sync", "fastvec async"


# -- memory --------------------------------------------------------------------


def measure_memory(c: Contender, num_envs: int) -> dict[str, Any]:
    """RSS and PSS over every process of one contender at num_envs, from this script run in a fresh interpreter."""
    m = measure.memory_in_fresh_interpreter(
        [os.path.abspath(__file__), "--memory-probe", c.key, "--memory-envs", str(num_envs)], timeout=600
    )
    return {"status": "failed: " + m["error"][:70]} if m["status"] == "failed" else m


# -- reporting -----------------------------------------------------------------


def best(cells: dict[str, Cell], group: str) -> tuple[str, Cell] | None:
    """The contender of ``group`` with the highest median at one num_envs."""
    return report.best_of(cells, [k for k in cells if BY_KEY[k].label == group])


def best_fastvec(cells: dict[str, Cell]) -> tuple[str, Cell] | None:
    ran = [b for b in (best(cells, FV_SYNC), best(cells, FV_ASYNC)) if b]
    return max(ran, key=lambda kc: kc[1].median) if ran else None


def format_cell(key: str, cell: Cell, show_threads: bool) -> str:
    """steps/s median [min-max] / frames/s median, then T=num_threads and (busy) when they apply."""
    if not cell.steps_per_s:
        return cell.status
    v = cell.steps_per_s
    text = f"{report.si(cell.median)} [{report.si(min(v))}-{report.si(max(v))}] / {report.si(cell.median * FRAME_SKIP)}"
    threads = BY_KEY[key].threads
    if show_threads and threads:
        text += f" T={threads}"
    return text + (" (busy)" if cell.disturbed else "")


def group_status(cells: dict[str, Cell], group: str) -> str:
    statuses = sorted({c.status for k, c in cells.items() if BY_KEY[k].label == group})
    return "; ".join(statuses) if statuses else "-"


def throughput_table(groups: list[str], sizes: list[int], grid: dict[int, dict[str, Cell]]) -> list[str]:
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


def per_key_table(chosen: list[Contender], sizes: list[int], grid: dict[int, dict[str, Cell]]) -> list[str]:
    rows = ["| contender | " + " | ".join(f"num_envs={n}" for n in sizes) + " |", "|---|" + "---:|" * len(sizes)]
    for c in chosen:
        rows.append(f"| {c.key} | " + " | ".join(format_cell(c.key, grid[n][c.key], False) for n in sizes) + " |")
    return rows


def _ratio(a: tuple[str, Cell] | None, b: tuple[str, Cell] | None, scale: float = 1.0) -> dict[str, Any] | None:
    """Median over median, and the worst and best case (min over max, max over min)."""
    if a is None or b is None:
        return None
    (ka, ca), (kb, cb) = a, b
    value, low, high = report.spread(ca, cb)
    return {"value": value / scale, "low": low / scale, "high": high / scale, "of": ka, "to": kb}


RATIOS: list[tuple[str, Callable[[dict[str, Cell]], dict[str, Any] | None], bool]] = [
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


def ratio_table(sizes: list[int], grid: dict[int, dict[str, Cell]]) -> tuple[list[str], dict[str, Any]]:
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


def construction_table(chosen: list[Contender], sizes: list[int], grid: dict[int, dict[str, Cell]]) -> list[str]:
    keys = [c.key for c in chosen if not c.baseline]
    rows = [
        "| construction + reset + warm-up (s) | " + " | ".join(f"num_envs={n}" for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for k in keys:
        built = [grid[n][k].construct_seconds for n in sizes]
        rows.append(f"| {k} | " + " | ".join(f"{b:.1f}" if b is not None else "-" for b in built) + " |")
    return rows


# -- main ----------------------------------------------------------------------


def progress(num_envs: int) -> Callable[[str], None]:
    """Where run_grid says what it is doing at num_envs: stderr."""
    return lambda line: print(f"  num_envs={num_envs}: {line}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    measure.add_grid_arguments(
        p,
        num_envs=list(DEFAULT_NUM_ENVS),
        contenders=["*"],
        contenders_help="keys or glob patterns (default: all): " + ", ".join(BY_KEY),
        memory_envs=MEMORY_NUM_ENVS,
    )
    p.add_argument("--memory-probe", metavar="KEY", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    measure.check_grid_arguments(p, args)
    args.chosen = contenders.select(CONTENDERS, args.contenders)
    if not args.chosen:
        p.error(f"--contenders matched nothing; keys are: {', '.join(BY_KEY)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")  # gymnasium and EnvPool warn on every construction
    if args.memory_probe:
        measure.memory_probe(lambda: BY_KEY[args.memory_probe].make(ENV_ID, args.memory_envs), MEMORY_SECONDS)
        return 0
    contenders.import_packages(args.chosen)  # up front, so no import lands in a timed loop or in a forked worker

    command = "python benchmarks/bench_atari.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    versions = machine.versions()
    checkout = machine.source_state(os.path.dirname(os.path.abspath(__file__)))
    monitor = machine.LoadMonitor()
    sizes = sorted(set(args.num_envs))
    t0 = time.perf_counter()
    grid: dict[int, dict[str, Cell]] = {}
    for n in sizes:
        grid[n] = measure.run_grid(
            args.chosen, ENV_ID, n, seconds=args.seconds, reps=args.reps, warmup=args.warmup, log=progress(n)
        )
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

    groups = [g for g in GROUPS if any(c.label == g for c in args.chosen)]
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
    out += [*construction_table(args.chosen, sizes, grid), ""]
    busy = sorted(f"{k}@{n}" for n, k in report.disturbed(grid))
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
        f"{BUSY_OTHER_SHARE:.0%} of the CPUs during a repetition.",
        report.machine_line(machine.describe()),
        f"versions: {report.versions_text(versions)}; this checkout: {checkout}; "
        f"installed fastvec built {machine.built_at()}",
        report.load_line(load) + f"; other processes' CPU share before: {_pct(load['other_cpu_share_before'])}, "
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
            "max_episode_steps": ATARI_MAX_STEPS,
            "versions": versions,
            "load": load,
            "wall_seconds": elapsed,
            "results": {
                str(n): {
                    k: {
                        **report.cell_doc(c),
                        "construct_seconds": c.construct_seconds,
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


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


if __name__ == "__main__":
    sys.exit(main())
