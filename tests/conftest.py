"""In CI nothing is skipped: a test that would skip fails instead."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

import gymnasium as gym
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
# built). Both have float64 rewards, as gymnasium's toy text envs (their Python numbers batched by its vector envs).
MUJOCO_IDS = fastvec.registry.family_ids("mujoco")
DM_CONTROL_IDS = fastvec.registry.family_ids("dm_control")
# gymnasium's Box2D envs, native when built with the Box2D backend (float64 rewards, as gymnasium's).
BOX2D_IDS = fastvec.registry.family_ids("box2d")
TOY_TEXT_IDS = fastvec.registry.family_ids("toy_text")
# Toy text follows gymnasium's releases: fastvec has Taxi-v3 as gymnasium 1.2 has it and Taxi-v4 as 1.3 and later
# have it; a test that compares with gymnasium takes the toy-text ids the installed gymnasium registers.
GYMNASIUM_TOY_TEXT_IDS = [e for e in TOY_TEXT_IDS if e in gym.registry]
TAXI_ID = "Taxi-v4" if "Taxi-v4" in gym.registry else "Taxi-v3"
FLOAT64_REWARD_IDS = MUJOCO_IDS + DM_CONTROL_IDS + BOX2D_IDS + TOY_TEXT_IDS
# Envs that start in one state whatever the seed (FrozenLake's and CliffWalking's start tile): seeds show later.
FIXED_START_IDS = ("FrozenLake-v1", "FrozenLake8x8-v1", "CliffWalking-v1", "CliffWalkingSlippery-v1")
# CliffWalking-v1 has no randomness at all: its trajectories do not depend on the seed.
SEEDLESS_IDS = ("CliffWalking-v1",)


# The families whose own test files cover every env (tests/envs/test_atari.py every game, tests/envs/test_mujoco.py
# every MuJoCo env): the registry-driven tests take one env of each.
COVERED_APART = {"atari": "Pong-v5", "mujoco": "Hopper-v5"}
# The multi-agent families (mpe2's MPE: fastvec.registry.MULTI_AGENT_FAMILIES) are no gymnasium envs: the
# single-agent registry-driven tests take none of their ids; tests/envs/mpe/ covers them.
MULTI_AGENT_FAMILIES = fastvec.registry.MULTI_AGENT_FAMILIES
# dm_control's tasks (observations: Dicts of named arrays) are covered by tests/envs/test_dm_control.py; the
# registry-driven tests take two of them, a Dict with a scalar field (the walker's height) and one without, on the
# outputs they can check without a gymnasium env of the same id (dm_control's own, through shimmy, where they need one).
DICT_OBS_SAMPLE = ("CheetahRun-v1", "WalkerWalk-v1")


def env_ids_under_test() -> list[str]:
    """Every single-agent env of this build, but one of each family in COVERED_APART (Pong for Atari, Hopper for
    MuJoCo) and DICT_OBS_SAMPLE of dm_control's."""
    ids = fastvec.list_envs()
    apart = (*COVERED_APART, *MULTI_AGENT_FAMILIES, "dm_control")
    every = [e for e in ids if fastvec.registry.lookup(e).family not in apart]
    return every + [e for e in (*COVERED_APART.values(), *DICT_OBS_SAMPLE) if e in ids]


def is_dict_obs(env_id: str) -> bool:
    """Whether ``env_id``'s observations are a gymnasium ``Dict`` (dm_control's, unless flattened)."""
    return fastvec.registry.lookup(env_id).family == "dm_control"


def pytest_collection_modifyitems(items):
    """A test parametrized with an Atari id needs the Atari backend, and emulating Atari is slow (too slow under a
    sanitizer): such items get the ``atari``, ``heavy`` and ``slow`` markers, whatever file they are in. One
    parametrized with a MuJoCo or dm_control id needs the MuJoCo backend: the ``mujoco`` marker; one with a Box2D
    id the Box2D backend: the ``box2d`` marker; one with a toy-text id the ``toy_text`` marker."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        values = [v for v in params.values() if isinstance(v, str)]
        if any(v in MUJOCO_IDS or v in DM_CONTROL_IDS for v in values):
            item.add_marker(pytest.mark.mujoco)
        elif any(v in BOX2D_IDS for v in values):
            item.add_marker(pytest.mark.box2d)
        elif any(ATARI_ID.match(v) for v in values):
            item.add_marker(pytest.mark.atari)
            item.add_marker(pytest.mark.heavy)
            item.add_marker(pytest.mark.slow)
        if any(v in TOY_TEXT_IDS for v in values):
            item.add_marker(pytest.mark.toy_text)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must run every test: {report.longrepr}"


def _check_results_kept(env, steps: int) -> None:
    """Steps ``env`` (8 envs; sync, or async with batch_size 4), keeps every result, steps as much again,
    and asserts that no array it returned earlier changed: results belong to the caller. Dict observations field
    by field, and no two fields, and no field of two results, share memory."""

    def actions(action: int, k: int) -> np.ndarray:
        space = env.single_action_space
        if isinstance(space, gym.spaces.Box):  # half the upper bound, or zeros
            return np.broadcast_to(0.5 * action * space.high, (k, *space.shape)).astype(space.dtype)
        return np.full(k, action, dtype=np.int64)

    def run(action: int) -> list:
        out = []
        for _ in range(steps):
            if env.batch_size == env.num_envs:
                out.append(env.step(actions(action, env.num_envs)))
            else:
                r = env.recv()
                out.append(r)
                env.send(actions(action, env.batch_size), r[4]["env_id"])
        return out

    if env.batch_size == env.num_envs:
        env.reset()
    else:
        env.async_reset()
    results = run(1)

    def arrays(r) -> list[np.ndarray]:  # the env ids too, in async mode
        obs = list(r[0].values()) if isinstance(r[0], dict) else [r[0]]
        return [*obs, *r[1:4], *([r[4]["env_id"]] if "env_id" in r[4] else [])]

    snapshots = [[np.copy(x) for x in arrays(r)] for r in results]
    later = run(0)
    for r, snap in zip(results, snapshots, strict=True):
        got = arrays(r)
        for x, want in zip(got, snap, strict=True):
            np.testing.assert_array_equal(x, want)
        for i, x in enumerate(got):
            assert not any(np.shares_memory(x, y) for y in got[i + 1 :])
            assert not any(np.shares_memory(x, y) for y in arrays(later[-1]))


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
