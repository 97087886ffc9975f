"""The ``fastvec`` command as a shell user meets it: help, version, the env list (whole, by family, ids only, and
cut short by a pipe's reader), and the bench plot's line styles."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import fastvec
from fastvec import _core
from fastvec.bench import contenders, report

OUTSIDE_TREE = tempfile.gettempdir()


def fastvec_cli(*args: str, **kw) -> subprocess.CompletedProcess:
    # Outside the checkout, whose fastvec/ (without its compiled module) would shadow the installed one.
    return subprocess.run(
        [sys.executable, "-m", "fastvec", *args], capture_output=True, text=True, timeout=120, cwd=OUTSIDE_TREE, **kw
    )


def test_help_names_the_commands_and_how_to_get_their_options():
    run = fastvec_cli("--help")
    assert run.returncode == 0 and run.stderr == ""
    assert "bench" in run.stdout and "list" in run.stdout and "fastvec COMMAND --help" in run.stdout
    bench = fastvec_cli("bench", "--help")
    assert bench.returncode == 0 and "--num-envs" in bench.stdout


def test_version_says_the_release_and_the_backends_built_in():
    run = fastvec_cli("--version")
    assert run.returncode == 0
    assert run.stdout.startswith(f"fastvec {fastvec.__version__} (native backends: ")
    assert ("atari" in run.stdout) == _core.has_atari and ("mujoco" in run.stdout) == _core.has_mujoco


def test_list_gives_the_native_ids_whole_by_family_and_one_per_line():
    whole = fastvec_cli("list")
    assert whole.returncode == 0 and "classic control: 5" in whole.stdout
    assert all(f"  {env_id}\n" in whole.stdout for env_id in fastvec.list_envs())
    ids = fastvec_cli("list", "--ids")
    assert sorted(ids.stdout.split()) == fastvec.list_envs() and ids.stdout.count("\n") == len(fastvec.list_envs())
    classic = fastvec_cli("list", "--ids", "--family", "classic")
    assert classic.stdout.split() == [
        "Acrobot-v1",
        "CartPole-v1",
        "MountainCar-v0",
        "MountainCarContinuous-v0",
        "Pendulum-v1",
    ]


def test_bad_commands_and_options_are_usage_errors():
    for args, said in (
        (["frob"], "invalid choice: 'frob'"),
        ([], "required: COMMAND"),
        (["list", "--family", "box3d"], "invalid choice: 'box3d'"),
    ):
        run = fastvec_cli(*args)
        assert run.returncode == 2 and said in run.stderr and "Traceback" not in run.stderr


def test_a_reader_that_stops_reading_ends_the_list_quietly():
    """``fastvec list | head -1``: the reader is gone before the list is written (the pipe's read end closed
    first, so that the writer meets it every time), and the command ends as a shell expects of a process a
    closed pipe stopped (128 + SIGPIPE), without a traceback."""
    r, w = os.pipe()
    os.close(r)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "fastvec", "list"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            cwd=OUTSIDE_TREE,
        )
    finally:
        os.close(w)
    assert run.returncode == 141 and run.stderr == ""


def test_every_bench_contender_draws_its_own_line_and_libraries_their_own_colours():
    for multiagent in (False, True):
        keys = [c.key for c in contenders.CONTENDERS if c.multiagent == multiagent]
        styles = report.line_styles(keys)
        assert len({tuple(s.values()) for s in styles.values()}) == len(keys)
    styles = report.line_styles(["fastvec", "fastvec-async", "envpool-async-t2", "gym-async", "sb3-subproc"])
    assert len({s["color"] for s in styles.values()} - {styles["fastvec"]["color"]}) == 3  # fastvec's two share one
    assert styles["fastvec"]["linestyle"] == "-" and styles["fastvec-async"]["linestyle"] == "--"
