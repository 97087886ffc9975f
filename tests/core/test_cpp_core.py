"""Builds (with CMake, tests/cpp/CMakeLists.txt) and runs the C++ core unit tests (tests/cpp/core_tests.cpp)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_core_unit_tests(tmp_path):
    subprocess.run(
        ["cmake", "-S", str(ROOT / "tests/cpp"), "-B", str(tmp_path), "-DCMAKE_BUILD_TYPE=Release"],
        check=True,
        capture_output=True,
    )
    build = subprocess.run(["cmake", "--build", str(tmp_path), "-j2"], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    run = subprocess.run([str(tmp_path / "core_tests")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all core checks passed" in run.stdout
