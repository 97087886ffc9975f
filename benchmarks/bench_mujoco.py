"""MuJoCo throughput and memory: fastvec vs EnvPool, gymnasium's SyncVectorEnv and AsyncVectorEnv, SB3
SubprocVecEnv and fastvec's Python-env pool, side by side in one run, with one fastvec env stepped in a C++ loop
as the ceiling, and the ratios fastvec's MuJoCo targets are stated in, each marked met or not.

    python benchmarks/bench_mujoco.py                 # HalfCheetah, Hopper, Ant, Humanoid at 1 8 32 envs: ~30 min
    python benchmarks/bench_mujoco.py --envs Swimmer InvertedPendulum InvertedDoublePendulum Reacher Walker2d
    python benchmarks/bench_mujoco.py --all-envs      # gymnasium's eleven MuJoCo v5 envs: ~80 min
    python benchmarks/bench_mujoco.py --envs HalfCheetah --num-envs 8 --seconds 0.3 --reps 1 --no-memory  # smoke run

Every contender does the same work: gymnasium's v5 env as gymnasium.make makes it (EnvPool
1.2.5: its own v5 of the env, whose frame skip, observation, action bounds and episode limit equal gymnasium's),
uniformly random actions within the action bounds drawn before timing (in each contender's action dtype: float32,
EnvPool float64), episodes ended by the env's own terminations and at its limit (1000 steps; Pusher 100, Reacher
50), then reset. Throughput counts env steps/s (one step of one env = one step).

Autoreset: fastvec, gymnasium and EnvPool by default reset an env on the step after its episode ended
("next-step"), a step that steps no physics but counts as one; SB3 resets within the step that ended it
("same-step"). Under random actions that is a large share of some envs' steps (InvertedPendulum's episodes last
about 7 steps, Hopper's, Walker2d's and Humanoid's 20-30), so each ratio compares like with like: fastvec
next-step against EnvPool, gymnasium and the next-step ceiling (its loop resets on a step of its own, as the
pool does), fastvec same-step (autoreset_mode="same_step") against SB3 and the same-step ceiling. Same-step also
pays for what it returns at an episode's end (final_obs, final_info).

Method: the machinery of ``fastvec bench`` (fastvec.bench). For each env and num_envs every contender is
constructed once, reset and warmed up, then timed for --seconds in --reps interleaved repetitions (A B C ... with
the order rotated each repetition); the tables show the median and [min-max]. Threaded pools run at num_threads
1 and 2 (the Python-env pool at 1 and 2 worker processes), sync (batch_size = num_envs) and async (batch_size =
num_envs // 2: recv a batch, send actions for exactly those envs); the table shows each one's best num_threads,
--verbose every variant. The ceiling is one fastvec env stepped alone on this thread (fastvec._core.loop_rate):
the same kind of trajectories with no pool, not a bare mj_step loop; "ceiling x T" projects it onto T =
min(num_envs, cores) threads, the most any pool could step (the targets are stated against it), and two such
loops run at once on two threads show how much of that two cores deliver side by side. Memory: RSS (and PSS)
summed over every process of one contender at --memory-envs envs, each in a fresh interpreter.
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

from fastvec.bench import contenders, machine, measure, report
from fastvec.bench.machine import BUSY_OTHER_SHARE
from fastvec.bench.measure import Cell
from fastvec.bench.report import projection_threads
from fastvec.bench.work import MUJOCO_ENVS

DEFAULT_ENVS = ("HalfCheetah-v5", "Hopper-v5", "Ant-v5", "Humanoid-v5")
DEFAULT_NUM_ENVS = (1, 8, 32)
MEMORY_NUM_ENVS = 16
# The envs on which fastvec is to step at least 1.3x EnvPool (at 1-32 envs); on the others, at least as fast.
FAST_VS_ENVPOOL = (
    "HalfCheetah-v5",
    "Hopper-v5",
    "Swimmer-v5",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
    "Reacher-v5",
)

# Each row of the throughput table is a group of fastvec bench contenders (fastvec/bench/contenders.py), shown at its
# best num_threads. fastvec's default-threads variants ("fastvec", "fastvec-async") adapt to the load and repeat
# num_threads 1 or 2, so they run only when asked for with --contenders.
FV_SYNC, FV_ASYNC, EP_SYNC, EP_ASYNC = "fastvec sync", "fastvec async", "EnvPool sync", "EnvPool async"
GYM_SYNC, GYM_ASYNC, SB3, PYENV = (
    "gymnasium SyncVectorEnv",
    "gymnasium AsyncVectorEnv",
    "SB3 SubprocVecEnv",
    "fastvec Python-env pool (gymnasium's env)",
)
FV_SYNC_SAME, FV_ASYNC_SAME = "fastvec sync, same-step autoreset", "fastvec async, same-step autoreset"
CEILING = "ceiling: 1 fastvec env, C++ loop, 1 thread"
CEILING_SAME = "ceiling, same-step resets: 1 fastvec env, C++ loop, 1 thread"
CEILING_2 = "2 such loops at once, 2 threads (measured)"
GROUPS = {
    FV_SYNC: ("fastvec-t1", "fastvec-t2", "fastvec"),
    FV_ASYNC: ("fastvec-async-t1", "fastvec-async-t2", "fastvec-async"),
    FV_SYNC_SAME: ("fastvec-same-step-t1", "fastvec-same-step-t2"),
    FV_ASYNC_SAME: ("fastvec-async-same-step-t1", "fastvec-async-same-step-t2"),
    EP_SYNC: ("envpool-t1", "envpool-t2"),
    EP_ASYNC: ("envpool-async-t1", "envpool-async-t2"),
    GYM_SYNC: ("gym-sync",),
    GYM_ASYNC: ("gym-async",),
    SB3: ("sb3-subproc",),
    PYENV: ("fastvec-python-t1", "fastvec-python-t2"),
    CEILING: ("ceiling",),
    CEILING_SAME: ("ceiling-same-step",),
    CEILING_2: ("ceiling-t2",),
}
GROUP_OF = {key: group for group, keys in GROUPS.items() for key in keys}
KEYS = list(GROUP_OF)
DEFAULT_KEYS = [k for k in KEYS if k not in ("fastvec", "fastvec-async")]
THREADS = {"fastvec": "default", "fastvec-async": "default"}  # the others end in -t<num_threads>
FASTVEC_KEYS = [k for k in KEYS if GROUP_OF[k] in (FV_SYNC, FV_ASYNC, FV_SYNC_SAME, FV_ASYNC_SAME)]
ENVPOOL_KEYS = [k for k in KEYS if GROUP_OF[k] in (EP_SYNC, EP_ASYNC)]


def threads_of(key: str) -> str:
    """A variant's num_threads: the N its key ends with (-tN), "default" for fastvec's own, "" when it has none."""
    head, _, threads = key.rpartition("-t")
    return threads if head and threads.isdigit() else THREADS.get(key, "")


# -- what the tables show --------------------------------------------------------


def best(cells: dict[str, Cell], *groups: str) -> tuple[str, Cell] | None:
    """The contender of ``groups`` with the highest median at one num_envs (None: none of them ran)."""
    return report.best_of(cells, [k for k in cells if GROUP_OF[k] in groups])


def format_cell(key: str, cell: Cell, show_threads: bool) -> str:
    """steps/s median [min-max], then T=num_threads and (busy) when they apply."""
    text = report.format_cell(cell).removesuffix(" (busy)")
    if show_threads and threads_of(key):
        text += f" T={threads_of(key)}"
    return text + (" (busy)" if cell.disturbed else "")


def group_status(cells: dict[str, Cell], group: str) -> str:
    return "; ".join(sorted({c.status for k, c in cells.items() if GROUP_OF[k] == group})) or "-"


def throughput_table(groups: list[str], sizes: list[int], grid: dict[int, dict[str, Cell]], cores: int) -> list[str]:
    rows = [
        "| contender (at its best T = num_threads; Python-env pool: worker processes) | "
        + " | ".join(f"num_envs={n}" for n in sizes)
        + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for g in groups:
        out = []
        for n in sizes:
            b = best(grid[n], g)
            out.append(format_cell(*b, show_threads=True) if b else group_status(grid[n], g))
        rows.append(f"| {g} | " + " | ".join(out) + " |")
        if g in (CEILING, CEILING_SAME):
            out = []
            for n in sizes:
                b, k = best(grid[n], g), projection_threads(n, cores)
                out.append(f"{report.si(k * b[1].median)} (x{k})" if b else "-")
            rows.append(
                f"| {'ceiling' if g == CEILING else 'same-step ceiling'} x min(num_envs, {cores} cores): projection, "
                "not measured | " + " | ".join(out) + " |"
            )
    return rows


def per_key_table(chosen: list[contenders.Contender], sizes: list[int], grid: dict[int, dict[str, Cell]]) -> list[str]:
    rows = ["| contender | " + " | ".join(f"num_envs={n}" for n in sizes) + " |", "|---|" + "---:|" * len(sizes)]
    for c in chosen:
        rows.append(f"| {c.key} | " + " | ".join(format_cell(c.key, grid[n][c.key], False) for n in sizes) + " |")
    return rows


# -- targets ---------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One ratio row: fastvec's side over another's at each num_envs, and the value it should reach there."""

    name: str
    of: tuple[str, ...]  # the groups whose best is the numerator
    to: tuple[str, ...]  # the groups whose best is the denominator
    goal: Callable[[str, int], float | None] = lambda env_id, num_envs: None  # the least value; None: no target
    goal_text: str = ""  # the target in words; "": an informative row, not a target
    percent: bool = False  # of T x the denominator, T = min(num_envs, cores): the ceiling's projection


TARGETS = [
    Target(
        "fastvec (best mode) as % of ceiling x min(num_envs, cores)",
        (FV_SYNC, FV_ASYNC),
        (CEILING,),
        lambda env, n: 90.0 if n == 1 else 95.0 if n >= 8 else None,
        ">= 90% of the ceiling at 1 env, >= 95% of its projection at 8+ envs (pool overhead under 5%)",
        percent=True,
    ),
    Target(
        "fastvec same-step (best mode) as % of the same-step ceiling x min(num_envs, cores)",
        (FV_SYNC_SAME, FV_ASYNC_SAME),
        (CEILING_SAME,),
        percent=True,
    ),
    Target(
        "fastvec sync / EnvPool sync",
        (FV_SYNC,),
        (EP_SYNC,),
        lambda env, n: 1.3 if env in FAST_VS_ENVPOOL and n <= 32 else 1.0,
        ">= 1.3x on " + ", ".join(e.removesuffix("-v5") for e in FAST_VS_ENVPOOL) + " at 1-32 envs; >= 1x elsewhere",
    ),
    Target(
        "fastvec async / EnvPool async",
        (FV_ASYNC,),
        (EP_ASYNC,),
        lambda env, n: 1.3 if env in FAST_VS_ENVPOOL and n <= 32 else 1.0,
        "as sync",
    ),
    Target(
        "fastvec same-step (best mode) / SB3 SubprocVecEnv",
        (FV_SYNC_SAME, FV_ASYNC_SAME),
        (SB3,),
        lambda env, n: 4.0 if n >= 8 else None,
        ">= 4x at 8+ envs",
    ),
    Target(
        "fastvec (best mode) / gymnasium AsyncVectorEnv",
        (FV_SYNC, FV_ASYNC),
        (GYM_ASYNC,),
        lambda env, n: 4.0 if n >= 8 else None,
        ">= 4x at 8+ envs",
    ),
    Target("fastvec (best mode) / gymnasium SyncVectorEnv", (FV_SYNC, FV_ASYNC), (GYM_SYNC,)),
]


def ratio(t: Target, env_id: str, n: int, cells: dict[str, Cell], cores: int) -> dict[str, Any] | None:
    """Median over median and the worst and best case (min over max, max over min), with its goal and
    whether it is met; None when either side did not run."""
    a, b = best(cells, *t.of), best(cells, *t.to)
    if a is None or b is None:
        return None
    scale = projection_threads(n, cores) / 100 if t.percent else 1.0
    value, low, high = (x / scale for x in report.spread(a[1], b[1]))
    goal = t.goal(env_id, n)
    return {
        "value": value,
        "low": low,
        "high": high,
        "of": a[0],
        "to": b[0],
        "goal": goal,
        "met": None if goal is None else value >= goal,
    }


def ratio_text(r: dict[str, Any] | None, percent: bool) -> str:
    if r is None:
        return "-"
    if percent:
        text = f"{r['value']:.0f}% [{r['low']:.0f}-{r['high']:.0f}]"
    else:
        text = f"{r['value']:.2f}x [{r['low']:.2f}-{r['high']:.2f}]"
    if r["met"] is None:
        return text
    return text + (" ok" if r["met"] else f" **below {r['goal']:g}{'%' if percent else 'x'}**")


def memory_ratio(memory: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The largest fastvec variant's RSS over the smallest EnvPool variant's (the strict reading of "no more
    than EnvPool's"); None when either side was not measured."""
    fv = [memory[k]["rss_mib"] for k in FASTVEC_KEYS if memory.get(k, {}).get("status") == "ok"]
    ep = [memory[k]["rss_mib"] for k in ENVPOOL_KEYS if memory.get(k, {}).get("status") == "ok"]
    if not fv or not ep:
        return None
    return {"fastvec_mib": max(fv), "envpool_mib": min(ep), "value": max(fv) / min(ep), "met": max(fv) <= min(ep)}


def summary(results: dict[str, dict[str, Any]], memory_envs: int) -> list[str]:
    """One line per target over every env and num_envs measured: met or not, and where not."""
    rows = ["| target | met | below target | not measured |", "|---|:---:|---|---|"]
    for t in TARGETS:
        if not t.goal_text:
            continue
        below, missing = [], []
        for env_id, res in results.items():
            for n, r in res["ratios"][t.name].items():
                where = f"{env_id.removesuffix('-v5')}@{n}"
                if r is not None and r["met"] is False:
                    below.append(f"{where}: {ratio_text({**r, 'met': None}, t.percent)}")
                elif r is None and t.goal(env_id, int(n)) is not None and not res["not_applicable"][t.name][n]:
                    missing.append(where)
        met = "NO" if below else "yes" if not missing else "not all measured"
        rows.append(f"| {t.name}: {t.goal_text} | {met} | {'; '.join(below) or '-'} | {', '.join(missing) or '-'} |")
    below, missing = [], []
    for env_id, res in results.items():
        m = res["memory_ratio"]
        if m is None:
            missing.append(env_id.removesuffix("-v5"))
        elif not m["met"]:
            below.append(f"{env_id.removesuffix('-v5')}: {m['fastvec_mib']:.0f} vs {m['envpool_mib']:.0f} MiB")
    met = "NO" if below else "yes" if not missing else "not all measured"
    if not any(res["memory"] for res in results.values()):
        met, missing = "not measured (--no-memory)", []
    rows.append(
        f"| fastvec's RSS at {memory_envs} envs (its largest variant) <= EnvPool's (its smallest) | {met} | "
        f"{'; '.join(below) or '-'} | {', '.join(missing) or '-'} |"
    )
    return rows


def memory_table(memory: dict[str, dict[str, Any]], num_envs: int) -> list[str]:
    rows = [
        f"| contender @ {num_envs} envs | RSS, all processes | PSS, all processes | processes |",
        "|---|---:|---:|---:|",
    ]
    for key, m in memory.items():
        if m["status"] != "ok":
            rows.append(f"| {key} | {m['status']} | | |")
            continue
        pss = f"{m['pss_mib']:.0f} MiB" if m["pss_mib"] is not None else "n/a"
        rows.append(f"| {key} | {m['rss_mib']:.0f} MiB | {pss} | {m['processes']} |")
    return rows


# -- main ------------------------------------------------------------------------


def measure_memory(c: contenders.Contender, env_id: str, num_envs: int) -> dict[str, Any]:
    """RSS and PSS over every process of one contender, built and stepped in a fresh interpreter."""
    reason = c.skip_reason(num_envs)
    if reason:
        return {"status": reason}
    code = f"from fastvec.bench.cli import memory_probe; memory_probe({c.key!r}, {env_id!r}, {num_envs})"
    m = measure.memory_in_fresh_interpreter(["-c", code], timeout=600)
    return {"status": "failed: " + m["error"][:70]} if m["status"] == "failed" else m


def env_id_of(name: str) -> str:
    """A MuJoCo env id from its id or its name without the version ("Swimmer")."""
    env_id = name if name.endswith("-v5") else f"{name}-v5"
    if env_id not in MUJOCO_ENVS:
        raise argparse.ArgumentTypeError(f"{name!r} is not one of {', '.join(MUJOCO_ENVS)}")
    return env_id


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--envs",
        type=env_id_of,
        nargs="+",
        default=list(DEFAULT_ENVS),
        metavar="ENV",
        help="MuJoCo env ids or names (default: %(default)s); any of: " + ", ".join(MUJOCO_ENVS),
    )
    p.add_argument("--all-envs", action="store_true", help="all eleven MuJoCo envs (overrides --envs)")
    measure.add_grid_arguments(
        p,
        num_envs=list(DEFAULT_NUM_ENVS),
        contenders=DEFAULT_KEYS,
        contenders_help="keys or glob patterns (default: all but fastvec's default-threads variants): "
        + ", ".join(KEYS),
        memory_envs=MEMORY_NUM_ENVS,
    )
    args = p.parse_args(argv)
    measure.check_grid_arguments(p, args)
    if args.all_envs:
        args.envs = list(MUJOCO_ENVS)
    args.envs = list(dict.fromkeys(args.envs))
    candidates = [contenders.contender(k) for k in KEYS]
    args.chosen = contenders.select(candidates, args.contenders)
    if not args.chosen:
        p.error(f"--contenders matched nothing; keys are: {', '.join(KEYS)}")
    return args


def run_env(args: argparse.Namespace, env_id: str, sizes: list[int], cores: int) -> dict[str, Any]:
    """One env: its grid, memory and ratios."""
    grid: dict[int, dict[str, Cell]] = {}
    for n in sizes:
        grid[n] = measure.run_grid(
            args.chosen,
            env_id,
            n,
            seconds=args.seconds,
            reps=args.reps,
            warmup=args.warmup,
            log=lambda line, n=n: print(f"  {env_id} num_envs={n}: {line}", file=sys.stderr, flush=True),
        )
    memory: dict[str, dict[str, Any]] = {}
    if args.memory:
        for c in args.chosen:
            if not c.ceiling:
                print(f"  {env_id}: memory of {c.key} at {args.memory_envs} envs", file=sys.stderr, flush=True)
                memory[c.key] = measure_memory(c, env_id, args.memory_envs)
    ratios = {t.name: {str(n): ratio(t, env_id, n, grid[n], cores) for n in sizes} for t in TARGETS}
    not_applicable = {
        t.name: {
            str(n): any(c.status.startswith("n/a") for k, c in grid[n].items() if GROUP_OF[k] in t.of + t.to)
            for n in sizes
        }
        for t in TARGETS
    }
    return {
        "grid": grid,
        "memory": memory,
        "ratios": ratios,
        "not_applicable": not_applicable,
        "memory_ratio": memory_ratio(memory),
    }


def env_section(args: argparse.Namespace, env_id: str, res: dict[str, Any], sizes: list[int], cores: int) -> list[str]:
    groups = [g for g in GROUPS if any(GROUP_OF[c.key] == g for c in args.chosen)]
    out = [f"## {env_id}", "", *throughput_table(groups, sizes, res["grid"], cores), ""]
    if args.verbose:
        out += ["Every variant (T = num_threads):", "", *per_key_table(args.chosen, sizes, res["grid"]), ""]
    out += [
        "| ratio of medians [worst-best] | " + " | ".join(f"num_envs={n}" for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for t in TARGETS:
        cells = [ratio_text(res["ratios"][t.name][str(n)], t.percent) for n in sizes]
        out.append(f"| {t.name} | " + " | ".join(cells) + " |")
    out.append("")
    if res["memory"]:
        m = res["memory_ratio"]
        verdict = (
            f"fastvec's largest / EnvPool's smallest: {m['value']:.2f}x ({'ok' if m['met'] else '**above EnvPool**'})"
            if m
            else "fastvec / EnvPool: not measured"
        )
        out += [
            f"Memory at {args.memory_envs} envs, each contender in a fresh interpreter; {verdict}:",
            "",
            *memory_table(res["memory"], args.memory_envs),
            "",
        ]
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")  # gymnasium and EnvPool warn on every construction
    contenders.import_packages(args.chosen)  # up front, so no import lands in a timed loop or in a forked worker

    command = "python benchmarks/bench_mujoco.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    here = machine.describe()
    cores = here["usable_cores"]
    versions = machine.versions()
    checkout = machine.source_state(os.path.dirname(os.path.abspath(__file__)))
    monitor = machine.LoadMonitor()
    sizes = sorted(set(args.num_envs))
    t0 = time.perf_counter()
    results = {env_id: run_env(args, env_id, sizes, cores) for env_id in args.envs}
    load = monitor.finish()
    elapsed = time.perf_counter() - t0

    out = [
        f"# MuJoCo throughput: env steps/s, median [min-max] of {args.reps} x {args.seconds:g} s",
        "",
        f"command: `{command}`",
        "",
        "Targets (each ratio is of medians; [worst-best] is min over max and max over min):",
        "",
        *summary(results, args.memory_envs),
        "",
    ]
    for env_id, res in results.items():
        out += env_section(args, env_id, res, sizes, cores)
    busy = sorted(f"{e}:{k}@{n}" for e, res in results.items() for n, k in report.disturbed(res["grid"]))
    if busy:
        load["busy"] = True
        load["busy_reasons"].append(
            f"{len(busy)} cells measured while other processes were busy: "
            + ", ".join(busy[:8])
            + (", ..." if len(busy) > 8 else "")
        )
    out += [
        "Same work everywhere: gymnasium's v5 env (EnvPool: its own v5, the same frame skip, observation, action "
        "bounds and episode limit), uniformly random actions within the bounds, the env's own terminations, its "
        "episode limit. Async: batch_size = num_envs // 2 (n/a at 1 env). Process-per-env contenders fork their "
        f"workers. '(busy)': other processes took over {BUSY_OTHER_SHARE:.0%} of the CPUs during a repetition.",
        report.machine_line(here),
        f"versions: {report.versions_text(versions)}; this checkout: {checkout}; "
        f"installed fastvec built {machine.built_at()}",
        report.load_line(load),
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
            "machine": here,
            "versions": versions,
            "load": load,
            "wall_seconds": elapsed,
            "envs": {
                env_id: {
                    "results": {
                        str(n): {
                            k: {**report.cell_doc(c), "construct_seconds": c.construct_seconds}
                            for k, c in cells.items()
                        }
                        for n, cells in res["grid"].items()
                    },
                    "ratios": res["ratios"],
                    "memory": {"num_envs": args.memory_envs, "contenders": res["memory"]},
                    "memory_ratio": res["memory_ratio"],
                }
                for env_id, res in results.items()
            },
        }
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
