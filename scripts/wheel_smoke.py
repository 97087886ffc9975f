"""Checks an installed fastvec wheel (CI's wheel stage): run from outside the source tree, with no compiler on PATH.

``python wheel_smoke.py`` checks where fastvec was imported from, then makes and steps CartPole, Pong and (with the
MuJoCo backend) Hopper. As a pytest plugin (``pytest -p wheel_smoke``, this directory on PYTHONPATH) it makes the
same import check before the tests run, so that a test run meant for the wheel fails if it imported the tree.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

COMPILERS = ("cc", "c++", "gcc", "g++", "clang", "clang++")


def check_installed() -> None:
    """fastvec and its extension come from this Python's site-packages (the wheel), nothing can compile, and
    libmujoco is the mujoco-core package's, loaded through the extension's rpath, not a copy in the wheel."""
    found = {c: shutil.which(c) for c in COMPILERS if shutil.which(c)}
    assert not found, f"a compiler is on PATH: {found}"
    import fastvec
    import fastvec._core as core

    site = Path(sysconfig.get_paths()["platlib"]).resolve()
    for mod in (fastvec, core):
        path = Path(mod.__file__).resolve()
        assert path.is_relative_to(site), f"{mod.__name__} imported from {path}, not from the wheel in {site}"
    assert core.has_atari, "the wheel was built without the Atari backend"
    # mujoco-core's wheels are for Python >= 3.11, and so is the MuJoCo backend
    assert core.has_mujoco == (sys.version_info >= (3, 11)), f"has_mujoco is {core.has_mujoco}"
    assert not list((site / "fastvec.libs").glob("libmujoco*")), "libmujoco was vendored into the wheel"
    if core.has_mujoco:
        maps = Path("/proc/self/maps").read_text()
        libs = {line.split()[-1] for line in maps.splitlines() if "libmujoco" in line}
        assert libs and all(Path(p).parent == site / "mujoco" for p in libs), f"libmujoco loaded from {libs}"


def smoke() -> None:
    import numpy as np

    import fastvec

    ids = ["CartPole-v1", "Pong-v5"] + (["Hopper-v5"] if fastvec._core.has_mujoco else [])
    for env_id in ids:
        with fastvec.make(env_id, num_envs=4, num_threads=2, seed=0) as env:
            obs, _ = env.reset(seed=0)
            assert env.observation_space.contains(obs), env_id
            for _ in range(20):
                obs, rew, term, trunc, _ = env.step(env.action_space.sample())
            assert env.observation_space.contains(obs), env_id
            assert rew.shape == term.shape == trunc.shape == (4,) and np.isfinite(rew).all(), env_id
        print(f"{env_id}: stepped")


def pytest_configure(config) -> None:
    check_installed()


if __name__ == "__main__":
    check_installed()
    import fastvec

    print(f"fastvec from {Path(fastvec._core.__file__).parent}")
    smoke()
