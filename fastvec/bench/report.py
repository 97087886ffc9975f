"""What a benchmark prints and writes: markdown tables, ratios between contenders, JSON, plots, and the
lines that say which machine and load the numbers come from."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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


# A plot's lines: one colour per library (fastvec's own pools in blues), the mode in the line (sync solid, async
# dashed, same-step autoreset dotted, both dash-dotted) and, within a library and mode, one marker per contender in
# the table's order: every contender its own line, and a reader finds a library by its colour.
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


def line_styles(keys: list[str]) -> dict[str, dict[str, str]]:
    """matplotlib's color, linestyle and marker for each contender key's line, distinct within ``keys``."""
    styles: dict[str, dict[str, str]] = {}
    used: dict[tuple[str, str], int] = {}
    for key in keys:
        name = key.removeprefix("ma-")
        colour = next((c for lib, c in _LIBRARY_COLOURS.items() if name.startswith(lib)), "#7f7f7f")
        parts = name.split("-")
        mode = ("async" in parts, "same" in parts)
        linestyle = {(False, False): "-", (True, False): "--", (False, True): ":", (True, True): "-."}[mode]
        n = used[colour, linestyle] = used.get((colour, linestyle), -1) + 1
        styles[key] = {"color": colour, "linestyle": linestyle, "marker": _MARKERS[n % len(_MARKERS)]}
    return styles


def plot(
    path: str,
    env_id: str,
    contenders: list[Contender],
    sizes: list[int],
    grid: dict[int, dict[str, Cell]],
    unit: str = "env steps",
) -> bool:
    """``unit``/s against num_envs per contender, log-log. False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(10, 5))
    styles = line_styles([c.key for c in contenders])
    for c in contenders:
        medians = {n: m for n in sizes if (m := grid[n][c.key].median)}
        if medians:
            style = styles[c.key]
            ax.plot(
                list(medians),
                list(medians.values()),
                label=c.label,
                color=style["color"],
                linestyle=style["linestyle"],
                marker=style["marker"],
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("num_envs")
    ax.set_ylabel(f"{unit} / s (median)")
    ax.set_title(f"{env_id}: throughput")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)  # beside, not over
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True
