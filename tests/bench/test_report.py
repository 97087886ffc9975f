"""What `fastvec bench` makes of a recorded run (data/bench-cartpole.json, a real run's --json output, and its
results.md): the plots' two views, and the markdown of docs/benchmarks.md. Structure, never pixels or speed."""

from __future__ import annotations

import copy
import json
import statistics
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import pytest

from fastvec.bench import report
from fastvec.bench.measure import Cell

DATA = Path(__file__).parent / "data"
RECORDED = json.loads((DATA / "bench-cartpole.json").read_text())
CARTPOLE = RECORDED["envs"]["CartPole-v1"]


def recorded(doc=RECORDED):
    return report.recorded_env(doc["envs"]["CartPole-v1"])


def lines_by_gid(ax):
    return {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}


def median(key, n):
    return statistics.median(CARTPOLE["results"][str(n)][key]["steps_per_s"])


def test_a_recorded_run_comes_back_as_its_cells():
    contenders, sizes, grid = recorded()
    assert sizes == [1, 8, 64]
    assert [c.key for c in contenders] == [
        "fastvec",
        "fastvec-async",
        "gym-numpy",
        "sb3-dummy",
        "sb3-subproc",
        "envpool-t1",
        "ceiling",
    ]
    assert contenders[0].label == "fastvec sync (default threads)"
    na = grid[1]["fastvec-async"]
    assert na.status == "n/a (batch_size = num_envs/2)" and na.median is None
    assert grid[64]["fastvec"].median == median("fastvec", 64)
    assert grid[8]["sb3-subproc"].other_cpu == CARTPOLE["results"]["8"]["sb3-subproc"]["other_cpu_share"]


def test_the_plot_has_the_absolute_and_the_ratio_to_baseline_view():
    contenders, sizes, grid = recorded()
    fig = report.figure("CartPole-v1", contenders, sizes, grid)
    absolute, ratio = fig.axes
    assert "env steps / s" in absolute.get_ylabel()
    assert ratio.get_ylabel() == "x SB3 SubprocVecEnv (same num_envs)"  # the tables' baseline
    lines, ratios = lines_by_gid(absolute), lines_by_gid(ratio)
    ran = [c.key for c in contenders]  # every recorded contender ran at some num_envs
    assert set(ran) <= set(lines) and set(ran) <= set(ratios)
    assert list(lines["fastvec"].get_xdata()) == sizes
    assert list(lines["fastvec"].get_ydata()) == [median("fastvec", n) for n in sizes]
    assert list(lines["fastvec-async"].get_xdata()) == [8, 64]  # n/a at 1 env: no point, not a zero
    assert list(ratios["fastvec"].get_ydata()) == pytest.approx(
        [median("fastvec", n) / median("sb3-subproc", n) for n in sizes]
    )
    assert list(ratios["sb3-subproc"].get_ydata()) == [1.0, 1.0, 1.0]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert [c.label for c in contenders] == legend[: len(contenders)]


def test_fastvecs_lines_are_thicker_and_drawn_over_the_others():
    contenders, sizes, grid = recorded()
    lines = lines_by_gid(report.figure("CartPole-v1", contenders, sizes, grid).axes[0])
    ours, theirs = ("fastvec", "fastvec-async"), ("gym-numpy", "sb3-dummy", "sb3-subproc", "envpool-t1", "ceiling")
    assert min(lines[k].get_linewidth() for k in ours) > max(lines[k].get_linewidth() for k in theirs)
    assert min(lines[k].get_zorder() for k in ours) > max(lines[k].get_zorder() for k in theirs)
    assert report.is_fastvec("rllib-fastvec") and report.is_fastvec("ma-fastvec-python")
    assert not report.is_fastvec("rllib-default") and not report.is_fastvec("ceiling")


