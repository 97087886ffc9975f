"""The fastvec command end to end, in a tiny configuration: structure, never speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fastvec
from fastvec import _core

ROOT = Path(__file__).resolve().parents[1]


def fastvec_cli(*args: str, cwd) -> subprocess.CompletedProcess:
    # Run from a scratch directory, so that the installed fastvec is imported, not the source tree.
    return subprocess.run(
        [sys.executable, "-m", "fastvec", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.mark.timeout(300)
def test_bench_writes_table_json_and_plot(tmp_path):
    out = tmp_path / "results"
    run = fastvec_cli(
        "bench",
        "--quick",
        "--envs",
        "CartPole-v1",
        "Pong-v5",
        "--num-envs",
        "2",
        "4",
        "--seconds",
        "0.05",
        "--contenders",
        "fastvec",
        "fastvec-async",
        "gym-numpy",
        "gym-sync",
        "--memory",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    table = run.stdout
    assert "## CartPole-v1" in table and "## Pong-v5" in table
    assert "| x SB3 SubprocVecEnv |" not in table  # SB3 was not selected: no ratio column to show
    assert "| contender | num_envs=2 | num_envs=4 | peak memory @16 envs |" in table
    for label in (
        "fastvec sync (default threads)",
        "fastvec async (default threads)",
        "gymnasium vector_entry_point (numpy)",
        "gymnasium SyncVectorEnv",
    ):
        assert f"| {label} |" in table
    doc = json.loads((out / "results.json").read_text())
    cart = doc["envs"]["CartPole-v1"]["results"]
    assert set(cart) == {"2", "4"}
    for n in ("2", "4"):
        for key in ("fastvec", "fastvec-async", "gym-numpy", "gym-sync"):
            cell = cart[n][key]
            assert cell["status"] == "ok" and len(cell["steps_per_s"]) == 1 and cell["median_steps_per_s"] > 0
    memory = doc["envs"]["CartPole-v1"]["peak_memory_mib"]
    assert memory["fastvec"]["status"] == "ok" and memory["fastvec"]["mib"] > 1
    pong = doc["envs"]["Pong-v5"]["results"]["2"]
    if _core.has_atari:
        assert pong["fastvec"]["status"] == "ok" and pong["fastvec"]["median_steps_per_s"] > 0
        assert "Atari: frames/s = 4 x steps/s" in table
    else:  # built with FASTVEC_ATARI=OFF
        assert pong["fastvec"]["status"] == "not available in this build"
    assert doc["machine"]["cores"] >= 1 and "load_before" in doc["load"]
    png = out / "CartPole-v1.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "results.md").read_text() == table


def test_bench_measures_memory_when_run_in_the_source_checkout(tmp_path):
    """The README runs `fastvec bench` in the checkout it installed from. The memory probe's fresh
    interpreter imported the checkout's fastvec/ (no built extension) there: every memory cell failed."""
    script = Path(sys.executable).with_name("fastvec")
    run = subprocess.run(
        [
            str(script),
            "bench",
            "--quick",
            "--num-envs",
            "2",
            "--seconds",
            "0.05",
            "--contenders",
            "fastvec",
            "--memory",
            "--out",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    memory = json.loads(run.stdout)["envs"]["CartPole-v1"]["peak_memory_mib"]["fastvec"]
    assert memory["status"] == "ok" and memory["mib"] > 1, memory


def test_bench_json_on_stdout(tmp_path):
    run = fastvec_cli(
        "bench",
        "--quick",
        "--num-envs",
        "2",
        "--seconds",
        "0.05",
        "--contenders",
        "fastvec",
        "--out",
        str(tmp_path),
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["envs"]["CartPole-v1"]["results"]["2"]["fastvec"]["status"] == "ok"


def test_bench_contention_runs_a_busy_loop_beside_the_contenders(tmp_path):
    run = fastvec_cli(
        "bench",
        "--quick",
        "--num-envs",
        "2",
        "--seconds",
        "0.3",
        "--contenders",
        "fastvec",
        "--contention",
        "--out",
        str(tmp_path),
        "--json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["contention"] == 1
    assert doc["envs"]["CartPole-v1"]["results"]["2"]["fastvec"]["status"] == "ok"
    # The busy loop is the run's own load, not another process's: the run is not reported busy for it.
    assert (tmp_path / "results.md").read_text().count("one CPU-bound process (a busy loop) ran beside") == 1


def test_busy_loops_take_a_core_while_they_run_and_are_gone_after():
    import time

    from fastvec.bench.machine import BusyLoops, CpuShare, process_tree

    def user_ticks(pid: int) -> int:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[11])

    with BusyLoops(1) as loops:
        (loop,) = loops.pids  # (the test process may have other children: forkservers, Ray)
        assert loop in [pid for pid, _ in process_tree(os.getpid())]
        share, ticks = CpuShare(), user_ticks(loop)
        time.sleep(0.5)
        assert user_ticks(loop) - ticks > 0.2 * os.sysconf("SC_CLK_TCK")  # it computes, on a core of its own
        assert (share.other() or 0) < 0.25  # and counts as the run's own CPU, not as a busy machine
    assert not os.path.exists(f"/proc/{loop}")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bench", "--contenders", "fastvec", "subprocvecenv"], "unknown contender(s) subprocvecenv"),
        (["bench", "--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["bench", "--seconds", "0"], "--seconds must be > 0"),
        (["bench", "--contention", "-1"], "--contention >= 0"),
        (["bench", "--num-envs", "x"], "invalid int value"),
        (["benchmark"], "unknown command 'benchmark'"),
    ],
)
def test_bad_arguments_give_clear_errors(tmp_path, args, message):
    run = fastvec_cli(*args, cwd=tmp_path)
    assert run.returncode == 2
    assert message in run.stderr


def test_list_prints_the_native_envs(tmp_path):
    run = fastvec_cli("list", cwd=tmp_path)
    assert run.returncode == 0
    for env_id in fastvec.list_envs():
        assert f"  {env_id}\n" in run.stdout
    assert "_Debug-v0" not in run.stdout
    assert "Python-env pool" in run.stdout


def test_a_contender_whose_parent_package_is_missing_is_not_installed():
    """fastvec bench without Ray: the RLlib contenders' package is 'ray.rllib', whose find_spec
    raises instead of returning None; the bench crashed before its first measurement."""
    from fastvec.bench.machine import installed

    assert not installed("no_such_package_fastvec.sub")
    assert not installed("no_such_package_fastvec")
    assert installed("numpy.linalg")


def test_running_in_a_source_tree_says_what_to_do(tmp_path):
    """``python -m fastvec`` in a directory holding fastvec's sources (no compiled module there: the checkout,
    or a Ray worker started in the driver's checkout) imports those first; it said "cannot import name '_core'
    from partially initialized module 'fastvec' (most likely due to a circular import)"."""
    import shutil

    shutil.copytree(ROOT / "fastvec", tmp_path / "fastvec", ignore=shutil.ignore_patterns("_core*.so", "__pycache__"))
    run = subprocess.run(
        [sys.executable, "-m", "fastvec", "list"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    import importlib.metadata

    if '"editable": true' in (importlib.metadata.distribution("fastvec").read_text("direct_url.json") or ""):
        pytest.skip("an editable install (a developer's, never CI's) redirects the import to the checkout's build")
    assert run.returncode != 0
    assert "a directory without its compiled module (fastvec._core)" in run.stderr
    assert "Run from another directory, or install fastvec in editable mode" in run.stderr
    assert "circular import" not in run.stderr
