"""fastvec's native dm_control tasks against dm_control.suite.load itself, on the same MuJoCo library.

The bar is bit-identity over whole episodes: with the same seed (``task_kwargs={"random": seed}``, whose
RandomState continues from one episode to the next) and the same actions, every observation field, reward and
discount equals dm_control's bit for bit, through two episodes and the reset between them.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from dm_control import suite

import fastvec
from fastvec import dm_control_models

pytestmark = [pytest.mark.mujoco]


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """MuJoCo appends its warnings to MUJOCO_LOG.TXT in the working directory: not the checkout's."""
    monkeypatch.chdir(tmp_path)


# (fastvec id, dm_control domain, task)
TASKS = [
    ("HumanoidStand-v1", "humanoid", "stand"),
    ("HumanoidWalk-v1", "humanoid", "walk"),
    ("HumanoidRun-v1", "humanoid", "run"),
    ("HumanoidRunPureState-v1", "humanoid", "run_pure_state"),
    ("QuadrupedWalk-v1", "quadruped", "walk"),
    ("QuadrupedRun-v1", "quadruped", "run"),
    ("QuadrupedFetch-v1", "quadruped", "fetch"),
    ("FishUpright-v1", "fish", "upright"),
    ("FishSwim-v1", "fish", "swim"),
    ("SwimmerSwimmer6-v1", "swimmer", "swimmer6"),
    ("SwimmerSwimmer15-v1", "swimmer", "swimmer15"),
]


def _libm_force_torque(physics) -> np.ndarray:
    """quadruped's force_torque as fastvec computes it: libm's asinh of each force and torque sensor value."""
    m = physics.model
    kinds = (int(mujoco.mjtSensor.mjSENS_FORCE), int(mujoco.mjtSensor.mjSENS_TORQUE))
    sensors = [s for s in range(m.nsensor) if int(m.sensor_type[s]) in kinds]
    values = np.concatenate(
        [physics.data.sensordata[m.sensor_adr[s] : m.sensor_adr[s] + m.sensor_dim[s]] for s in sensors]
    )
    return np.array([math.asinh(v) for v in values])


# Fields that are not bit-identical to dm_control's, and what they equal instead: quadruped's force_torque is
# np.arcsinh, which numpy computes with Intel's SVML on AVX-512 CPUs (it differs from libm's asinh in the last bit
# or two for about one value in six) and fastvec with libm's asinh (src/envs/dm_control/quadruped.hpp). Checked:
# fastvec's field is libm's asinh of dm_control's sensor values (the physics stays bit-identical), and within
# ULPS of dm_control's field.
EXPLAINED = {"force_torque": _libm_force_torque}
ULPS = 2


def _bits(a: object) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    return a.view(np.uint64)


def assert_obs(got: dict, want: dict, what: str, physics) -> None:
    assert list(got) == list(want), f"{what}: keys {list(got)}, dm_control's {list(want)}"
    for key, value in want.items():
        g = got[key][0]
        assert g.dtype == np.float64 and g.shape == np.shape(value), f"{what}[{key!r}]: {g.dtype} {g.shape}"
        if key in EXPLAINED:
            assert np.array_equal(_bits(g), _bits(EXPLAINED[key](physics))), f"{what}[{key!r}]: {g}"
            ulps = np.abs(_bits(g).astype(np.int64) - _bits(value).astype(np.int64))
            assert ulps.max() <= ULPS, f"{what}[{key!r}]: {ulps.max()} ulps from dm_control's\n{g}\nvs\n{value}"
        elif not np.array_equal(_bits(g), _bits(value)):
            diff = np.max(np.abs(g - np.asarray(value)))
            raise AssertionError(f"{what}[{key!r}]: differs (max |diff| {diff:.3g})\n{g}\nvs\n{value}")


def run_parity(env_id: str, domain: str, task: str, seed: int, episodes: int = 2) -> None:
    reference = suite.load(domain, task, task_kwargs={"random": seed})
    env = fastvec.make(env_id, num_envs=1)
    try:
        actions = np.random.default_rng(seed)
        low, high = env.single_action_space.low, env.single_action_space.high
        obs, _ = env.reset(seed=seed)
        ts = reference.reset()
        for episode in range(episodes):
            assert_obs(obs, ts.observation, f"{env_id} seed {seed} episode {episode} reset", reference.physics)
            t = 0
            while True:
                a = actions.uniform(low, high).astype(np.float32)
                obs, reward, terminated, truncated, _ = env.step(a[None])
                ts = reference.step(a.astype(np.float64))
                t += 1
                what = f"{env_id} seed {seed} episode {episode} step {t}"
                assert_obs(obs, ts.observation, what, reference.physics)
                assert _bits(reward[0]) == _bits(ts.reward), f"{what}: reward {reward[0]!r}, dm_control's {ts.reward!r}"
                assert not terminated[0], f"{what}: terminated (dm_control's discount {ts.discount})"
                assert ts.discount == 1.0, f"{what}: dm_control's discount {ts.discount}"
                assert bool(truncated[0]) == ts.last(), f"{what}: truncated {truncated[0]}, dm_control last {ts.last()}"
                if ts.last():
                    break
            assert t == 1000  # every task here: its time limit over its control timestep
            if episode + 1 < episodes:
                # next_step autoreset: the step after the last one resets; dm_control's reset continues its RandomState
                obs, reward, terminated, truncated, _ = env.step(actions.uniform(low, high).astype(np.float32)[None])
                assert reward[0] == 0 and not terminated[0] and not truncated[0]
                ts = reference.reset()
    finally:
        env.close()


