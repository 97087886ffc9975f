"""In CI nothing is skipped: a test that would skip fails instead."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

# torch's intra-op threads spin at their barriers: beside a busy core, the training tests ran many times as long on
# torch's default thread count as on one (RLlib's SAC test 290 s against 33 s idle; a CleanRL-style PPO 112 s
# against 6 s). Their models are small: one thread each, here and in the processes the tests start (Ray's workers,
# pool workers), unless the caller says otherwise. Read by torch when it is first imported, after this.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import fastvec
from fastvec.roms import ATARI_ID

# gymnasium's MuJoCo v5 ids, and dm_control's tasks, which fastvec runs natively when built with its MuJoCo backend
# (named by the registry in any build: the tests that take them are marked, and deselected where the backend is not
# built). Both have float64 rewards.
MUJOCO_IDS = fastvec.registry.family_ids("mujoco")
DM_CONTROL_IDS = fastvec.registry.family_ids("dm_control")
FLOAT64_REWARD_IDS = MUJOCO_IDS + DM_CONTROL_IDS


# The families whose own test files cover every env (tests/envs/test_atari.py every game, tests/envs/test_mujoco.py
# every MuJoCo env): the registry-driven tests take one env of each.
COVERED_APART = {"atari": "Pong-v5", "mujoco": "Hopper-v5"}
# The multi-agent families (mpe2's MPE: fastvec.registry.MULTI_AGENT_FAMILIES) are no gymnasium envs: the
# single-agent registry-driven tests take none of their ids; tests/envs/mpe/ covers them.
MULTI_AGENT_FAMILIES = fastvec.registry.MULTI_AGENT_FAMILIES
# The families whose observations are Dicts of named arrays (dm_control's): the registry-driven tests assume one
# array and a gymnasium reference env of the same id, so they take none of their ids;
# tests/envs/test_dm_control.py covers them (spaces, determinism, parity, adapters).
DICT_OBS_FAMILIES = ("dm_control",)


def env_ids_under_test() -> list[str]:
    """Every single-agent env of this build, but one of each family in COVERED_APART (Pong for Atari, Hopper for
    MuJoCo), and none of DICT_OBS_FAMILIES."""
    ids = fastvec.list_envs()
    apart = (*COVERED_APART, *MULTI_AGENT_FAMILIES, *DICT_OBS_FAMILIES)
    every = [e for e in ids if fastvec.registry.lookup(e).family not in apart]
    return every + [e for e in COVERED_APART.values() if e in ids]


def pytest_collection_modifyitems(items):
    """A test parametrized with an Atari id needs the Atari backend, and emulating Atari is slow (too slow under a
    sanitizer): such items get the ``atari``, ``heavy`` and ``slow`` markers, whatever file they are in. One
    parametrized with a MuJoCo or dm_control id needs the MuJoCo backend: the ``mujoco`` marker."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        values = [v for v in params.values() if isinstance(v, str)]
        if any(v in MUJOCO_IDS or v in DM_CONTROL_IDS for v in values):
            item.add_marker(pytest.mark.mujoco)
        elif any(ATARI_ID.match(v) for v in values):
            item.add_marker(pytest.mark.atari)
            item.add_marker(pytest.mark.heavy)
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must run every test: {report.longrepr}"


def _check_results_kept(env, steps: int) -> None:
    """Steps ``env`` (8 envs; sync, or async with batch_size 4), keeps every result, steps as much again,
    and asserts that no array it returned earlier changed: results belong to the caller."""

    def run(action: int) -> list:
        out = []
        for _ in range(steps):
            if env.batch_size == env.num_envs:
                out.append(env.step(np.full(env.num_envs, action, dtype=np.int64)))
            else:
                r = env.recv()
                out.append(r)
                env.send(np.full(env.batch_size, action, dtype=np.int64), r[4]["env_id"])
        return out

    if env.batch_size == env.num_envs:
        env.reset()
    else:
        env.async_reset()
    results = run(1)

    def arrays(r) -> tuple:  # the env ids too, in async mode
        return (*r[:4], r[4]["env_id"]) if "env_id" in r[4] else r[:4]

    snapshots = [[np.copy(x) for x in arrays(r)] for r in results]
    run(0)
    for r, snap in zip(results, snapshots, strict=True):
        for got, want in zip(arrays(r), snap, strict=True):
            np.testing.assert_array_equal(got, want)


@pytest.fixture
def check_results_kept():
    return _check_results_kept


def run_python(code: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Runs ``code`` (dedented) in a fresh interpreter, for what must not happen in the test runner's (signals,
    forks, exits, resource limits). From a scratch directory, so that the installed fastvec is imported, not the
    source tree's."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tempfile.gettempdir(),
        env=env,
    )
