"""What a benchmark prints and writes: markdown tables, ratios between contenders, JSON, plots, and the
lines that say which machine and load the numbers come from."""

from __future__ import annotations

import json
import os
import statistics
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastvec.bench.machine import BUSY_OTHER_SHARE
from fastvec.bench.measure import Cell

if TYPE_CHECKING:
    from fastvec.bench.contenders import Contender

ROUND_TRIP_KEYS = ("fastvec", "envpool-t1", "envpool-t2")


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


def markdown_table(
    contenders: list[Contender],
    sizes: list[int],
    grid: dict[int, dict[str, Cell]],
    memory: dict[str, tuple[float | None, str]] | None = None,
    memory_envs: int | None = None,
    cores: int | None = None,
) -> str:
    """One row per contender, one column per num_envs; and peak memory at ``memory_envs`` when given.

    The one-loop ceiling (one env in a C++ loop on one thread) is followed by its projection onto ``cores``
    cores when given: what min(num_envs, cores) threads would step at that rate each, which no pool beats.
    """
    mem_head = f" peak memory @{memory_envs} envs |" if memory else ""
    head = "| contender | " + " | ".join(f"num_envs={n}" for n in sizes) + " |" + mem_head
    rule = "|---|" + "---:|" * len(sizes) + ("---:|" if memory else "")
    rows = [head, rule]
    for c in contenders:
        row = f"| {c.label} | " + " | ".join(format_cell(grid[n][c.key]) for n in sizes) + " |"
        if memory:
            mib, status = memory.get(c.key, (None, "-"))
            row += f" {mib:.0f} MiB |" if mib is not None else f" {status} |"
        rows.append(row)
        if c.ceiling == 1 and cores:
            cells = []
            for n in sizes:
                m, k = grid[n][c.key].median, projection_threads(n, cores)
                cells.append(f"{si(m * k)} (x{k})" if m else "-")
            rows.append(
                f"| ceiling x min(num_envs, {cores} cores): projection, not measured | "
                + " | ".join(cells)
                + " |"
                + (" - |" if memory else "")
            )
    return "\n".join(rows)


def projection_threads(num_envs: int, cores: int) -> int:
    """How many threads the ceiling is projected onto at num_envs: one per env, at most one per core."""
    return max(1, min(num_envs, cores))


def ratios_to(
    grid: dict[int, dict[str, Cell]], base_key: str, keys: list[str] | None = None
) -> dict[str, dict[str, float]]:
    """Median steps/s of each contender (of ``keys``, default all) over ``base_key``'s, per num_envs where both ran."""
    out: dict[str, dict[str, float]] = {}
    for n, cells in grid.items():
        base = cells.get(base_key)
        if base is None or not base.median:
            continue
        for key, cell in cells.items():
            if cell.median and (keys is None or key in keys):
                out.setdefault(key, {})[str(n)] = cell.median / base.median
    return out


