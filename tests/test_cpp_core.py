"""Builds and runs the C++ core unit tests (tests/cpp/core_tests.cpp)."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_core_unit_tests(tmp_path):
    exe = tmp_path / "core_tests"
    cxx = shlex.split(os.environ.get("CXX", "c++"))
    build = [*cxx, "-std=c++20", "-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror",
             f"-I{ROOT / 'src'}", str(ROOT / "tests/cpp/core_tests.cpp"), "-o", str(exe), "-pthread"]
    subprocess.run(build, check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all core checks passed" in run.stdout
