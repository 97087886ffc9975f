"""``fastvec bench``: fastvec against the vector envs users switch from, side by side.

Counts environment steps per second (one step of one env = one step; on a
multi-agent env, agent-steps: one step of one agent = one step) for each
contender, env and ``num_envs``, by the rules every fastvec benchmark keeps: contenders
are interleaved (A B A B ...) over several repetitions, the median and min-max
are reported, actions are drawn before timing, construction and the first
reset are excluded, every runner is warmed up, and the machine's load is
recorded before and after. A contender whose package is missing is shown as
"not installed", never dropped.

    fastvec bench                                    # default run, a few minutes
    fastvec bench --quick                            # under a minute
    fastvec bench --envs CartPole-v1 --num-envs 8 4096 --contenders 'fastvec*' 'envpool*'
    fastvec bench --envs HalfCheetah-v5 Hopper-v5                # MuJoCo: num_envs 1 8 32
    fastvec bench --out results/ --json              # also results/bench.json and results/bench.png
    fastvec bench --contention                       # the same with one core taken by a busy loop
    fastvec bench --table results.json               # a run's markdown for docs/benchmarks.md; --plot: its plots
    fastvec bench --multiagent                       # multi-agent envs: simple_spread_v3, rps_v2 at 8 64 256
    fastvec bench --multiagent --quick               # simple_spread_v3 at 8 64, 1 x 0.3 s
    fastvec bench --dm-control                       # dm_control: walker-walk, cheetah-run, ... at 1 8 32
    fastvec bench --dm-control --quick               # WalkerWalk-v1 at 1 8 32, 1 x 0.3 s, no memory probe
    fastvec bench --training --torch-threads 1 default   # training loops, updates included (fastvec.bench.training)
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
import warnings
from typing import Any

from fastvec.bench import machine, measure, report, training
from fastvec.bench.contenders import CONTENDERS, Contender, contender, import_packages, select
from fastvec.bench.machine import BUSY_OTHER_SHARE
from fastvec.bench.measure import Cell
from fastvec.bench.work import ATARI, DM_CONTROL_ENVS, is_atari, is_box2d, is_dm_control, is_mujoco, is_multiagent

DEFAULT_ENVS = ("CartPole-v1", "Pong-v5")
DEFAULT_NUM_ENVS = (1, 8, 256, 4096)
ATARI_NUM_ENVS = (1, 8, 32)  # Atari's default sweep: an emulator per env, each loading its ROM
MUJOCO_NUM_ENVS = (1, 8, 32)  # MuJoCo's: thousands of steps/s per env, where CartPole does millions
BOX2D_NUM_ENVS = (1, 8, 256)  # Box2D's: tens of thousands; 4096 would be thousands of processes for the Python rows
QUICK_NUM_ENVS = (8, 256)
# --multiagent: an MPE env (native and in the Python-env pool) and a Python-only PettingZoo env. Not in the default
# run (~35 minutes): with RLlib's runners (seconds a sample() call) and a process per env at 256 envs, it would add
# a third or more.
MULTIAGENT_ENVS = ("simple_spread_v3", "rps_v2")
MULTIAGENT_NUM_ENVS = (8, 64, 256)
QUICK_MULTIAGENT_NUM_ENVS = (8, 64)
# --dm-control: the suite's tasks the research trains on, those this fastvec registers (humanoid and quadruped may
# not be), at MuJoCo's sizes. Not in the default run: each task adds its shimmy rows' processes and a memory probe.
DM_CONTROL_TASKS = ("WalkerWalk-v1", "CheetahRun-v1", "HumanoidWalk-v1", "QuadrupedRun-v1")
# The default run: one configuration per library (sweeps over threads take --contenders '*').
DEFAULT_CONTENDERS = (
    "fastvec",
    "fastvec-async",
    "fastvec-python",
    "gym-numpy",
    "gym-async",
    "sb3-dummy",
    "sb3-subproc",
    "fastvec-envpool",
    "fastvec-envpool-async",
    "envpool-t1",
    "envpool-async-t1",
    "ray-actors",
    "rllib-default",
    "rllib-fastvec",
    "ale-py",
    "ale-py-async",
    "ceiling",
    # The multi-agent envs' rows (only those envs run them).
    "ma-fastvec",
    "ma-fastvec-python",
    "ma-supersuit",
    "ma-agilerl",
    "ma-rllib-vector",
    "ma-rllib-default",
    "ma-rllib-fastvec",
    "ma-rllib-fastvec-python",
)
MEMORY_NUM_ENVS = 16  # peak memory is measured at this num_envs, in a fresh process per contender
MEMORY_SECONDS = 0.3  # how long the memory probe steps before it reads


def memory_probe(key: str, env_id: str, num_envs: int) -> None:
    """Run in a fresh interpreter: builds one contender, steps it, prints the memory of every process it runs."""
    measure.memory_probe(lambda: contender(key).make(env_id, num_envs), MEMORY_SECONDS)


def peak_memory(c: Contender, env_id: str, num_envs: int, max_processes: int) -> tuple[float | None, str]:
    """RSS summed over every process one contender runs at num_envs, measured in a fresh interpreter."""
    reason = c.skip_reason(num_envs, max_processes)
    if reason:
        return None, reason
    code = f"from fastvec.bench.cli import memory_probe; memory_probe({c.key!r}, {env_id!r}, {num_envs})"
    m = measure.memory_in_fresh_interpreter(["-c", code], timeout=300)
    if m["status"] == "failed":
        return None, "not available" if "NotAvailable" in m["error"] else m["error"][:60]
    return (m["rss_mib"], "ok") if m["status"] == "ok" else (None, m["status"])


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fastvec bench", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"under a minute: CartPole only, num_envs {' '.join(map(str, QUICK_NUM_ENVS))}, "
        "1 x 0.3 s, no memory probe (with --multiagent: a few minutes, RLlib's runners sample 4000 steps a call)",
    )
    envs = p.add_mutually_exclusive_group()
    envs.add_argument(
        "--envs",
        nargs="+",
        metavar="ENV_ID",
        help=f"env ids (default: {' '.join(DEFAULT_ENVS)}); a multi-agent id (an MPE id such as simple_spread_v3, "
        "or rps_v2) is stepped by the multi-agent contenders (ma-*), in agent-steps/s",
    )
    envs.add_argument(
        "--multiagent",
        action="store_true",
        help=f"the multi-agent envs {' '.join(MULTIAGENT_ENVS)} (with --quick: {MULTIAGENT_ENVS[0]}) instead of "
        "the default envs, at num_envs " + " ".join(map(str, MULTIAGENT_NUM_ENVS)),
    )
    envs.add_argument(
        "--dm-control",
        action="store_true",
        help=f"the dm_control tasks {' '.join(DM_CONTROL_TASKS)} that this fastvec registers (with --quick: the "
        "first) instead of the default envs, at num_envs " + " ".join(map(str, MUJOCO_NUM_ENVS)),
    )
    p.add_argument(
        "--num-envs",
        type=int,
        nargs="+",
        help="num_envs values (default: 1 8 256 4096; Atari, MuJoCo and dm_control: 1 8 32; Box2D: 1 8 256; "
        "multi-agent: 8 64 256, with --quick 8 64)",
    )
    p.add_argument("--seconds", type=float, help="timed seconds per measurement (default 2)")
    p.add_argument("--reps", type=int, help="interleaved repetitions per contender (default 3)")
    p.add_argument(
        "--contenders",
        nargs="+",
        default=list(DEFAULT_CONTENDERS),
        metavar="PATTERN",
        help="contender keys or glob patterns, '*' for all (default: %(default)s); all: "
        + ", ".join(c.key for c in CONTENDERS),
    )
    p.add_argument(
        "--max-processes",
        type=int,
        default=256,
        help="skip process-per-env contenders above this num_envs (default 256)",
    )
    p.add_argument(
        "--warmup",
        type=float,
        default=None,
        help="untimed warm-up seconds per runner after construction (default: min(0.5, seconds/4))",
    )
    p.add_argument(
        "--memory",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"measure peak memory of each contender at num_envs={MEMORY_NUM_ENVS} (default: on, off with --quick)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        default="fastvec-bench",
        help="where results.md, results.json and one PNG per env go (default: ./fastvec-bench)",
    )
    p.add_argument(
        "--contention",
        type=int,
        nargs="?",
        const=1,
        default=0,
        metavar="N",
        help="run with N CPU-bound processes (a busy loop each) beside the contenders, as a learner or another "
        "job would share the cores in training (default 0; without N: 1, one core taken)",
    )
    p.add_argument(
        "--table",
        metavar="FILE.json",
        help="run nothing: print the markdown of docs/benchmarks.md (command, date, machine, tables) for a run's "
        "results.json (or its --json output)",
    )
    p.add_argument("--plot", metavar="FILE.json", help="run nothing: write a run's plots again, into --out")
    p.add_argument("--json", action="store_true", help="print the JSON results on stdout instead of the table")
    training.add_arguments(p)
    return p


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = make_parser()
    args = p.parse_args(argv)
    training.check_arguments(p, args, list(DEFAULT_CONTENDERS))
    if args.training:
        return args
    quick = args.quick
    if args.multiagent:
        args.envs = [MULTIAGENT_ENVS[0]] if quick else list(MULTIAGENT_ENVS)
    if args.dm_control:
        tasks = [t for t in DM_CONTROL_TASKS if t in DM_CONTROL_ENVS]
        if not tasks:
            p.error(f"--dm-control: this fastvec registers none of {', '.join(DM_CONTROL_TASKS)}")
        args.envs = tasks[:1] if quick else tasks
    args.envs = args.envs or (["CartPole-v1"] if quick else list(DEFAULT_ENVS))
    args.sizes_given = args.num_envs is not None
    args.num_envs = args.num_envs or list(QUICK_NUM_ENVS if quick else DEFAULT_NUM_ENVS)
    args.seconds = args.seconds if args.seconds is not None else (0.3 if quick else 2.0)
    args.reps = args.reps if args.reps is not None else (1 if quick else 3)
    args.memory = (not quick) if args.memory is None else args.memory
    if args.seconds <= 0 or args.reps < 1 or min(args.num_envs) < 1 or args.contention < 0:
        p.error("--seconds must be > 0, --reps >= 1, every --num-envs >= 1 and --contention >= 0")
    if args.warmup is None:
        args.warmup = min(0.5, args.seconds / 4)
    unknown = [pat for pat in args.contenders if not select(CONTENDERS, [pat])]
    if unknown:
        p.error(f"unknown contender(s) {', '.join(unknown)}; contenders are: {', '.join(c.key for c in CONTENDERS)}")
    args.chosen = select(CONTENDERS, args.contenders)
    for env_id in args.envs:
        if not any(c.runs(env_id) for c in args.chosen):
            kind = "multi-agent" if is_multiagent(env_id) else "single-agent"
            p.error(
                f"no chosen contender steps the {kind} env {env_id}; its contenders are: "
                + ", ".join(c.key for c in CONTENDERS if c.runs(env_id))
            )
    # Only those that step one of the envs (the default contenders include both groups': no import of the others).
    args.chosen = [c for c in args.chosen if any(c.runs(e) for e in args.envs)]
    return args


def contention_text(count: int) -> str:
    """What --contention ran beside the contenders, in words."""
    return "one CPU-bound process (a busy loop)" if count == 1 else f"{count} CPU-bound processes (busy loops)"


def sizes_of(args: argparse.Namespace, env_id: str) -> list[int]:
    """The num_envs to run ``env_id`` at: the ones given, else the default sweep (Atari's, MuJoCo's, dm_control's
    and Box2D's are shorter, the multi-agent envs' their own)."""
    if args.sizes_given:
        return sorted(set(args.num_envs))
    if is_multiagent(env_id):
        return list(QUICK_MULTIAGENT_NUM_ENVS if args.quick else MULTIAGENT_NUM_ENVS)
    if is_atari(env_id):
        return list(ATARI_NUM_ENVS)
    if is_box2d(env_id):
        return list(BOX2D_NUM_ENVS)
    return list(MUJOCO_NUM_ENVS) if is_mujoco(env_id) or is_dm_control(env_id) else sorted(set(args.num_envs))


def chosen_for(args: argparse.Namespace, env_id: str) -> list[Contender]:
    """The chosen contenders that step ``env_id`` (the multi-agent ones on a multi-agent env, the others else)."""
    return [c for c in args.chosen if c.runs(env_id)]


def estimate(args: argparse.Namespace) -> dict[str, float]:
    """:func:`fastvec.bench.measure.estimate_seconds` of what ``main`` will do, and how many cells it measures."""
    cells = [(c, e, n) for e in args.envs for n in sizes_of(args, e) for c in chosen_for(args, e)]
    probes = [(c, e, MEMORY_NUM_ENVS) for e in args.envs for c in chosen_for(args, e) if not c.ceiling]
    est = measure.estimate_seconds(
        cells,
        seconds=args.seconds,
        reps=args.reps,
        warmup=args.warmup,
        max_processes=args.max_processes,
        memory=probes if args.memory else [],
        memory_seconds=MEMORY_SECONDS,
        plots=len(args.envs),
    )
    est["measurements"] = sum(1 for c, _, n in cells if c.skip_reason(n, args.max_processes) is None)
    return est


def duration(seconds: float) -> str:
    """``seconds`` as "42 s", "3 min 05 s" or "1 h 02 min"."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    return f"{s // 60} min {s % 60:02d} s" if s < 3600 else f"{s // 3600} h {s // 60 % 60:02d} min"


def estimate_line(args: argparse.Namespace, est: dict[str, float]) -> str:
    """The line ``fastvec bench`` prints before it starts: its expected duration, and where it comes from."""
    nominal = est["measurements"] * args.reps * args.seconds
    longer = f", {duration(est['timed'])} with RLlib's longer sample() calls" if est["timed"] > 1.05 * nominal else ""
    probes = " and memory probes" if est["memory"] else ""
    reps = f"{args.reps} rep{'s' if args.reps != 1 else ''}"
    return (
        f"fastvec bench: expected duration about {duration(est['total'])} (an estimate: "
        f"{est['measurements']:.0f} cells x {reps} x {args.seconds:g} s = {duration(nominal)} timed"
        f"{longer}, plus about {duration(est['setup'] + est['memory'])} of imports, construction, warm-ups{probes}; "
        "longer on a busy machine)"
    )


def run(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Every chosen contender on every env and num_envs (and its memory): {env_id: {"grid", "memory"}}."""
    from tqdm import tqdm

    total = sum(len(sizes_of(args, e)) * len(chosen_for(args, e)) for e in args.envs) * args.reps
    results: dict[str, dict[str, Any]] = {}
    with tqdm(total=total, desc="fastvec bench", unit="run", file=sys.stderr) as progress:
        for env_id in args.envs:
            sizes = sizes_of(args, env_id)
            chosen = chosen_for(args, env_id)
            grid: dict[int, dict[str, Cell]] = {}
            for n in sizes:
                progress.set_postfix_str(f"{env_id} num_envs={n}")
                grid[n] = measure.run_grid(
                    chosen,
                    env_id,
                    n,
                    seconds=args.seconds,
                    reps=args.reps,
                    warmup=args.warmup,
                    max_processes=args.max_processes,
                    progress=progress,
                )
            memory: dict[str, tuple[float | None, str]] = {}
            if args.memory:
                for c in chosen:
                    if c.ceiling or not any(grid[n][c.key].steps_per_s for n in sizes):
                        continue  # no vector env, or it could not run this env at all
                    progress.set_postfix_str(f"{env_id} memory of {c.key}")
                    memory[c.key] = peak_memory(c, env_id, MEMORY_NUM_ENVS, args.max_processes)
            results[env_id] = {"grid": grid, "memory": memory}
    return results


def env_report(
    args: argparse.Namespace, env_id: str, grid: dict[int, dict[str, Cell]], memory: dict[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """One env's section of results.md (with its plot written to args.out) and of results.json."""
    sizes = sorted(grid)
    chosen = chosen_for(args, env_id)
    multiagent = is_multiagent(env_id)
    frames = ATARI["frame_skip"] if is_atari(env_id) else 1
    lines = [f"## {env_id}", ""]
    if not any(cell.steps_per_s for cells in grid.values() for cell in cells.values()):
        statuses = sorted({cell.status for cells in grid.values() for cell in cells.values()})
        lines += [f"No contender ran {env_id}: {'; '.join(statuses)}.", ""]
        return lines, {
            "results": {str(n): {k: {"status": c.status} for k, c in cells.items()} for n, cells in grid.items()}
        }
    if is_atari(env_id):
        lines += [
            f"Atari: frames/s = {frames} x steps/s (frame skip {frames}); same settings on every "
            "contender: sticky actions 0.25, noop starts up to 30, 84x84 grayscale, 4 frames.",
            "",
        ]
    if is_mujoco(env_id):
        lines += [
            f"MuJoCo: gymnasium's {env_id} on every contender (EnvPool: its own {env_id}, the same frame skip, "
            "observation and episode limit), uniformly random actions within the action bounds, drawn before "
            "timing; the episodes end on the env's own terminations and at its limit. fastvec, gymnasium and "
            "EnvPool reset an env on the step after its episode ended (next-step autoreset): that step steps no "
            "physics but counts; SB3 and the same-step rows reset within the step that ended it.",
            "",
        ]
    if is_box2d(env_id):
        lines += [
            f"Box2D: gymnasium's {env_id} at its defaults on every contender (EnvPool: its own {env_id}), with "
            "uniformly random actions (within the action bounds where they are continuous), drawn before timing; "
            "the episodes end on the env's own terminations and at its limit.",
            "",
        ]
    if is_dm_control(env_id):
        lines += [
            f"dm_control: the suite's task {env_id} on every contender: fastvec and EnvPool step their own ports "
            "(EnvPool 1.2.5's native dm_control), the Python rows dm_control.suite.load(domain, task) as shimmy "
            "makes it a gymnasium env (each in a process of its own, so that the mujoco bindings never load where "
            "fastvec is measured), with uniformly random actions within the action bounds, drawn before timing; "
            "episodes end at the task's 1000-step limit. fastvec and EnvPool reset on the step after (next-step "
            "autoreset), SB3 within the step.",
            "",
        ]
    if multiagent:
        lines += [
            "Multi-agent: agent-steps/s (one step of one agent = one step); every contender steps the PettingZoo "
            "parallel env its module makes (fastvec native: its C++ port), with the same random actions drawn before "
            "timing; all its agents live until the episode ends. fastvec and RLlib reset an env on the step after "
            "its episode ended (next-step autoreset), SuperSuit within it. RLlib's sample() rows run PPO's default "
            "torch module (one policy shared by the agents) in the loop, on one torch thread and one pool thread; "
            "where observations are not Boxes (rps_v2), both runners one-hot them with RLlib's FlattenObservations.",
            "",
        ]
    if any(c.ceiling for c in chosen):
        lines += [
            "Ceiling: one fastvec env stepped alone in a C++ loop on one thread (random actions, its own "
            "terminations and resets: next-step resets, as the pool's default mode; ceiling-same-step: within "
            "the step), the same at every num_envs; its projection multiplies it by one thread per env, at most "
            "one per core: an upper bound, not a measurement.",
            "",
        ]
    cores = machine.describe()["usable_cores"]
    lines.append(report.markdown_table(chosen, sizes, grid, memory, MEMORY_NUM_ENVS, cores))
    table_lines, ratios = report.ratio_tables(chosen, sizes, grid, multiagent)
    lines += table_lines
    png = os.path.join(args.out, f"{env_id}.png")
    if report.plot(png, env_id, chosen, sizes, grid, "agent-steps" if multiagent else "env steps"):
        lines += [f"plot: {png}", ""]
    else:
        lines += ["plot: matplotlib is not installed (pip install 'fastvec[bench]')", ""]
    return lines, {
        "unit": "agent_steps_per_s" if multiagent else "env_steps_per_s",
        "results": {
            str(n): {k: report.cell_doc(c, None if multiagent else frames) for k, c in cells.items()}
            for n, cells in grid.items()
        },
        "peak_memory_mib": {k: {"num_envs": MEMORY_NUM_ENVS, "mib": m, "status": st} for k, (m, st) in memory.items()},
        **ratios,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.training:
        return training.main(args, argv)
    # Gymnasium and EnvPool warn about float64 box bounds and the like on every construction.
    warnings.filterwarnings("ignore")
    if args.table or args.plot:
        return from_recorded(args)
    started = time.perf_counter()
    est = estimate(args)
    print(estimate_line(args, est), file=sys.stderr, flush=True)
    import_packages(args.chosen)

    command = "fastvec bench " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    here = {
        **machine.describe(),
        "versions": machine.versions(),
        "fastvec_source": machine.source_state(os.path.dirname(os.path.abspath(__file__))),
    }
    monitor = machine.LoadMonitor()
    if monitor.share_before is not None and monitor.share_before > BUSY_OTHER_SHARE:
        print(
            f"WARNING: the machine is already busy: other processes use {monitor.share_before:.0%} of the CPUs",
            file=sys.stderr,
        )
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    t0 = time.perf_counter()
    with machine.BusyLoops(args.contention):
        results = run(args)
    elapsed = time.perf_counter() - t0
    load = monitor.finish()

    os.makedirs(args.out, exist_ok=True)
    unit = "env steps/s"
    if any(map(is_multiagent, args.envs)):
        unit = "agent-steps/s" if all(map(is_multiagent, args.envs)) else "env steps/s; multi-agent envs: agent-steps/s"
    lines = [
        f"# fastvec bench: {unit}, median [min-max] of {args.reps} x {args.seconds:g} s",
        "",
        *(
            [f"Shared cores: {contention_text(args.contention)} ran beside every contender (--contention).", ""]
            if args.contention
            else []
        ),
        f"command: `{command}`",
        "",
    ]
    doc: dict[str, Any] = {
        "command": command,
        "date_utc": date,
        "max_processes": args.max_processes,
        "estimated_seconds": est["total"],
        "seconds": args.seconds,
        "reps": args.reps,
        "contention": args.contention,
        "machine": here,
        "load": load,
        "wall_seconds": elapsed,
        "envs": {},
    }
    for env_id, res in results.items():
        section, doc["envs"][env_id] = env_report(args, env_id, res["grid"], res["memory"])
        lines += section
    busy = sorted({f"{env_id}:{k}@{n}" for env_id, res in results.items() for n, k in report.disturbed(res["grid"])})
    if busy:
        load["busy"] = True
        load["busy_reasons"].append(f"{len(busy)} cell(s) measured while other processes were busy")
    lines += [
        f"'(busy)': other processes took over {BUSY_OTHER_SHARE:.0%} of the CPUs during a repetition. "
        "Process-per-env contenders fork their workers (SB3 with start_method='fork').",
        report.machine_line(here),
        f"versions: {report.versions_text(here['versions'])}; checkout: {here['fastvec_source']}",
        report.load_line(load),
        f"wall time: {elapsed:.0f} s measuring, {time.perf_counter() - started:.0f} s in all (estimated before: "
        f"{est['total']:.0f} s)",
    ]
    if load["busy"]:
        lines.append("WARNING: BUSY MACHINE, results are not trustworthy: " + "; ".join(load["busy_reasons"]))
    report.write_run(args.out, "results", "\n".join(lines) + "\n", doc, args.json, also=" and the plots")
    return 0


def from_recorded(args: argparse.Namespace) -> int:
    """--table and --plot: a recorded run's markdown for the docs, its plots again."""
    for path in (args.table, args.plot):
        if path is None:
            continue
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise SystemExit(f"fastvec bench: cannot read {path}: {e}") from None
        if not isinstance(doc, dict) or "envs" not in doc or "machine" not in doc:
            raise SystemExit(f"fastvec bench: {path} is not the JSON of a fastvec bench run (results.json)")
        if path == args.table:
            print(report.docs_tables(doc), end="")
        else:
            os.makedirs(args.out, exist_ok=True)
            written = report.plot_recorded(doc, args.out)
            print("written: " + (", ".join(written) or "nothing (matplotlib is not installed)"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
