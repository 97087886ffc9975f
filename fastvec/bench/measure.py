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
from fastvec.bench.machine import BUSY_OTHER_SHARE, IDLE_PROBE_SECONDS, tree_memory
from fastvec.bench.ray_runners import example_timesteps
from fastvec.bench.runners import NotAvailable, Runner
from fastvec.bench.work import is_atari, is_dm_control, is_mujoco, is_multiagent


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


# -- how long a run will take --------------------------------------------------

# Setup costs, measured on the 2-core VM of docs/benchmarks.md on 2026-12-06 while other jobs loaded it (load average
# 10-20): on an idle machine they are shorter; the timed seconds are the same on any machine.
START_S = 1.0  # the interpreter and fastvec.bench's imports (0.9 s)
IMPORT_S = {"stable_baselines3": 3.4, "envpool": 5.7, "ray": 0.7, "ray.rllib": 3.3}  # import_packages (others < 0.1 s)
PROCESS_S = 0.045  # start and close one worker process: SubprocVecEnv 1.6 s, AsyncVectorEnv 1.3 s at 32 CartPoles
ATARI_PROCESS_S = 0.9  # the same where each makes an emulator (or MuJoCo, dm_control, MPE): 7 s for 8 Pongs
POOL_S = 0.5  # a process pool of a few workers (fastvec's Python-env pool, SuperSuit's)
OWN_PROCESS_S = 2.5  # a contender built in a process of its own (fresh interpreter, gymnasium, mujoco)
RAY_START_S = 9.0  # ray.init, once a run (10.4 s to the first actor)
RAY_ACTOR_S = 1.1  # each Ray actor (8.8 s for 8, 39 s for 32)
RLLIB_RUNNER_S = 1.0  # an RLlib EnvRunner's construction, before its first sample() call
BUILD_S = 0.05  # any other contender's construction and first reset
MEASURE_OVERHEAD_S = 0.03  # a measurement's re-warm chunk and its /proc reads
PLOT_S = 1.0  # matplotlib's import and one PNG per env
# A memory probe's fresh interpreter (fastvec's probe at 16 CartPoles: 2.1 s), and reading the memory of each process
# a contender runs (SubprocVecEnv's probe: 12.4 s over 16 processes).
PROBE_START_S = 1.8
PROBE_PER_PROCESS_S = 0.4
# RLlib's sample() call: (a + b / num_envs) seconds per env step, from the idle figures of docs/benchmarks.md (RLlib's
# runners over gymnasium's envs; FastvecEnvRunner) and the multi-agent ones (MultiAgentEnvRunner at 64 envs). A call
# takes seconds: every repetition, the warm-up and the construction take at least one, whatever --seconds says.
RLLIB_STEP_S = {
    ("other", "rllib"): (60e-6, 800e-6),
    ("other", "fastvec"): (6e-6, 350e-6),
    ("atari", "rllib"): (2.8e-3, 5e-3),
    ("atari", "fastvec"): (2.3e-3, 5e-3),
    ("multiagent", "rllib"): (0.6e-3, 1e-3),
    ("multiagent", "fastvec"): (10e-6, 350e-6),
}


def _heavy(env_id: str) -> bool:
    """Whether making one ``env_id`` in a fresh worker takes about a second (an emulator, a physics engine)."""
    return is_atari(env_id) or is_mujoco(env_id) or is_dm_control(env_id) or is_multiagent(env_id)


def _own_process(c: Contender, env_id: str) -> bool:
    """Whether :meth:`Contender.build` makes ``c`` in a process of its own on ``env_id``."""
    return (c.mujoco_bindings and is_mujoco(env_id)) or (c.dm_control == "shimmy" and is_dm_control(env_id))


def rllib_call_seconds(c: Contender, env_id: str, num_envs: int) -> float:
    """How long one of ``c``'s calls takes when it is an RLlib EnvRunner's sample() (0: other contenders' calls
    are short)."""
    if c.package != "ray.rllib" or c.key == "ma-rllib-vector":
        return 0.0
    steps = max(num_envs, example_timesteps(c.key.split("-")[1], num_envs) if "_ppo" in c.key else 4000)
    family = "atari" if is_atari(env_id) else "multiagent" if is_multiagent(env_id) else "other"
    runner = "fastvec" if is_fastvec_runner(c.key) else "rllib"
    a, b = RLLIB_STEP_S[family, runner]
    return steps * (a + b / num_envs)


def is_fastvec_runner(key: str) -> bool:
    """Whether an RLlib contender samples with fastvec's own runner (not RLlib's runner on a fastvec pool)."""
    return "fastvec" in key.split("-") and not key.endswith("-stock")


def build_seconds(c: Contender, env_id: str, num_envs: int) -> float:
    """Construction, first reset (and RLlib's first sample() call) of one contender, without the warm-up."""
    if _own_process(c, env_id):
        return OWN_PROCESS_S + rllib_call_seconds(c, env_id, num_envs)
    if c.package == "ray":
        return RAY_ACTOR_S * num_envs
    if c.package == "ray.rllib" and c.key != "ma-rllib-vector":
        return RLLIB_RUNNER_S + rllib_call_seconds(c, env_id, num_envs)
    if c.uses_processes:
        return (ATARI_PROCESS_S if _heavy(env_id) else PROCESS_S) * num_envs
    if c.key in ("fastvec-python", "ma-fastvec-python", "ma-supersuit") or c.key.startswith("fastvec-python-"):
        return POOL_S
    return BUILD_S


def estimate_seconds(
    cells: list[tuple[Contender, str, int]],
    *,
    seconds: float,
    reps: int,
    warmup: float,
    max_processes: int | None,
    memory: list[tuple[Contender, str, int]],
    memory_seconds: float,
    plots: int,
) -> dict[str, float]:
    """How long a run will take: ``cells`` (contender, env id, num_envs) measured ``reps`` x ``seconds`` each
    after a warm-up, the memory probes ``memory`` (contender, env id, num_envs) stepping ``memory_seconds`` each,
    ``plots`` PNGs. Returns the timed seconds, the setup's around them (imports, construction, warm-ups, Ray's
    start, the load probe, plots), the memory probes' and their total.

    An estimate: cells a contender turns out not to run (an env it is not wired for) are counted as run."""
    running = [(c, e, n) for c, e, n in cells if c.skip_reason(n, max_processes) is None]
    timed = setup = 0.0
    for c, e, n in running:
        call = rllib_call_seconds(c, e, n)
        timed += reps * max(seconds, call)
        setup += reps * (call + MEASURE_OVERHEAD_S) + build_seconds(c, e, n) + max(warmup, call)
    packages = {c.package for c, _, _ in running}
    setup += START_S + IDLE_PROBE_SECONDS + PLOT_S * plots + sum(IMPORT_S.get(p, 0.0) for p in packages)
    setup += RAY_START_S if "ray" in packages else 0.0
    probes = 0.0
    for c, e, n in memory:
        if c.skip_reason(n, max_processes) is None:
            start = PROBE_START_S + IMPORT_S.get(c.package, 0.0) + (RAY_START_S if c.package == "ray" else 0.0)
            read = PROBE_PER_PROCESS_S * n if c.uses_processes else 0.0
            probes += start + build_seconds(c, e, n) + max(memory_seconds, rllib_call_seconds(c, e, n)) + read
    return {"timed": timed, "setup": setup, "memory": probes, "total": timed + setup + probes}
