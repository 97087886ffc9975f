"""Measuring contenders: interleaved repetitions over several of them at one num_envs (each timed as
:mod:`fastvec.bench.runners` times a runner), a memory probe in a fresh interpreter, and the command-line
options of a benchmark over such a grid."""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fastvec.bench.contenders import Contender
from fastvec.bench.machine import BUSY_OTHER_SHARE, tree_memory
from fastvec.bench.runners import NotAvailable, Runner


@dataclass
class Cell:
    """The repetitions of one contender at one num_envs."""

    status: str = "ok"  # "ok", or why there is no number
    steps_per_s: list[float] = field(default_factory=list)
    us_per_call: list[float] = field(default_factory=list)
    other_cpu: list[float | None] = field(default_factory=list)  # other processes' CPU share, per rep
    construct_seconds: float | None = None  # construction, reset and warm-up, when it ran

    @property
    def disturbed(self) -> bool:
        return any(x is not None and x > BUSY_OTHER_SHARE for x in self.other_cpu)

    @property
    def median(self) -> float | None:
        return statistics.median(self.steps_per_s) if self.steps_per_s else None

    def add(self, m: dict[str, Any]) -> None:
        """Records one measurement (:func:`fastvec.bench.runners.measure`'s dict)."""
        self.steps_per_s.append(m["steps_per_s"])
        self.us_per_call.append(m["us_per_call"])
        self.other_cpu.append(m["other_cpu"])


def interleaved(keys: list[str], reps: int) -> Iterator[tuple[int, str]]:
    """(repetition, key) for ``reps`` repetitions of every key, A B C, B C A, ...: the order rotates
    each repetition so that no contender always runs right after the same one."""
    for rep in range(reps):
        shift = rep % max(1, len(keys))
        for key in keys[shift:] + keys[:shift]:
            yield rep, key


def run_grid(
    contenders: list[Contender],
    env_id: str,
    num_envs: int,
    *,
    seconds: float,
    reps: int,
    warmup: float,
    max_processes: int | None = None,
    progress: Any = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Cell]:
    """Measures every contender at one num_envs, interleaved over ``reps`` repetitions of ``seconds``.

    Each is constructed and reset once, then warmed up for ``warmup`` seconds; one that cannot run gets a
    Cell whose status says why. ``progress`` (a tqdm bar) counts repetitions; ``log`` gets a line when a
    contender is constructed and when a repetition starts.
    """
    cells = {c.key: Cell() for c in contenders}
    runners: dict[str, Runner] = {}

    def failed(c: Contender, e: Exception) -> None:
        cells[c.key].status = f"failed: {type(e).__name__}: {e}"[:80]
        print(f"  {c.key} {env_id} num_envs={num_envs} failed to start: {e!r}", file=sys.stderr)

    # Process-based contenders fork first, before this round's thread pools exist.
    for c in sorted(contenders, key=lambda c: not c.uses_processes):
        reason = c.skip_reason(num_envs, max_processes)
        if reason is None:
            if log is not None:
                log(f"constructing {c.key}")
            t0 = time.perf_counter()
            try:
                runners[c.key] = c.build(env_id, num_envs)
                cells[c.key].construct_seconds = time.perf_counter() - t0
            except NotAvailable as e:
                reason = str(e)
            except Exception as e:
                failed(c, e)
        if reason is not None:
            cells[c.key].status = reason
        if c.key not in runners and progress is not None:
            progress.update(reps)
    for key, runner in list(runners.items()):
        t0 = time.perf_counter()
        try:
            runner.warm_up(warmup)
        except Exception as e:
            failed(next(c for c in contenders if c.key == key), e)
            cells[key].construct_seconds = None
            runners.pop(key).close()
            if progress is not None:
                progress.update(reps)
            continue
        cells[key].construct_seconds = (cells[key].construct_seconds or 0.0) + time.perf_counter() - t0
    order = [c.key for c in contenders if c.key in runners]
    try:
        for rep, key in interleaved(order, reps):
            if log is not None and key == order[rep % len(order)]:
                log(f"repetition {rep + 1}/{reps}")
            cells[key].add(runners[key].timed(seconds))
            if progress is not None:
                progress.update(1)
    finally:
        for runner in runners.values():
            runner.close()
        runners.clear()
        gc.collect()
    return cells


# -- memory --------------------------------------------------------------------


def memory_probe(make: Callable[[], Runner], seconds: float) -> None:
    """The fresh interpreter's side of :func:`memory_in_fresh_interpreter`: builds one runner, steps it for
    ``seconds`` (its warm-up), prints the memory of every process it runs as one JSON line."""
    warnings.filterwarnings("ignore")
    before = tree_memory(os.getpid())
    runner = make()
    runner.warm_up(seconds)
    print(json.dumps({**tree_memory(os.getpid()), "interpreter_rss_mib": before["rss_mib"]}))
    runner.close()


def memory_in_fresh_interpreter(args: list[str], timeout: float) -> dict[str, Any]:
    """Runs ``python args...`` (which calls :func:`memory_probe`) and returns what it printed, with
    ``status`` "ok"; else ``status`` "timed out" or "failed" and ``error``, the last line of its stderr."""
    try:
        # Not in the caller's directory: `python -c` imports from there first, and in a source checkout
        # (where the README runs the bench) that is fastvec's source tree, without its built extension.
        out = subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=tempfile.gettempdir()
        )
    except subprocess.TimeoutExpired:
        return {"status": "timed out"}
    if out.returncode != 0:
        return {"status": "failed", "error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return {"status": "ok", **json.loads(out.stdout.strip().splitlines()[-1])}


def add_grid_arguments(
    p: argparse.ArgumentParser,
    *,
    num_envs: list[int],
    contenders: list[str],
    contenders_help: str,
    memory_envs: int,
) -> None:
    """The options every benchmark script over a contender grid takes (benchmarks/bench_*.py): sizes, timing,
    contenders, memory, output; check them with :func:`check_grid_arguments`."""
    p.add_argument("--num-envs", type=int, nargs="+", default=num_envs, help="num_envs values (default: %(default)s)")
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement (default 2)")
    p.add_argument("--reps", type=int, default=3, help="interleaved repetitions per contender (default 3)")
    p.add_argument(
        "--warmup", type=float, help="untimed seconds per contender after its reset (default: min(0.5, seconds/4))"
    )
    p.add_argument("--contenders", nargs="+", default=contenders, metavar="PATTERN", help=contenders_help)
    p.add_argument(
        "--memory",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure memory in a fresh interpreter per contender (default: on)",
    )
    p.add_argument("--memory-envs", type=int, default=memory_envs, help="num_envs of the memory probe")
    p.add_argument("--json", metavar="PATH", help="also write every measurement as JSON to PATH")
    p.add_argument("--verbose", action="store_true", help="also print every num_threads variant")


def check_grid_arguments(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuses (argparse's error) what :func:`add_grid_arguments` parsed but cannot run; fills in the warmup."""
    if args.seconds <= 0 or args.reps < 1 or min(args.num_envs) < 1 or args.memory_envs < 1:
        p.error("--seconds must be > 0, --reps >= 1 and every --num-envs, --memory-envs >= 1")
    if args.warmup is None:
        args.warmup = min(0.5, args.seconds / 4)