def _times(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def ratio_table(
    contenders: list[Contender],
    sizes: list[int],
    grid: dict[int, dict[str, Cell]],
    base_key: str = "sb3-subproc",
    base_label: str = "SB3 SubprocVecEnv",
) -> str:
    """Each of ``contenders`` over ``base_key`` (named ``base_label``), per num_envs."""
    r = ratios_to(grid, base_key, [c.key for c in contenders])
    if not r:
        return f"Ratio to {base_label}: n/a ({base_label} did not run)."
    head = f"| x {base_label} | " + " | ".join(f"num_envs={n}" for n in sizes) + " |"
    rows = [head, "|---|" + "---:|" * len(sizes)]
    for c in contenders:
        if c.key in r:
            rows.append(
                f"| {c.label} | "
                + " | ".join(_times(r[c.key][str(n)]) if str(n) in r[c.key] else "-" for n in sizes)
                + " |"
            )
    return "\n".join(rows)


def spread(a: Cell, b: Cell) -> tuple[float, float, float]:
    """a over b: median over median, and the worst and best case (min over max, max over min)."""
    a_s, b_s = a.steps_per_s, b.steps_per_s
    return statistics.median(a_s) / statistics.median(b_s), min(a_s) / max(b_s), max(a_s) / min(b_s)


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
    """The key among ``keys`` whose cell has the highest median, and that cell (None if none ran)."""
    measured = [(k, grid[k]) for k in keys if k in grid and grid[k].steps_per_s]
    return max(measured, key=lambda kc: kc[1].median or 0.0) if measured else None


def ratio(name: str, target: float, grid: dict[int, dict[str, Cell]], num_envs: int, other_keys: list[str]) -> Ratio:
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
    r.value, r.low, r.high = spread(fv, oc)
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


def disturbed(grid: dict[int, dict[str, Cell]]) -> list[tuple[int, str]]:
    """(num_envs, key) of every cell measured while other processes were busy."""
    return [(n, k) for n, cells in grid.items() for k, c in cells.items() if c.disturbed]


def cell_doc(cell: Cell, frame_skip: float | None = None) -> dict[str, Any]:
    """One cell as JSON; with ``frame_skip``, also its median in frames/s."""
    doc: dict[str, Any] = {"status": cell.status, "median_steps_per_s": cell.median}
    if frame_skip is not None:
        doc["median_frames_per_s"] = cell.median * frame_skip if cell.median else None
    doc.update(steps_per_s=cell.steps_per_s, us_per_call=cell.us_per_call, other_cpu_share=cell.other_cpu)
    doc["construct_seconds"] = cell.construct_seconds
    return doc


def machine_line(machine: dict[str, Any]) -> str:
    """The line "machine: CPU, N cores (M usable), platform", from :func:`fastvec.bench.machine.describe`."""
    return (
        f"machine: {machine['cpu']}, {machine['cores']} cores ({machine['usable_cores']} usable), {machine['platform']}"
    )


def versions_text(versions: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in versions.items())


def load_line(load: dict[str, Any]) -> str:
    """The load averages of :meth:`fastvec.bench.machine.LoadMonitor.finish`, before and after."""
    return (
        "load average before: "
        + " ".join(f"{x:.2f}" for x in load["load_before"])
        + "; after: "
        + " ".join(f"{x:.2f}" for x in load["load_after"])
    )


# -- the ratio tables ----------------------------------------------------------

# The tables' baselines: what users switch from. Multi-agent envs: SuperSuit, and for RLlib's sample() rows, RLlib's
# own runner.
BASELINE = ("sb3-subproc", "SB3 SubprocVecEnv")
MULTIAGENT_BASELINE = ("ma-supersuit", "SuperSuit")
MULTIAGENT_SAMPLERS = ["ma-rllib-default", "ma-rllib-fastvec", "ma-rllib-fastvec-python"]


def ratio_tables(
    contenders: list[Contender], sizes: list[int], grid: dict[int, dict[str, Cell]], multiagent: bool
) -> tuple[list[str], dict[str, dict[str, dict[str, float]]]]:
    """The ratio tables under an env's table (markdown lines) and their JSON."""
    if not multiagent:
        key, label = BASELINE
        table = ratio_table(contenders, sizes, grid, key, label)
        return ["", table, ""], {"ratio_to_sb3_subproc": ratios_to(grid, key)}
    key, label = MULTIAGENT_BASELINE
    lines = ["", ratio_table(contenders, sizes, grid, key, label), ""]
    samplers = [c for c in contenders if c.key in MULTIAGENT_SAMPLERS]
    if samplers:
        lines += [ratio_table(samplers, sizes, grid, "ma-rllib-default", "RLlib MultiAgentEnvRunner"), ""]
    return lines, {
        "ratio_to_supersuit": ratios_to(grid, key),
        "ratio_to_rllib_multiagent_env_runner": ratios_to(grid, "ma-rllib-default", MULTIAGENT_SAMPLERS),
    }


# -- plots ---------------------------------------------------------------------

# A plot's lines: one colour per library (fastvec's own pools in blues), the mode in the line (sync solid, async
# dashed, same-step autoreset dotted, both dash-dotted) and, within a library and mode, one marker per contender in
# the table's order: every contender its own line, and a reader finds a library by its colour. fastvec's own lines
# (its pools, and RLlib or the multi-agent rows running on them) are thicker and drawn over the others.
_LIBRARY_COLOURS = {  # longest prefix first where one prefix holds another
    "fastvec-python": "#6baed6",
    "fastvec-envpool": "#08306b",
    "fastvec": "#1f77b4",
    "envpool": "#ff7f0e",
    "gym": "#2ca02c",
    "sb3": "#d62728",
    "ale-py": "#9467bd",
    "rllib": "#8c564b",
    "ray": "#e377c2",
    "supersuit": "#bcbd22",
    "agilerl": "#17becf",
    "ceiling": "#000000",
}
_MARKERS = "osv^DP*Xh"
# When the tables' baseline did not run, the plot's ratio view divides by the first of these that did.
_FALLBACK_BASELINES = ("gym-async", "sb3-dummy", "gym-sync", "envpool-t1", "gym-numpy", "ma-agilerl", "ma-rllib-vector")


def is_fastvec(key: str) -> bool:
    """Whether a contender's envs are stepped by fastvec (its pools, or RLlib's runners over them)."""
    return "fastvec" in key.split("-")


def line_styles(keys: list[str]) -> dict[str, dict[str, Any]]:
    """matplotlib's color, linestyle, marker, linewidth and zorder for each contender key's line, distinct
    within ``keys``."""
    styles: dict[str, dict[str, Any]] = {}
    used: dict[tuple[str, str], int] = {}
    for key in keys:
        name = key.removeprefix("ma-")
        colour = next((c for lib, c in _LIBRARY_COLOURS.items() if name.startswith(lib)), "#7f7f7f")
        parts = name.split("-")
        mode = ("async" in parts, "same" in parts)
        linestyle = {(False, False): "-", (True, False): "--", (False, True): ":", (True, True): "-."}[mode]
        n = used[colour, linestyle] = used.get((colour, linestyle), -1) + 1
        ours = is_fastvec(key)
        styles[key] = {
            "color": colour,
            "linestyle": linestyle,
            "marker": _MARKERS[n % len(_MARKERS)],
            "linewidth": 2.8 if ours else 1.2,
            "zorder": 3 if ours else 2,
        }
    return styles


def plot_baseline(keys: list[str], grid: dict[int, dict[str, Cell]], multiagent: bool) -> str | None:
    """The key the ratio view divides by: the tables' baseline if it ran at some num_envs, else a fallback."""
    ran = [k for k in keys if any(cells[k].median for cells in grid.values() if k in cells)]
    tables = MULTIAGENT_BASELINE[0] if multiagent else BASELINE[0]
    return next((k for k in (tables, *_FALLBACK_BASELINES) if k in ran), None)


def figure(
    env_id: str,
    contenders: list[Contender],
    sizes: list[int],
    grid: dict[int, dict[str, Cell]],
    unit: str = "env steps",
) -> Any:
    """A matplotlib Figure: ``unit``/s against num_envs per contender, log-log (left), and each over the baseline
    contender at the same num_envs (right); busy cells hollow. None when matplotlib is missing."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.ticker import FuncFormatter, LogLocator
    except ImportError:
        return None
    keys = [c.key for c in contenders]
    base_key = plot_baseline(keys, grid, multiagent=all(k.startswith("ma-") for k in keys))
    fig = Figure(figsize=(15, 5.5))
    ax, rax = fig.subplots(1, 2)
    styles = line_styles(keys)
    any_busy = False
    for c in contenders:
        style = styles[c.key]
        views = [(ax, {n: grid[n][c.key].median for n in sizes}, {n for n in sizes if grid[n][c.key].disturbed})]
        if base_key is not None:
            ratios: dict[int, float | None] = {}
            for n, m in views[0][1].items():
                b = grid[n][base_key].median
                ratios[n] = m / b if m and b else None
            busy = {n for n in sizes if grid[n][c.key].disturbed or grid[n][base_key].disturbed}
            views.append((rax, ratios, busy))
        for a, values, busy in views:
            points = {n: v for n, v in values.items() if v}
            if not points:
                continue
            line_kw = {k: style[k] for k in ("color", "linestyle", "marker", "linewidth", "zorder")}
            a.plot(list(points), list(points.values()), label=c.label if a is ax else None, gid=c.key, **line_kw)
            hollow = [n for n in points if n in busy]
            if hollow:
                any_busy = True
                a.plot(
                    hollow,
                    [points[n] for n in hollow],
                    linestyle="none",
                    marker=style["marker"],
                    markerfacecolor="white",
                    markeredgecolor=style["color"],
                    markersize=8,
                    zorder=style["zorder"] + 1,
                    gid=f"{c.key} busy",
                )
    for a, label in ((ax, si), (rax, _times)):
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xticks(sizes, [str(n) for n in sizes])
        a.minorticks_off()
        # 1-2-5 ticks, labelled as the tables write numbers: a decade or less still gets a few labels.
        a.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        a.yaxis.set_major_formatter(FuncFormatter(lambda v, _, label=label: label(v)))
        a.set_xlabel("num_envs")
        a.grid(True, which="both", alpha=0.3)
    ax.set_ylabel(f"{unit} / s (median)")
    ax.set_title(f"{env_id}: throughput")
    if base_key is not None:
        short = dict([BASELINE, MULTIAGENT_BASELINE])  # the tables' names for their baselines
        base_label = short.get(base_key) or next(c.label for c in contenders if c.key == base_key)
        rax.axhline(1.0, color="grey", linewidth=0.8)
        rax.set_ylabel(f"x {base_label} (same num_envs)")
        rax.set_title(f"{env_id}: over {base_label}")
    else:
        rax.set_title(f"{env_id}: no baseline ran, no ratios")
    handles, labels = ax.get_legend_handles_labels()
    notes = [Line2D([], [], color="grey", linewidth=2.8, label="thick: fastvec's own")]
    if any_busy:
        notes.append(
            Line2D(
                [],
                [],
                color="grey",
                linestyle="none",
                marker="o",
                markerfacecolor="white",
                label=f"hollow: busy, other processes used > {BUSY_OTHER_SHARE:.0%} of the CPUs",
            )
        )
    # Beside the plots, not over the lines.
    fig.legend(
        handles + notes,
        labels + [h.get_label() for h in notes],
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.0, 0.95),
        borderaxespad=0.0,
    )
    fig.tight_layout()
    return fig


def plot(
    path: str,
    env_id: str,
    contenders: list[Contender],
    sizes: list[int],
    grid: dict[int, dict[str, Cell]],
    unit: str = "env steps",
) -> bool:
    """Writes :func:`figure` as a PNG to ``path``. False when matplotlib is missing."""
    fig = figure(env_id, contenders, sizes, grid, unit)
    if fig is None:
        return False
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return True


# -- a recorded run (fastvec bench --json) -------------------------------------


def cell_from_doc(doc: dict[str, Any]) -> Cell:
    """A cell back from :func:`cell_doc`'s JSON."""
    return Cell(
        status=doc["status"],
        steps_per_s=list(doc.get("steps_per_s") or []),
        us_per_call=list(doc.get("us_per_call") or []),
        other_cpu=list(doc.get("other_cpu_share") or []),
        construct_seconds=doc.get("construct_seconds"),
    )


def recorded_env(env_doc: dict[str, Any]) -> tuple[list[Contender], list[int], dict[int, dict[str, Cell]]]:
    """One env of a recorded run: its contenders (in the table's order), sizes and cells. A key this fastvec no
    longer has keeps its key as its label."""
    from fastvec.bench.contenders import CONTENDERS, Contender

    grid = {int(n): {k: cell_from_doc(c) for k, c in cells.items()} for n, cells in env_doc["results"].items()}
    sizes = sorted(grid)
    keys = list(dict.fromkeys(k for n in sizes for k in grid[n]))
    known = {c.key: c for c in CONTENDERS}

    def unknown(env_id: str, num_envs: int) -> Any:
        raise NotImplementedError("a recorded contender")

    contenders = [known.get(k) or Contender(k, k, "", unknown) for k in keys]
    for cells in grid.values():
        for k in keys:
            cells.setdefault(k, Cell(status="-"))
    return contenders, sizes, grid


def plot_recorded(doc: dict[str, Any], out: str) -> list[str]:
    """One PNG per env of a recorded run into the directory ``out``; the paths written (none without matplotlib)."""
    paths = []
    for env_id, env_doc in doc["envs"].items():
        contenders, sizes, grid = recorded_env(env_doc)
        if not any(c.median for cells in grid.values() for c in cells.values()):
            continue
        unit = "agent-steps" if env_doc.get("unit") == "agent_steps_per_s" else "env steps"
        path = os.path.join(out, f"{env_id}.png")
        if plot(path, env_id, contenders, sizes, grid, unit):
            paths.append(path)
    return paths


def docs_tables(doc: dict[str, Any]) -> str:
    """The markdown that docs/benchmarks.md shows for a recorded run: a paragraph saying which command ran
    when, on which machine and software, how long and how loaded; then each env's table and ratio tables."""
    here = doc["machine"]
    versions = {k: v for k, v in here.get("versions", {}).items() if v != "not installed"}
    date = doc.get("date_utc")
    when = f"run on {date[:10]} at {date[11:16]} UTC" if date else "run at a date not recorded"
    cells = [c for e in doc["envs"].values() for cs in e["results"].values() for c in cs.values()]
    busy = sum(1 for c in cells if cell_from_doc(c).disturbed)
    disturbed = (
        "no cell disturbed by other processes"
        if not busy
        else f"{busy} cell(s) marked (busy): other processes took over {BUSY_OTHER_SHARE:.0%} of the CPUs, "
        "indicative only"
    )
    units = {e.get("unit", "env_steps_per_s") for e in doc["envs"].values()}
    unit = (
        "agent-steps per second (one step of one agent = one step)"
        if units == {"agent_steps_per_s"}
        else "env steps per second (one step of one env = one step; multi-agent envs: agent-steps)"
        if "agent_steps_per_s" in units
        else "env steps per second (one step of one env = one step)"
    )
    reps = (
        f"median [min-max] of {doc['reps']} interleaved repetitions of {doc['seconds']:g} s each"
        if doc["reps"] > 1
        else f"one measurement of {doc['seconds']:g} s each"
    )
    load = doc.get("load", {})
    shares = [load.get("other_cpu_share_before"), load.get("other_cpu_share")]
    loaded = (
        f", other processes used {shares[0]:.0%} of the CPUs before and {shares[1]:.0%} during"
        if None not in shares
        else ""
    )
    memory_envs = {m["num_envs"] for e in doc["envs"].values() for m in e.get("peak_memory_mib", {}).values()}
    max_processes = doc.get("max_processes")
    head = (
        f"The output of `{doc['command']}`, {when} on {here['cpu']}, {here['cores']} cores "
        f"({here['usable_cores']} usable), {here['platform']} ({versions_text(versions)}), "
        f"{doc['wall_seconds']:.0f} s, {disturbed}{loaded}: {unit}, {reps}; async runs use `batch_size = num_envs / 2`"
        + (f"; process-per-env contenders stop at {max_processes} envs" if max_processes else "")
        + (
            f"; peak memory is the RSS summed over every process a contender runs, at {min(memory_envs)} envs"
            if memory_envs
            else ""
        )
        + (f"; beside {doc['contention']} CPU-bound busy loop(s) (--contention)" if doc.get("contention") else "")
        + "."
    )
    lines = [head, ""]
    for env_id, env_doc in doc["envs"].items():
        contenders, sizes, grid = recorded_env(env_doc)
        multiagent = env_doc.get("unit") == "agent_steps_per_s"
        lines += [f"{env_id}:", ""]
        if not any(c.median for cells in grid.values() for c in cells.values()):
            lines += ["No contender ran it.", ""]
            continue
        probes: dict[str, dict[str, Any]] = env_doc.get("peak_memory_mib", {})
        memory = {k: (m["mib"], m["status"]) for k, m in probes.items()}
        mem_envs = next((m["num_envs"] for m in probes.values()), None)
        lines.append(markdown_table(contenders, sizes, grid, memory, mem_envs, here.get("usable_cores")))
        lines += ratio_tables(contenders, sizes, grid, multiagent)[0]
    return "\n".join(lines).rstrip("\n") + "\n"


def write_run(out: str, name: str, text: str, doc: dict[str, Any], as_json: bool, also: str = "") -> None:
    """A run's markdown and JSON written into ``out`` as NAME.md and NAME.json; on stdout the JSON (``as_json``)
    or the markdown, and on stderr what was written (``also``: what else the run wrote there)."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(doc, f, indent=2)
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        print(text, end="")
        print(f"written: {os.path.join(out, name + '.md')}, {name}.json{also}", file=sys.stderr)