@pytest.mark.parametrize(("env_id", "domain", "task"), TASKS, ids=[t[0] for t in TASKS])
def test_parity(env_id, domain, task):
    run_parity(env_id, domain, task, seed=3)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 11, 2**32 - 1])
@pytest.mark.parametrize(("env_id", "domain", "task"), TASKS, ids=[t[0] for t in TASKS])
def test_parity_seeds(env_id, domain, task, seed):
    run_parity(env_id, domain, task, seed)


# The models fastvec builds as the suite's Python builds them (fastvec/dm_control_models.py), and the task whose
# physics compiles the suite's own.
GENERATED = [
    ("swimmer6.xml", "swimmer", "swimmer6"),
    ("swimmer15.xml", "swimmer", "swimmer15"),
    ("quadruped_walk.xml", "quadruped", "walk"),
    ("quadruped_run.xml", "quadruped", "run"),
    ("quadruped_fetch.xml", "quadruped", "fetch"),
    ("manipulator_bring_ball.xml", "manipulator", "bring_ball"),
    ("manipulator_bring_peg.xml", "manipulator", "bring_peg"),
    ("manipulator_insert_ball.xml", "manipulator", "insert_ball"),
    ("manipulator_insert_peg.xml", "manipulator", "insert_peg"),
    ("stacker_stack2.xml", "stacker", "stack_2"),
    ("stacker_stack4.xml", "stacker", "stack_4"),
]


@pytest.mark.parametrize(("name", "domain", "task"), GENERATED, ids=[g[0] for g in GENERATED])
def test_generated_model_is_the_suites(name, domain, task):
    ours = mujoco.MjModel.from_xml_path(str(dm_control_models.generated_model(name)))
    theirs = suite.load(domain, task, task_kwargs={"random": 0}).physics.model.ptr
    compared = 0
    for field in dir(theirs):
        if field.startswith("_"):
            continue
        want = getattr(theirs, field)
        if isinstance(want, np.ndarray):
            got = getattr(ours, field)
            assert got.shape == want.shape, f"{name}: {field} shape {got.shape}, dm_control's {want.shape}"
            assert np.array_equal(got, want, equal_nan=True), f"{name}: {field} differs"
            compared += 1
        elif field.startswith("n") and isinstance(want, int):
            assert getattr(ours, field) == want, f"{name}: {field} {getattr(ours, field)}, dm_control's {want}"
    assert compared > 100  # every array of the model, not a handful
    # each call makes the same file
    assert dm_control_models.generated_model(name) == dm_control_models.generated_model(name)


# Tasks that keep per-env state the suite keeps in the model (the target fish and swimmer move at each reset):
# several envs in one block, each against its own dm_control env (seed + index), with one, then two threads.
# Manipulator, stacker and lqr write into the model itself at reset (or when seeded): each env owns its model.
PER_ENV_STATE = [
    ("FishSwim-v1", "fish", "swim"),
    ("SwimmerSwimmer6-v1", "swimmer", "swimmer6"),
    ("ManipulatorInsertPeg-v1", "manipulator", "insert_peg"),
    ("StackerStack2-v1", "stacker", "stack_2"),
]
# The observation that shows each env's own target.
TARGET_KEY = {"fish": "target", "swimmer": "to_target", "manipulator": "target_pos", "stacker": "target_pos"}


@pytest.mark.parametrize(("num_threads", "block_size"), [(1, 4), (2, 2)])
@pytest.mark.parametrize(("env_id", "domain", "task"), PER_ENV_STATE, ids=[t[0] for t in PER_ENV_STATE])
def test_parity_envs_of_a_block(env_id, domain, task, num_threads, block_size):
    seed, num_envs = 7, 4
    references = [suite.load(domain, task, task_kwargs={"random": seed + i}) for i in range(num_envs)]
    env = fastvec.make(env_id, num_envs=num_envs, num_threads=num_threads, block_size=block_size)
    try:
        obs, _ = env.reset(seed=seed)
        steps = [r.reset() for r in references]
        actions = np.random.default_rng(seed)
        for t in range(60):
            for i, ts in enumerate(steps):
                assert_obs({k: v[i : i + 1] for k, v in obs.items()}, ts.observation, f"env {i} step {t}", None)
            a = actions.uniform(
                env.single_action_space.low, env.single_action_space.high, (num_envs, *env.single_action_space.shape)
            ).astype(np.float32)
            obs, reward, _, _, _ = env.step(a)
            steps = [r.step(a[i].astype(np.float64)) for i, r in enumerate(references)]
            for i, ts in enumerate(steps):
                assert _bits(reward[i]) == _bits(ts.reward), f"env {i} step {t}: reward {reward[i]!r}, {ts.reward!r}"
        # the envs' targets differ (each drew its own)
        assert len({tuple(np.ravel(ts.observation[TARGET_KEY[domain]])) for ts in steps}) == num_envs
    finally:
        env.close()