def test_busy_cells_are_hollow_and_the_legend_says_what_that_means():
    doc = copy.deepcopy(RECORDED)
    for n, cells in doc["envs"]["CartPole-v1"]["results"].items():
        for key, cell in cells.items():
            busy = (n, key) in {("8", "fastvec"), ("64", "gym-numpy")}
            cell["other_cpu_share"] = [0.9 if busy else 0.01 for _ in cell["other_cpu_share"]]
    contenders, sizes, grid = recorded(doc)
    fig = report.figure("CartPole-v1", contenders, sizes, grid)
    absolute, ratio = fig.axes
    hollow = {gid: list(line.get_xdata()) for gid, line in lines_by_gid(absolute).items() if gid.endswith(" busy")}
    assert hollow == {"fastvec busy": [8], "gym-numpy busy": [64]}
    assert lines_by_gid(absolute)["fastvec busy"].get_markerfacecolor() == "white"
    # A ratio is busy where either of its two cells is.
    assert {gid for gid in lines_by_gid(ratio) if gid.endswith(" busy")} == {"fastvec busy", "gym-numpy busy"}
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("hollow: busy, other processes used > 15%") for t in legend)

    for cells in doc["envs"]["CartPole-v1"]["results"].values():
        for cell in cells.values():
            cell["other_cpu_share"] = [0.01 for _ in cell["other_cpu_share"]]
    fig = report.figure("CartPole-v1", *recorded(doc))
    assert not any(gid.endswith(" busy") for gid in lines_by_gid(fig.axes[0]))
    assert not any(t.get_text().startswith("hollow") for t in fig.legends[0].get_texts())


def test_without_the_tables_baseline_the_ratio_view_says_which_it_divides_by():
    contenders, sizes, grid = recorded()
    kept = [c for c in contenders if c.key != "sb3-subproc"]
    for cells in grid.values():
        del cells["sb3-subproc"]
    fig = report.figure("CartPole-v1", kept, sizes, grid)
    assert fig.axes[1].get_ylabel() == "x SB3 DummyVecEnv (same num_envs)"
    only_fastvec = [c for c in kept if c.key == "fastvec"]
    fig = report.figure("CartPole-v1", only_fastvec, sizes, {n: {"fastvec": grid[n]["fastvec"]} for n in sizes})
    assert len(fig.axes) == 2 and "no baseline ran" in fig.axes[1].get_title()


def test_plotting_a_recorded_run_writes_a_png_of_both_views(tmp_path):
    assert report.plot_recorded(RECORDED, str(tmp_path)) == [str(tmp_path / "CartPole-v1.png")]
    height, width = matplotlib.image.imread(tmp_path / "CartPole-v1.png").shape[:2]
    assert width > 2 * height  # two views side by side, the legend beside them


def test_the_docs_table_of_a_recorded_run(tmp_path):
    text = report.docs_tables(RECORDED)
    head = text.splitlines()[0]
    assert head.startswith(f"The output of `{RECORDED['command']}`, run on ")
    date = RECORDED["date_utc"]
    assert f"run on {date[:10]} at {date[11:16]} UTC on Intel(R) Xeon(R) Processor, 2 cores (2 usable)" in head
    assert "gymnasium 1.2.2" in head and "not installed" not in head
    assert "median [min-max] of 2 interleaved repetitions of 0.2 s each" in head
    assert "20 cell(s) marked (busy)" in head and "peak memory is the RSS summed" in head
    assert "\nCartPole-v1:\n" in text
    # The same tables, cell for cell, as the run itself printed from its live measurements.
    printed = (DATA / "bench-cartpole.md").read_text()
    tables = [line for line in printed.splitlines() if line.startswith("|")]
    assert [line for line in text.splitlines() if line.startswith("|")] == tables
    assert "| contender | num_envs=1 | num_envs=8 | num_envs=64 | peak memory @16 envs |" in tables


def test_a_cell_survives_the_json_round_trip():
    cell = Cell(steps_per_s=[1.0, 3.0], us_per_call=[5.0, 6.0], other_cpu=[0.5, None], construct_seconds=0.25)
    back = report.cell_from_doc(json.loads(json.dumps(report.cell_doc(cell))))
    assert back == cell and back.disturbed


def run_cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "fastvec", "bench", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_bench_table_and_plot_options_run_nothing_and_read_a_recorded_run(tmp_path):
    table = run_cli("--table", str(DATA / "bench-cartpole.json"), cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert table.stdout == report.docs_tables(RECORDED)
    plot = run_cli("--plot", str(DATA / "bench-cartpole.json"), "--out", str(tmp_path / "plots"), cwd=tmp_path)
    assert plot.returncode == 0, plot.stderr
    assert (tmp_path / "plots" / "CartPole-v1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "other.json").write_text('{"a": 1}')
    bad = run_cli("--table", str(tmp_path / "other.json"), cwd=tmp_path)
    assert bad.returncode != 0 and "is not the JSON of a fastvec bench run" in bad.stderr
    missing = run_cli("--table", str(tmp_path / "missing.json"), cwd=tmp_path)
    assert missing.returncode != 0 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr
