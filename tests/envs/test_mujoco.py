"""fastvec's native MuJoCo envs against gymnasium's v5 classes, on the same MuJoCo library.

Both sides step the same compiled model with the same libmujoco, and fastvec computes observations, rewards and
infos with numpy's operations in numpy's order (src/envs/mujoco/simulation.hpp), so the bar is bit-identity:
every comparison here is of the bits of float64 values (``-0.0`` is not ``0.0``), of dtypes and of info keys,
over whole episodes (terminations, truncations and autoresets included).

One deliberate difference is tested as such: with float32 actions, gymnasium under NumPy 2 computes its control
costs in float32 (``np.square`` of a float32 array), fastvec always in float64 (as gymnasium does for float64
actions); observations stay bit-identical, and rewards differ by the float32 rounding of the control cost.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from conftest import MUJOCO_IDS, run_python

import fastvec

pytestmark = [pytest.mark.versions, pytest.mark.mujoco]


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """MuJoCo appends its warnings to MUJOCO_LOG.TXT in the working directory: not the checkout's."""
    monkeypatch.chdir(tmp_path)


# Each env's episode limit crossed at least once by every pool below (Pusher and Reacher: several times).
STEPS = 1050


def _bits(a: object) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint64) if a.dtype == np.float64 else a


def assert_same(got: object, want: object, what: str) -> None:
    """Equal dtype, shape and bits (an object array, as gymnasium's final_obs: element by element)."""
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype == object:
        assert got.dtype == object and got.shape == want.shape, (
            f"{what}: {got.dtype} {got.shape} vs object {want.shape}"
        )
        for i, (x, y) in enumerate(zip(got, want, strict=True)):
            assert (x is None) == (y is None), f"{what}[{i}]: {x!r} vs {y!r}"
            if y is not None:
                assert_same(x, y, f"{what}[{i}]")
        return
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, gymnasium's {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, gymnasium's {want.shape}"
    if not np.array_equal(_bits(got), _bits(want)):
        bad = np.argwhere(_bits(got) != _bits(want))[0]
        raise AssertionError(f"{what}: first difference at {tuple(bad)}: {got[tuple(bad)]!r} vs {want[tuple(bad)]!r}")


def assert_same_info(got: dict, want: dict, what: str) -> None:
    assert list(got) == list(want) or set(got) == set(want), f"{what}: keys {sorted(got)} vs {sorted(want)}"
    for key, value in want.items():
        if isinstance(value, dict):
            assert_same_info(got[key], value, f"{what}[{key!r}]")
        else:
            assert_same(got[key], value, f"{what}[{key!r}]")


def _actions(rng: np.random.Generator, space: gym.spaces.Box, n: int, dtype=np.float64) -> np.ndarray:
    """Random actions up to 1.5x the bounds: some out of range, which neither side clips (MuJoCo clamps the
    controls it applies; the control costs see them as given)."""
    high = space.high.astype(np.float64)
    return (rng.uniform(-1.5, 1.5, (n, *space.shape)) * high).astype(dtype)


def run_side_by_side(
    env_id: str,
    n: int = 3,
    steps: int = STEPS,
    seed: int = 7,
    mode: str = "next_step",
    action_dtype=np.float64,
    **kwargs,
) -> dict[str, int]:
    """Steps fastvec's pool and gymnasium's SyncVectorEnv over the same envs with the same seeds and actions and
    asserts every output bit-identical; returns what happened (episode ends)."""
    env = fastvec.make(env_id, n, autoreset_mode=mode, **kwargs)
    ref = gym.make_vec(
        env_id,
        n,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode[mode.upper()]},
        **kwargs,
    )
    try:
        obs, info = env.reset(seed=seed)
        ref_obs, ref_info = ref.reset(seed=seed)
        assert_same(obs, ref_obs, "reset obs")
        assert_same_info(info, ref_info, "reset info")
        rng = np.random.default_rng(seed)
        ends = 0
        done = np.zeros(n, bool)
        for t in range(steps):
            a = _actions(rng, env.single_action_space, n, action_dtype)
            if mode == "disabled":
                if done.any():
                    obs, info = env.reset(options={"reset_mask": done})
                    ref_obs, ref_info = ref.reset(options={"reset_mask": done})
                    assert_same(obs, ref_obs, f"step {t} partial reset obs")
                    assert_same_info(info, ref_info, f"step {t} partial reset info")
            got = env.step(a)
            want = ref.step(a)
            for name, x, y in zip(("obs", "reward", "terminated", "truncated"), got[:4], want[:4], strict=True):
                assert_same(x, y, f"step {t} {name}")
            assert_same_info(got[4], want[4], f"step {t} info")
            done = got[2] | got[3]
            ends += int(done.sum())
        return {"ends": ends}
    finally:
        env.close()
        ref.close()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", MUJOCO_IDS)
def test_whole_episodes_are_bit_identical_to_gymnasium(env_id):
    stats = run_side_by_side(env_id)
    assert stats["ends"] >= 3  # every env ended an episode (by its limit at least)


@pytest.mark.parametrize("mode", ["same_step", "disabled"])
@pytest.mark.parametrize("env_id", ["Hopper-v5", "Humanoid-v5", "Reacher-v5"])
def test_other_autoreset_modes_are_bit_identical_to_gymnasium(env_id, mode):
    """same_step: final_obs and final_info (the ended step's info, with its masks) as gymnasium builds them;
    disabled: partial resets with reset_mask."""
    assert run_side_by_side(env_id, steps=300, mode=mode)["ends"] >= 3


@pytest.mark.parametrize("env_id", MUJOCO_IDS)
def test_reset_states_for_many_seeds(env_id):
    """The initial state of each of 64 seeds equals gymnasium's env.reset(seed=s) (reset noise from numpy's
    uniform and standard_normal; Reacher's and Pusher's rejection loops)."""
    seeds = [int(s) for s in np.random.default_rng(1).integers(0, 2**32, 64)]
    env = fastvec.make(env_id, len(seeds))
    obs, info = env.reset(seed=seeds)
    ref = gym.make(env_id)
    for i, s in enumerate(seeds):
        want, want_info = ref.reset(seed=s)
        assert_same(obs[i], want, f"seed {s} obs")
        for key, value in want_info.items():
            assert info[f"_{key}"][i]
            assert_same(info[key][i], value, f"seed {s} info[{key!r}]")
    env.close()


def test_spaces_dtypes_limits_and_metadata_are_gymnasium_s():
    for env_id in MUJOCO_IDS:
        env = fastvec.make(env_id, 2)
        ref = gym.make(env_id)
        assert env.single_observation_space == ref.observation_space, env_id
        assert env.single_action_space == ref.action_space, env_id
        assert env.single_action_space.dtype == np.float32
        assert env.spec.max_episode_steps == ref.spec.max_episode_steps, env_id
        assert env.spec.reward_threshold == ref.spec.reward_threshold, env_id
        obs, _ = env.reset(seed=0)
        assert obs.dtype == np.float64
        _, reward, *_ = env.step(np.zeros((2, *env.single_action_space.shape)))
        assert reward.dtype == np.float64
        env.close()
    assert sorted(MUJOCO_IDS) == sorted(e for e in fastvec.list_envs() if fastvec.registry.lookup(e).family == "mujoco")


# A few options per env, with gymnasium's names: each changes what the env does, and both sides agree.
OPTION_CASES = [
    ("Ant-v5", {"ctrl_cost_weight": 0.1, "contact_cost_weight": 1e-3, "healthy_reward": 0.5}),
    ("Ant-v5", {"main_body": "torso", "healthy_z_range": (0.3, 0.9), "terminate_when_unhealthy": False}),
    ("Ant-v5", {"contact_force_range": (-0.5, 0.5), "include_cfrc_ext_in_observation": False}),
    ("Ant-v5", {"contact_force_range": (1.0, -1.0)}),  # inverted: np.clip gives the high bound
    ("Humanoid-v5", {"contact_cost_range": (3.0, 1.0)}),
    ("Ant-v5", {"exclude_current_positions_from_observation": False, "reset_noise_scale": 0.3, "frame_skip": 3}),
    ("HalfCheetah-v5", {"forward_reward_weight": 2.0, "ctrl_cost_weight": 0.5, "reset_noise_scale": 0.3}),
    ("HalfCheetah-v5", {"exclude_current_positions_from_observation": False, "frame_skip": 2}),
    ("Hopper-v5", {"healthy_z_range": (0.5, 2.0), "healthy_angle_range": (-0.5, 0.5), "healthy_reward": 2.0}),
    ("Hopper-v5", {"healthy_state_range": (-5.0, 5.0), "terminate_when_unhealthy": False, "frame_skip": 8}),
    ("Hopper-v5", {"exclude_current_positions_from_observation": False, "reset_noise_scale": 0.05}),
    (
        "Humanoid-v5",
        {"contact_cost_range": (-math.inf, 5.0), "contact_cost_weight": 1e-6, "healthy_z_range": (0.8, 2.1)},
    ),
    ("Humanoid-v5", {"include_cinert_in_observation": False, "include_cvel_in_observation": False}),
    ("Humanoid-v5", {"include_qfrc_actuator_in_observation": False, "include_cfrc_ext_in_observation": False}),
    ("Humanoid-v5", {"exclude_current_positions_from_observation": False, "terminate_when_unhealthy": False}),
    (
        "HumanoidStandup-v5",
        {"impact_cost_range": (-math.inf, 1.0), "impact_cost_weight": 1e-6, "ctrl_cost_weight": 0.2},
    ),
    ("HumanoidStandup-v5", {"include_cinert_in_observation": False, "reset_noise_scale": 0.05}),
    ("InvertedDoublePendulum-v5", {"healthy_reward": 5.0, "reset_noise_scale": 0.2}),
    ("InvertedPendulum-v5", {"reset_noise_scale": 0.1, "frame_skip": 4}),
    ("Pusher-v5", {"reward_near_weight": 1.0, "reward_dist_weight": 0.5, "reward_control_weight": 0.2}),
    ("Reacher-v5", {"reward_dist_weight": 2.0, "reward_control_weight": 0.5, "frame_skip": 4}),
    ("Swimmer-v5", {"forward_reward_weight": 2.0, "ctrl_cost_weight": 1e-3, "reset_noise_scale": 0.2}),
    ("Swimmer-v5", {"exclude_current_positions_from_observation": False}),
    ("Walker2d-v5", {"healthy_z_range": (0.9, 1.9), "healthy_angle_range": (-0.5, 0.5), "ctrl_cost_weight": 0.01}),
    ("Walker2d-v5", {"exclude_current_positions_from_observation": False, "terminate_when_unhealthy": False}),
]


def _case_id(case: tuple[str, dict]) -> str:
    env_id, kwargs = case
    return env_id + "".join(f"-{k}={v}" for k, v in kwargs.items())


@pytest.mark.parametrize("case", OPTION_CASES, ids=[_case_id(c) for c in OPTION_CASES])
def test_options_act_as_gymnasium_s(case):
    env_id, kwargs = case
    run_side_by_side(env_id, steps=250, **kwargs)
    # ... and they change something: the same seed and actions give another trajectory without them.
    runs = []
    for options in (kwargs, {}):
        env = fastvec.make(env_id, 2, **options)
        obs, info = env.reset(seed=3)
        rng = np.random.default_rng(3)
        trace = [obs.ravel(), *(np.ravel(v) for v in info.values())]
        for _ in range(100):
            o, r, term, trunc, info = env.step(_actions(rng, env.single_action_space, 2))
            trace += [o.ravel(), r, term, *(np.ravel(v) for v in info.values())]
        runs.append(trace)
        env.close()
    assert len(runs[0]) != len(runs[1]) or any(
        a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(*runs, strict=True)
    )


def test_a_user_model_of_the_same_robot(tmp_path):
    """xml_file: a modified Hopper (lighter torso, less gravity), resolved as gymnasium resolves it."""
    source = fastvec.mujoco_models.assets_dir() / "hopper.xml"
    text = source.read_text()
    text = re.sub(
        r'<option integrator="RK4" timestep="0.002"/>',
        '<option integrator="RK4" timestep="0.002" gravity="0 0 -5"/>',
        text,
    )
    assert "gravity" in text
    path = tmp_path / "light_hopper.xml"
    path.write_text(text)
    stats = run_side_by_side("Hopper-v5", steps=200, xml_file=str(path))
    assert stats["ends"] >= 1
    env, default = fastvec.make("Hopper-v5", 1, xml_file=str(path)), fastvec.make("Hopper-v5", 1)
    env.reset(seed=0), default.reset(seed=0)
    a = np.full((1, 3), 0.5)
    assert not np.array_equal(env.step(a)[0], default.step(a)[0])


def test_bare_names_are_gymnasium_s_assets(tmp_path):
    """A bare name is a file of gymnasium's MuJoCo assets (Walker2d's older model), a path starting with '.' or
    '/' is a path."""
    run_side_by_side("Walker2d-v5", steps=100, xml_file="walker2d.xml")
    shutil.copy(fastvec.mujoco_models.assets_dir() / "swimmer.xml", tmp_path / "swimmer.xml")
    run_side_by_side("Swimmer-v5", steps=50, xml_file=str(tmp_path / "swimmer.xml"))


def test_float32_actions_give_the_same_states_and_float64_costs():
    """The deliberate difference: float32 actions reach MuJoCo as the same float64 controls (bit-identical
    observations, terminations and positions), and fastvec's control cost is the float64 one. gymnasium's, under
    NumPy 2, is rounded to float32 once per square, sum and product: the rewards differ by at most a few float32
    ulps of the control cost, and fastvec's equal gymnasium's given the same actions as float64."""
    n = 3
    env = fastvec.make("HalfCheetah-v5", n)
    ref = gym.make_vec("HalfCheetah-v5", n, vectorization_mode="sync")
    ref64 = gym.make_vec("HalfCheetah-v5", n, vectorization_mode="sync")
    env.reset(seed=1), ref.reset(seed=1), ref64.reset(seed=1)
    rng = np.random.default_rng(1)
    for t in range(200):
        a = _actions(rng, env.single_action_space, n, np.float32)
        o, r, term, trunc, info = env.step(a)
        ro, rr, rterm, rtrunc, rinfo = ref.step(a)
        r64 = ref64.step(a.astype(np.float64))
        assert_same(o, ro, f"step {t} obs")
        assert_same(term, rterm, f"step {t} terminated")
        assert_same(info["x_position"], rinfo["x_position"], f"step {t} x_position")
        assert_same(r, r64[1], f"step {t} reward vs float64 actions")
        ctrl = -info["reward_ctrl"]
        # float32 rounding of 6 squares, their sum and the product by the weight: < 8 ulps of float32.
        assert np.all(np.abs(r - rr) <= 8 * np.spacing(np.float32(ctrl)).astype(np.float64) + 1e-300), t


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_actions_are_refused_and_the_pool_goes_on(bad):
    env = fastvec.make("Hopper-v5", 2)
    env.reset(seed=0)
    a = np.zeros((2, 3))
    a[1, 2] = bad
    with pytest.raises(ValueError, match=r"actions must be finite, got .* for env row 1"):
        env.step(a)
    obs, *_ = env.step(np.zeros((2, 3)))
    assert np.isfinite(obs).all()
    env.close()


def test_wrong_action_shapes_and_dtypes_are_refused():
    env = fastvec.make("Ant-v5", 2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must have shape \(2, 8\), got \(2, 7\)"):
        env.step(np.zeros((2, 7)))
    with pytest.raises(TypeError, match="must be real numbers"):
        env.step(np.zeros((2, 8), dtype=complex))
    env.step(np.zeros((2, 8), dtype=np.int64))  # integers are real numbers
    env.close()


def test_huge_actions_are_handled_as_gymnasium_handles_them():
    """Finite actions far out of range: MuJoCo clamps the controls, the control cost is of the actions given."""
    env = fastvec.make("Swimmer-v5", 1)
    ref = gym.make("Swimmer-v5")
    obs, _ = env.reset(seed=4)
    ref.reset(seed=4)
    for a in ([1e6, -1e6], [1e200, 3.0], [-1e300, 1e300]):
        o, r, *_ = env.step(np.array([a]))
        with np.errstate(over="ignore"):  # gymnasium's np.square of 1e300 overflows (to the same inf)
            ro, rr, *_ = ref.step(np.array(a))
        assert_same(o[0], ro, f"obs after {a}")
        assert_same(r[0], np.float64(rr), f"reward after {a}")
    env.close()


def test_an_unstable_simulation_is_reported_as_gymnasium_reports_it(tmp_path):
    """An initial state far out of bounds: MuJoCo's own warning (on stderr and appended to MUJOCO_LOG.TXT in the
    working directory), and the simulation reset by MuJoCo, in both; the envs go on from the same states. Each
    side runs in its own process and directory (MuJoCo prints with C's stdio, flushed at exit)."""
    program = """
import numpy as np, sys
if sys.argv[1] == "fastvec":
    import fastvec
    env = fastvec.make("Hopper-v5", 2, reset_noise_scale=1e11, num_threads=1)  # (two threads' prints may interleave)
else:
    import gymnasium as gym
    env = gym.make_vec("Hopper-v5", 2, vectorization_mode="sync", reset_noise_scale=1e11)
obs, _ = env.reset(seed=7)
for _ in range(3):
    obs, reward, *_ = env.step(np.full((2, 3), 0.5))
np.save(sys.argv[1] + ".npy", np.concatenate([obs.ravel(), reward]))
"""
    out = {}
    for side in ("fastvec", "gymnasium"):
        cwd = tmp_path / side
        cwd.mkdir()
        run = subprocess.run(
            [sys.executable, "-c", program, side], cwd=cwd, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        log = (cwd / "MUJOCO_LOG.TXT").read_text()
        out[side] = (
            re.findall(r"WARNING: (.*)", run.stderr),
            re.findall(r"WARNING [^:]*:\d\d:\d\d \d+: (.*)", log),
            np.load(cwd / f"{side}.npy"),
        )
    printed, logged, values = out["fastvec"]
    assert printed == out["gymnasium"][0] and logged == out["gymnasium"][1]
    assert len(printed) == 2 and "Nan, Inf or huge value in QPOS" in printed[0], printed
    assert printed == logged
    assert_same(values, out["gymnasium"][2], "observations and rewards after the warnings")


def test_unknown_and_mistyped_options_are_named():
    with pytest.raises(
        TypeError, match=r"Hopper-v5 got an unexpected keyword argument 'healty_reward' \(accepted: .*healthy_reward"
    ):
        fastvec.make("Hopper-v5", 1, healty_reward=1.0)
    with pytest.raises(TypeError, match="'healthy_z_range' must be a \\(low, high\\) pair"):
        fastvec.make("Hopper-v5", 1, healthy_z_range=0.5)
    with pytest.raises(TypeError, match="'healthy_z_range' must hold numbers"):
        fastvec.make("Hopper-v5", 1, healthy_z_range=("a", 1.0))
    with pytest.raises(ValueError, match="'healthy_z_range' must not hold NaN"):
        fastvec.make("Hopper-v5", 1, healthy_z_range=(math.nan, 1.0))
    with pytest.raises(TypeError, match="'xml_file' must be a path"):
        fastvec.make("Hopper-v5", 1, xml_file=3)
    with pytest.raises(TypeError, match="'main_body' must be an int or a name"):
        fastvec.make("Ant-v5", 1, main_body=1.5)
    with pytest.raises(ValueError, match="frame_skip must be an integer"):
        fastvec.make("Ant-v5", 1, frame_skip=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'camera'"):  # (camera_id's text: internal)
        fastvec.make("Ant-v5", 1, camera="index:0")


def test_missing_or_broken_models_are_errors_naming_the_path(tmp_path):
    missing = tmp_path / "nope.xml"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
        fastvec.make("Hopper-v5", 1, xml_file=str(missing))
    with pytest.raises(FileNotFoundError, match=r"no MuJoCo model file .*assets/nope\.xml"):
        fastvec.make("Hopper-v5", 1, xml_file="nope.xml")
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body></mujoco>")
    with pytest.raises(ValueError, match=f"MuJoCo cannot load {re.escape(str(broken))}"):
        fastvec.make("Hopper-v5", 1, xml_file=str(broken))
    with pytest.raises(ValueError, match="is not a file"):
        fastvec.make("Hopper-v5", 1, xml_file=str(tmp_path))
    with pytest.raises(ValueError, match="no body named 'fingertip'"):
        fastvec.make("Reacher-v5", 1, xml_file="hopper.xml")
    with pytest.raises(ValueError, match="main_body: the model has no body named 'nose'"):
        fastvec.make("Ant-v5", 1, main_body="nose")
    with pytest.raises(ValueError, match="main_body: the model has no body named '1'"):
        fastvec.make("Ant-v5", 1, main_body="1")  # a name, as gymnasium's data.body("1") takes it
    with pytest.raises(ValueError, match="'main_body' must be a body index >= 0 or a body name, got -1"):
        fastvec.make("Ant-v5", 1, main_body=-1)
    with pytest.raises(ValueError, match="main_body 99 is out of range"):
        fastvec.make("Ant-v5", 1, main_body=99)
    with pytest.raises(ValueError, match=f"main_body {10**30} is out of range"):
        fastvec.make("Ant-v5", 1, main_body=10**30)
    fastvec.make("Hopper-v5", 1).close()  # and nothing is left broken


def test_a_home_directory_of_no_user_is_a_missing_file_naming_the_option_and_path():
    """``~user/...`` of a user that does not exist stays as it is (gymnasium's os.path.expanduser leaves it), so it
    is a missing model file, named with the option, not a bare error about home directories."""
    with pytest.raises(
        FileNotFoundError,
        match=r"'xml_file': no MuJoCo model file ~nosuchuser/hopper\.xml \(~nosuchuser is no user's home",
    ):
        fastvec.make("Hopper-v5", 1, xml_file="~nosuchuser/hopper.xml")
    fastvec.make("Hopper-v5", 1).close()  # and nothing is left broken


def test_pools_of_one_model_share_it_and_keep_their_own_states():
    """Two pools of one model share the compiled model (each env has its own mjData) and do not disturb each
    other: envs seeded alike are alike."""
    a = fastvec.make("Humanoid-v5", 3, seed=0)
    b = fastvec.make("Humanoid-v5", 2, seed=0)
    oa, _ = a.reset()
    ob, _ = b.reset()
    np.testing.assert_array_equal(oa[:2], ob)
    a.close(), b.close()


def test_gymnasium_make_gives_one_env_as_gymnasium_s():
    """gymnasium.make("fastvec/Hopper-v5"): one env whose episodes are gymnasium's Hopper-v5's (TimeLimit, the
    reset and step infos as dicts), also through gymnasium's sync and async vector envs."""
    ours, ref = gym.make("fastvec/Hopper-v5"), gym.make("Hopper-v5")
    rng = np.random.default_rng(5)
    for episode in range(3):
        obs, info = ours.reset(seed=episode)
        want, want_info = ref.reset(seed=episode)
        assert_same(obs, want, "reset obs")
        assert info.keys() == want_info.keys() and all(info[k] == want_info[k] for k in info)
        for t in range(1000):
            a = _actions(rng, ours.action_space, 1)[0]
            obs, reward, term, trunc, info = ours.step(a)
            want, want_reward, want_term, want_trunc, want_info = ref.step(a)
            assert_same(obs, want, f"episode {episode} step {t} obs")
            assert_same(np.float64(reward), np.float64(want_reward), f"episode {episode} step {t} reward")
            assert (term, trunc) == (want_term, want_trunc)
            assert info.keys() == want_info.keys() and all(np.array_equal(info[k], want_info[k]) for k in info)
            if term or trunc:
                break
    ours.close(), ref.close()
    for mode in ("sync", "async"):
        vec = gym.make_vec("fastvec/Hopper-v5", 2, vectorization_mode=mode)
        ref_vec = gym.make_vec("Hopper-v5", 2, vectorization_mode=mode)
        assert_same(vec.reset(seed=1)[0], ref_vec.reset(seed=1)[0], f"{mode} reset")
        a = np.full((2, 3), 0.2)
        for t in range(20):
            assert_same(vec.step(a)[0], ref_vec.step(a)[0], f"{mode} step {t}")
        vec.close(), ref_vec.close()


def test_option_values_out_of_float64_are_named():
    with pytest.raises(ValueError, match="'healthy_z_range' is too large for a float64"):
        fastvec.make("Hopper-v5", 1, healthy_z_range=(2**1100, 1.0))
    with pytest.raises(ValueError, match="'ctrl_cost_weight' is too large for a float64"):
        fastvec.make("Hopper-v5", 1, ctrl_cost_weight=2**1100)
    with pytest.raises(ValueError, match="reset_noise_scale must be in"):
        fastvec.make("Hopper-v5", 1, reset_noise_scale=1e308)  # gymnasium's uniform(-s, s) overflows there
    env = fastvec.make("Ant-v5", 1)
    assert env.spec.kwargs["main_body"] == 1 and fastvec.registry.lookup("Ant-v5").options["main_body"] == 1
    env.close()


# A model of one sliding box and one motor: smaller than what every env but the pendulums reads.
ONE_SLIDER = """<mujoco><worldbody><body name="box"><joint name="x" type="slide" axis="1 0 0"/>
<geom type="box" size=".1 .1 .1" mass="1"/></body></worldbody>
<actuator><motor joint="x" ctrlrange="-1 1"/></actuator></mujoco>"""


@pytest.mark.parametrize("env_id", MUJOCO_IDS)
def test_a_model_too_small_for_the_env_is_refused_naming_what_it_lacks(env_id, tmp_path):
    """A user's model of another robot, with fewer positions, velocities, bodies or sites than the env reads, is a
    ValueError naming xml_file (never a read out of bounds); HalfCheetah reads only qpos[0], which it has."""
    path = tmp_path / "slider.xml"
    path.write_text(ONE_SLIDER)
    if env_id == "HalfCheetah-v5":
        env = fastvec.make(env_id, 2, xml_file=str(path))
        env.reset(seed=0)
        assert env.step(np.ones((2, 1)))[0].shape == (2, 1)  # qpos[1:] (nothing) and qvel
        env.close()
        return
    with pytest.raises(ValueError, match=r"xml_file: .*(the model has 1 position|no body named|has none)"):
        fastvec.make(env_id, 2, xml_file=str(path))


def test_a_mujoco_fatal_error_is_the_env_s_error_and_the_process_goes_on(tmp_path):
    """MuJoCo's fatal errors (here: a model whose arena is too small to step) end the process by default;
    fastvec raises them as the env's error, as gymnasium raises mujoco.FatalError, and the pool stays usable."""
    text = (fastvec.mujoco_models.assets_dir() / "half_cheetah.xml").read_text()
    tiny = tmp_path / "tiny.xml"
    tiny.write_text(text.replace('<mujoco model="cheetah">', '<mujoco model="cheetah"><size memory="3K"/>'))
    assert "memory" in tiny.read_text()
    env = fastvec.make("HalfCheetah-v5", 2, xml_file=str(tiny))
    with pytest.raises(fastvec.EnvError, match=r"env 0 raised: MuJoCo: .*"):
        env.reset(seed=0)
    with pytest.raises(fastvec.EnvError, match="MuJoCo"):
        env.reset(seed=0)  # still too small, and still an error, not an exit
    env.close()
    ok = fastvec.make("HalfCheetah-v5", 2)
    ok.reset(seed=0)
    ok.step(np.zeros((2, 6)))
    ok.close()


def test_each_info_mask_is_an_array_of_its_own():
    env = fastvec.make("Hopper-v5", 3, autoreset_mode="same_step", seed=0)
    env.reset()
    for _ in range(200):
        *_, info = env.step(np.full((3, 3), 1.0))
        if "final_info" in info:
            break
    masks = [v for k, v in info.items() if k.startswith("_")] + [
        v for k, v in info["final_info"].items() if k.startswith("_")
    ]
    assert len(masks) > 4
    for i, m in enumerate(masks):  # no two share memory: changing one in place changes no other
        assert not any(np.shares_memory(m, other) for other in masks[i + 1 :])
    env.close()


def test_norms_sum_as_this_numpy_does():
    """numpy's dot of a short vector is OpenBLAS's ddot, whose rounding depends on the kernel it picked for the CPU
    and on OpenBLAS's release (fastvec.mujoco_models.DOT_KINDS): the probe's vectors tell the kinds apart, its
    answer is the one that reproduces numpy's dot on random 2- and 3-vectors here, and fastvec was set to it when
    imported (the envs' distance_from_origin and Reacher's/Pusher's rewards, compared with gymnasium's above, are
    those norms)."""
    from fastvec.mujoco_models import DOT_KINDS, DOT_PROBES, numpy_dot_kind, self_dots

    two, three = (self_dots(v) for v in DOT_PROBES)
    assert two["fused"] != two["separate"] == two["two_lanes"], two
    assert len(set(three.values())) == 3, three
    rng = np.random.default_rng(0)
    matches = dict.fromkeys(DOT_KINDS, 0)
    vectors = [rng.standard_normal(n) * rng.uniform(0.01, 30) for n in (2, 3) for _ in range(300)]
    for a in vectors:
        got = float(a.dot(a))
        for kind, value in self_dots(a.tolist()).items():
            matches[kind] += got == value
    probed = numpy_dot_kind()
    assert probed is not None, f"this numpy's dot sums none of the ways {DOT_KINDS}: {matches}"
    assert matches[probed] == len(vectors), matches
    assert all(matches[kind] < len(vectors) for kind in DOT_KINDS if kind != probed), matches  # they differ here
    # Swimmer's info: distance_from_origin is np.linalg.norm of (x_position, y_position), both in the info (with the
    # other rounding about one in ten of these values differs in the last bit: 114 of 1,200 in 300 steps).
    env = fastvec.make("Swimmer-v5", 4, seed=0)
    env.reset()
    actions = np.random.default_rng(1).uniform(-1, 1, (100, 4, 2))
    for a in actions:
        _, _, _, _, info = env.step(a)
        xy = np.stack([info["x_position"], info["y_position"]], axis=1)
        want = [np.linalg.norm(row, ord=2) for row in xy]
        assert info["distance_from_origin"].tolist() == want
    env.close()


@pytest.mark.parametrize(
    ("callback", "order", "num_threads"),
    [
        ("control", "before_make", 1),
        ("control", "before_make", 2),
        ("control", "before_step", 1),
        ("control", "before_step", 2),
        ("passive", "before_make", 2),
        ("passive", "before_step", 2),
    ],
)
def test_a_python_callback_set_through_mujoco_s_bindings_is_refused_by_name(callback, order, num_threads):
    """mujoco's Python bindings run a Python callback (mujoco.set_mjcb_control(f), ...) only on the MjData they
    made, and report any other as a MuJoCo error: fastvec refuses to make or step its envs while one is set, with
    an error naming it (the process used to die at the next step, or make() blamed the model file), and the pool
    steps as before once it is removed. In a subprocess: a crash fails the test instead of ending pytest."""
    out = run_python(
        f"""
        import numpy as np
        import mujoco
        import fastvec

        calls = []
        def callback(m, d):
            calls.append(1)

        name = "mjcb_{callback}"
        def refused(error):
            assert name in str(error) and "Python function" in str(error), repr(error)
            assert "mujoco.set_{"mjcb_" + callback}(None)" in str(error), repr(error)

        if "{order}" == "before_make":
            mujoco.set_{"mjcb_" + callback}(callback)
            try:
                fastvec.make("Hopper-v5", 2, num_threads={num_threads}, seed=0)
            except RuntimeError as error:
                refused(error)
            else:
                raise AssertionError("make() took the callback")
            mujoco.set_{"mjcb_" + callback}(None)
            env = fastvec.make("Hopper-v5", 2, num_threads={num_threads}, seed=0)
        else:
            env = fastvec.make("Hopper-v5", 2, num_threads={num_threads}, seed=0)
            env.reset(seed=0)
            mujoco.set_{"mjcb_" + callback}(callback)
            try:
                env.step(np.zeros((2, 3)))
            except fastvec.EnvError as error:
                refused(error)
            else:
                raise AssertionError("step() took the callback")
            for _ in range(2):  # (an env that raised is reset before it steps again) refused each time
                try:
                    env.reset(seed=0)
                except fastvec.EnvError as error:
                    refused(error)
                else:
                    raise AssertionError("reset() took the callback")
            mujoco.set_{"mjcb_" + callback}(None)
        assert not calls
        # usable again, and stepping as a pool that never saw the callback
        fresh = fastvec.make("Hopper-v5", 2, num_threads={num_threads}, seed=0)
        for e in (env, fresh):
            e.reset(seed=0)
        for _ in range(3):
            a, b = env.step(np.full((2, 3), 0.5)), fresh.step(np.full((2, 3), 0.5))
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        env.close()
        fresh.close()
        print("ok")
        """
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), (
        f"exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    )


def test_a_c_function_callback_runs_on_fastvec_s_envs():
    """A C function (here a ctypes one) set as a callback is MuJoCo's to call with any mjData: it runs, in the
    pool's threads, and is not refused. In a subprocess, as above."""
    out = run_python(
        """
        import ctypes
        import numpy as np
        import mujoco
        import fastvec

        calls = []
        callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(lambda m, d: calls.append(1))
        env = fastvec.make("Hopper-v5", 2, num_threads=2, seed=0)
        env.reset(seed=0)
        mujoco.set_mjcb_control(callback)
        env.step(np.zeros((2, 3)))
        mujoco.set_mjcb_control(None)
        assert calls, "the callback did not run"
        env.close()
        print("ok")
        """
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), (
        f"exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    )
