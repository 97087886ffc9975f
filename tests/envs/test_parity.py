"""Parity of fastvec's native classic-control and toy-text envs with gymnasium's reference classes.

Three levels:

* reset: initial observations are bitwise equal to the reference seeded the same way;
* one step: the reference is put into the state fastvec reports before every step, given the
  same action, and must produce the same next observation, reward and termination;
* whole trajectories: fastvec next to ``gymnasium.make_vec(id, vectorization_mode="sync")``
  (TimeLimit + next-step autoreset) with identical seeds and actions.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from conftest import GYMNASIUM_TOY_TEXT_IDS, TAXI_ID

import fastvec

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)

# Every native classic-control env (the registry's non-Atari ids), against gymnasium's class of the same id.
CLASSIC_CONTROL = [e for e in fastvec.list_envs() if not fastvec.registry.lookup(e).family]
CONTINUOUS = {e for e in CLASSIC_CONTROL if isinstance(fastvec.make(e, 1).single_action_space, gym.spaces.Box)}

# Env-option variants that the reference constructors accept under the same names.
OPTION_CASES = [
    ("Acrobot-v1", {}),
    ("CartPole-v1", {}),
    ("CartPole-v1", {"sutton_barto_reward": True}),
    ("MountainCar-v0", {}),
    ("MountainCar-v0", {"goal_velocity": 0.01}),
    ("MountainCarContinuous-v0", {}),
    ("MountainCarContinuous-v0", {"goal_velocity": 0.01}),
    ("Pendulum-v1", {}),
    ("Pendulum-v1", {"g": 9.81}),
]


def _case_id(case: tuple[str, dict]) -> str:
    env_id, kwargs = case
    return env_id + "".join(f"-{k}={v}" for k, v in kwargs.items())


# Differences in float32 ulps at max(|value|, floor). A component that passes through zero inherits the
# absolute rounding error of the terms it is computed from, which are as large as the component's range:
# ``floor`` is the observation-space bound of each component (1 where unbounded, and at least 1).
def _ulps(a: np.ndarray, b: np.ndarray, floor: np.ndarray | float = 1.0) -> np.ndarray:
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)).astype(np.float32), np.float32(floor))
    return np.abs(a.astype(np.float64) - b.astype(np.float64)) / np.spacing(scale).astype(np.float64)


def _ulp_floor(space: gym.spaces.Box) -> np.ndarray:
    high = np.where(np.isfinite(space.high), np.abs(space.high), 1.0)
    return np.maximum(high, 1.0).astype(np.float32)


# One-step tolerance, in float32 ulps (see _ulps). The state we inject into the reference
# is fastvec's float64 state rounded to float32: off by <= 1/2 ulp (2**-24 ~ 6e-8 relative). One step
# (dt <= 0.2) amplifies that by at most ~2x -> 1 ulp; both sides round their float64 result to
# float32 (<= 1/2 ulp each) -> 2 ulps; and under NumPy 2 (NEP 50) the reference does a few
# intermediate products in float32 (Pendulum's 3.0*u and 0.001*u**2, MountainCarContinuous's
# force*power and 3*position) -> +1 ulp. Measured worst case over ~140k steps per env: 1.5 ulp.
STEP_ULPS = 3.0
# A termination flag may legitimately differ only if the reference's next state lies within this
# distance of a termination threshold: the injected state is off by < 1e-6 absolute (a few ulps of
# values <= 4.8), so only states closer than that to the threshold can be classified differently.
NEAR_THRESHOLD = 1e-5


def _seeded(seed: int) -> np.random.Generator:
    """The generator ``gymnasium.Env.reset(seed=seed)`` gives an env (env ``i`` of a pool reset with int ``s``
    gets ``s + i``, gymnasium's convention)."""
    return gym.utils.seeding.np_random(seed)[0]


def _reference(env_id: str, **kwargs) -> gym.Env:
    return gym.make(env_id, **kwargs).unwrapped


def _ref_action(env_id: str, action: np.ndarray):
    return np.asarray(action, dtype=np.float32) if env_id in CONTINUOUS else int(action)


def _policy(env_id: str, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Seeded, partly random actions that reach the terminal states (and, for continuous envs, go
    outside the action space: clipping must happen exactly where the reference clips)."""
    n = len(obs)
    explore = rng.random(n) < 0.25
    if env_id == "CartPole-v1":
        return rng.integers(0, 2, n)
    if env_id == "MountainCar-v0":  # pump energy: push along the velocity
        return np.where(explore, rng.integers(0, 3, n), np.where(obs[:, 1] >= 0, 2, 0))
    if env_id == "Acrobot-v1":  # torque against the first joint's velocity swings the tip up
        return np.where(explore, rng.integers(0, 3, n), np.where(obs[:, 4] >= 0, 0, 2))
    high = 1.0 if env_id == "MountainCarContinuous-v0" else 2.0
    # exact bounds, the float32 neighbours just outside them, and values far outside
    edges = np.array([high, np.nextafter(np.float32(high), np.float32(np.inf)), 3.0, 1.5 * high], np.float32)
    magnitude = np.where(rng.random(n) < 0.5, rng.uniform(0, 3, n), rng.choice(edges, n))
    if env_id == "MountainCarContinuous-v0":
        sign = np.where(explore, rng.choice([-1.0, 1.0], n), np.where(obs[:, 1] >= 0, 1.0, -1.0))
    else:
        sign = rng.choice([-1.0, 1.0], n)
    return (sign * magnitude).astype(np.float32)[:, None]


def _inject(env_id: str, ref: gym.Env, obs: np.ndarray) -> None:
    """Puts the reference into the state behind the (float32) observation ``obs``."""
    o = obs.astype(np.float64)
    if env_id == "CartPole-v1":
        ref.state = o.copy()
        ref.steps_beyond_terminated = None
    elif env_id == "MountainCar-v0":
        ref.state = o.copy()  # the reference keeps float64
    elif env_id == "MountainCarContinuous-v0":
        ref.state = obs.astype(np.float32)  # the reference keeps float32 after a step
    elif env_id == "Pendulum-v1":
        ref.state = np.array([math.atan2(o[1], o[0]), o[2]])
    elif env_id == "Acrobot-v1":
        ref.state = np.array([math.atan2(o[1], o[0]), math.atan2(o[3], o[2]), o[4], o[5]])
    else:
        raise AssertionError(env_id)


def _threshold_distance(env_id: str, ref: gym.Env) -> float:
    """Distance of the reference's (post-step) state to its nearest termination threshold."""
    s = np.asarray(ref.state, dtype=np.float64)
    if env_id == "CartPole-v1":
        return min(abs(abs(s[0]) - ref.x_threshold), abs(abs(s[2]) - ref.theta_threshold_radians))
    if env_id in ("MountainCar-v0", "MountainCarContinuous-v0"):
        return min(abs(s[0] - ref.goal_position), abs(s[1] - ref.goal_velocity))
    if env_id == "Acrobot-v1":
        return abs(-math.cos(s[0]) - math.cos(s[1] + s[0]) - 1.0)
    return math.inf  # Pendulum never terminates


# ---------------------------------------------------------------------------------------------
# reset


def _assert_reset_obs_equal(env_id: str, got: np.ndarray, ref: gym.Env, expected: np.ndarray) -> int:
    """Asserts fastvec's reset observation ``got`` equals the reference's ``expected`` bitwise.

    Acrobot is the one explained exception, returned as a count: the reference stores its reset state
    as float32 and so evaluates cos/sin of it with NumPy's float32 kernels, which are not correctly
    rounded; fastvec evaluates them in float64 and rounds once. There the velocities (which are the
    state) must still be bitwise equal, fastvec's cos/sin must be exactly float32(cos(float64(state)))
    and within 1 ulp of the reference's.
    """
    if env_id != "Acrobot-v1":
        np.testing.assert_array_equal(got, expected)
        return 0
    state = np.asarray(ref.state)
    assert state.dtype == np.float32
    np.testing.assert_array_equal(got[4:], state[2:])
    s64 = state.astype(np.float64)
    trig = np.array([np.cos(s64[0]), np.sin(s64[0]), np.cos(s64[1]), np.sin(s64[1])]).astype(np.float32)
    np.testing.assert_array_equal(got[:4], trig)
    assert np.all(np.abs(got[:4] - expected[:4]) <= np.spacing(np.abs(expected[:4])))
    return int(np.any(got != expected))


@pytest.mark.parametrize("env_id", CLASSIC_CONTROL)
def test_reset_list_of_seeds_matches_reference(env_id):
    n = 100
    env = fastvec.make(env_id, n, seed=0)
    ref = _reference(env_id)
    rng = np.random.default_rng(list(env_id.encode()))
    seed_sets = [
        list(range(n)),
        [int(s) for s in rng.integers(0, 2**63, n, dtype=np.int64)],
        [2**64 - 1 - i for i in range(n)],  # the top of the accepted range
    ]
    inexact = 0
    for seeds in seed_sets:
        obs, info = env.reset(seed=seeds)
        assert "env_id" not in info  # sync: rows in env order
        assert obs.dtype == np.float32
        for i, s in enumerate(seeds):
            expected, _ = ref.reset(seed=s)
            inexact += _assert_reset_obs_equal(env_id, obs[i], ref, expected)
    # An unseeded reset continues every env's generator, as an unseeded gymnasium reset does.
    obs, _ = env.reset(seed=seed_sets[0])
    obs2, _ = env.reset()
    for i, s in enumerate(seed_sets[0]):
        ref.reset(seed=s)
        expected, _ = ref.reset()
        inexact += _assert_reset_obs_equal(env_id, obs2[i], ref, expected)
    assert inexact <= len(seed_sets) * n * 0.02  # Acrobot: rare 1-ulp cos/sin differences only


def test_reference_reset_without_seed_uses_existing_generator():
    """The parity tests' unseeded resets rely on this gymnasium behaviour: an unseeded reset continues the
    generator that the last seeded one made."""
    ref = _reference("CartPole-v1")
    ref.reset(seed=5 + 3)
    gen = ref.np_random
    ref.reset()
    assert ref.np_random is gen
    expected_gen = _seeded(5 + 3)
    expected_gen.uniform(-0.05, 0.05, 4)  # the seeded reset's draw
    np.testing.assert_array_equal(ref.state, expected_gen.uniform(-0.05, 0.05, 4))


@pytest.mark.parametrize("env_id", CLASSIC_CONTROL)
def test_reset_int_seed_matches_reference(env_id):
    n = 64
    ref = _reference(env_id)
    inexact = 0
    # env i is seeded with s + i, which must stay below 2**64: 2**64 - n is the top of the accepted range
    with pytest.raises(ValueError, match="seed"):
        fastvec.make(env_id, n, seed=2**64 - n + 1)
    for make_seed, reset_seed in [(0, 1), (12345, 2**32 + 7), (2**64 - n, 987654321)]:
        env = fastvec.make(env_id, n, seed=make_seed)
        # make(seed=s) seeds each env's first reset (env i with s + i); reset(seed=s) reseeds env i with s + i;
        # then an unseeded reset continues the streams.
        for seed, reset_kwargs in [(make_seed, {}), (reset_seed, {"seed": reset_seed})]:
            first, _ = env.reset(**reset_kwargs)
            second, _ = env.reset()
            for i in range(n):
                expected, _ = ref.reset(seed=seed + i)
                inexact += _assert_reset_obs_equal(env_id, first[i], ref, expected)
                expected, _ = ref.reset()
                inexact += _assert_reset_obs_equal(env_id, second[i], ref, expected)
    assert inexact <= 12 * n * 0.02


# ---------------------------------------------------------------------------------------------
# one step from the same state


@pytest.mark.parametrize("case", OPTION_CASES, ids=_case_id)
def test_single_step_matches_reference(case):
    env_id, kwargs = case
    n, steps = 16, 900
    env = fastvec.make(env_id, n, seed=3, **kwargs)
    ref = _reference(env_id, **kwargs)
    floor = _ulp_floor(ref.observation_space)
    max_steps = gym.spec(env_id).max_episode_steps
    assert env.max_episode_steps == max_steps
    rng = np.random.default_rng(11)
    obs, _ = env.reset()
    after_end = np.zeros(n, bool)  # the next step of these envs is their autoreset
    elapsed = np.zeros(n, int)
    compared = terminations = truncations = near = 0
    far_mismatch, worst_ulps = [], 0.0
    for t in range(steps):
        actions = _policy(env_id, obs, rng)
        nobs, reward, terminated, truncated, _ = env.step(actions)
        for i in range(n):
            if after_end[i]:
                # next-step autoreset: a reset observation, no reward, no flags
                assert (reward[i], terminated[i], truncated[i]) == (0.0, False, False)
                elapsed[i] = 0
                continue
            elapsed[i] += 1
            assert truncated[i] == (elapsed[i] == max_steps), (t, i, elapsed[i])
            _inject(env_id, ref, obs[i])
            ref_obs, ref_reward, ref_terminated, _, _ = ref.step(_ref_action(env_id, actions[i]))
            ulps = _ulps(nobs[i], ref_obs, floor)
            worst_ulps = max(worst_ulps, float(ulps.max()))
            assert np.all(ulps <= STEP_ULPS), (t, i, obs[i], actions[i], nobs[i], ref_obs)
            if env_id == "Pendulum-v1":  # the cost depends on the (float32-rounded) injected state
                assert _ulps(np.float32(ref_reward), reward[i]) <= STEP_ULPS, (t, i, reward[i], ref_reward)
            else:  # the reward depends only on the action and the termination: exact
                assert reward[i] == np.float32(ref_reward), (t, i, reward[i], ref_reward)
            if bool(terminated[i]) != ref_terminated:
                if _threshold_distance(env_id, ref) < NEAR_THRESHOLD:
                    near += 1
                else:
                    far_mismatch.append((t, i, obs[i], actions[i], nobs[i], ref_obs))
            compared += 1
        terminations += int(terminated.sum())
        truncations += int(truncated.sum())
        after_end = terminated | truncated
        obs = nobs
    assert far_mismatch == []
    assert near <= compared * 1e-3  # only a handful of states can be that close to a threshold
    assert compared > n * steps * 0.9
    # the comparison must have covered episode ends
    if env_id == "Pendulum-v1":
        assert terminations == 0 and truncations > 0
    else:
        assert terminations > 20, terminations
    print(
        f"{_case_id(case)}: {compared} steps, worst {worst_ulps} ulp, "
        f"{terminations} terminations, {truncations} truncations, {near} near-threshold flag mismatches"
    )


@pytest.mark.parametrize("env_id", sorted(CONTINUOUS))
def test_out_of_range_actions_are_clipped_like_the_reference(env_id):
    """Two pools from the same seed, one fed raw actions (up to +-3, and the float32 neighbours of the
    bounds), one the same actions clipped to the action space: the dynamics see only the clipped
    action, so observations and flags are bitwise equal. Pendulum's cost uses the clipped torque
    (rewards equal); MountainCarContinuous's reward is 100*terminated - 0.1*raw_action**2."""
    n, steps = 8, 1200
    raw_env = fastvec.make(env_id, n, seed=21)
    clipped_env = fastvec.make(env_id, n, seed=21)
    low, high = raw_env.single_action_space.low, raw_env.single_action_space.high
    obs, _ = raw_env.reset()
    obs_c, _ = clipped_env.reset()
    np.testing.assert_array_equal(obs, obs_c)
    rng = np.random.default_rng(5)
    outside = 0
    after_end = np.zeros(n, bool)
    for _ in range(steps):
        actions = _policy(env_id, obs, rng)
        clipped = np.clip(actions, low, high)
        outside += int((actions != clipped).sum())
        obs, reward, terminated, truncated, _ = raw_env.step(actions)
        obs_c, reward_c, terminated_c, truncated_c, _ = clipped_env.step(clipped)
        np.testing.assert_array_equal(obs, obs_c)
        np.testing.assert_array_equal(terminated, terminated_c)
        np.testing.assert_array_equal(truncated, truncated_c)
        if env_id == "Pendulum-v1":
            np.testing.assert_array_equal(reward, reward_c)
        else:
            raw = actions[:, 0].astype(np.float64)
            expected = np.where(terminated, 100.0, 0.0) - np.array([math.pow(a, 2) * 0.1 for a in raw])
            np.testing.assert_array_equal(reward[~after_end], expected.astype(np.float32)[~after_end])
        after_end = terminated | truncated
    assert outside > n * steps * 0.3


# ---------------------------------------------------------------------------------------------
# whole trajectories next to gymnasium's SyncVectorEnv


def _run_side_by_side(
    env_id: str,
    kwargs: dict,
    n: int,
    steps: int,
    *,
    float64_reference: bool,
    on_step=None,
    episode_stats=False,
    first_seed: int = 1000,
    policy=None,
):
    """Steps fastvec and ``gymnasium.make_vec(..., "sync")`` with the same seeds and actions (chosen
    from fastvec's observations) and hands every step's results to ``on_step``.

    ``float64_reference`` feeds the reference float64 actions (same values) and float64 state, so that
    NumPy 2's float32 promotion of ``np.float32 * python float`` doesn't apply: the reference then does
    all of its arithmetic in float64, as fastvec does (and as the reference did under NumPy 1.x).
    """
    env = fastvec.make(env_id, n, episode_stats=episode_stats, **kwargs)
    ref = gym.make_vec(env_id, num_envs=n, vectorization_mode="sync", **kwargs)
    seeds = [first_seed + 17 * i for i in range(n)]
    obs, info = env.reset(seed=seeds)
    ref_obs, ref_info = ref.reset(seed=seeds)
    on_step(-1, None, (obs, None, None, None, info), (ref_obs, None, None, None, ref_info))
    rng = np.random.default_rng(99)
    for t in range(steps):
        actions = _policy(env_id, obs, rng) if policy is None else policy(env_id, obs)
        ref_actions = actions
        if float64_reference and env_id in CONTINUOUS:
            ref_actions = actions.astype(np.float64)
            for e in ref.envs:
                e.unwrapped.state = np.asarray(e.unwrapped.state, dtype=np.float64)
        result = env.step(actions)
        ref_result = ref.step(ref_actions)
        on_step(t, actions, result, ref_result)
        obs = result[0]
    env.close()
    ref.close()


class _EpisodeCheck:
    """Compares fastvec's episode statistics with the reference's rewards and episode lengths."""

    def __init__(self, n: int):
        self.length = np.zeros(n, int)
        self.ret = np.zeros(n)
        self.after_end = np.zeros(n, bool)
        self.episodes = 0

    def __call__(self, result, ref_reward) -> None:
        _, _, terminated, truncated, info = result
        live = ~self.after_end
        self.length[live] += 1
        self.ret[live] += ref_reward[live]
        ended = terminated | truncated
        if ended.any():
            np.testing.assert_array_equal(info["_episode_length"], ended)
            np.testing.assert_array_equal(info["episode_length"][ended], self.length[ended])
            np.testing.assert_allclose(info["episode_return"][ended], self.ret[ended], rtol=1e-6, atol=1e-4)
        else:
            assert "episode_length" not in info
        self.episodes += int(ended.sum())
        self.length[self.after_end] = 0
        self.ret[self.after_end] = 0.0
        self.after_end = ended


@pytest.mark.parametrize("case", OPTION_CASES, ids=_case_id)
def test_trajectory_matches_gymnasium(case):
    """fastvec next to gymnasium's SyncVectorEnv (TimeLimit, next-step autoreset) over 2500 steps and
    many episodes, autoresets included: observations, rewards, flags and episode lengths bitwise equal
    (Acrobot's reset observations apart, see ``_assert_obs_equal``). fastvec's sin, cos and ** are
    libm's, bit for bit (src/envs/fast_math.hpp), as the reference's np.sin, np.cos, math.cos and
    float64-scalar ** are. Pendulum and MountainCarContinuous are fed float64 actions and state so that
    the reference avoids NumPy 2's float32 intermediates (see ``_run_side_by_side``)."""
    env_id, kwargs = case
    n, steps = 8, 2500
    check = _EpisodeCheck(n)
    after_end = [np.ones(n, bool)]

    def on_step(t, actions, result, ref_result):
        _assert_obs_equal(env_id, result[0], ref_result[0], after_end[0], f"step {t}")
        if t < 0:
            after_end[0] = np.zeros(n, bool)
            return
        np.testing.assert_array_equal(result[1], ref_result[1].astype(np.float32), err_msg=f"step {t}")
        np.testing.assert_array_equal(result[2], ref_result[2], err_msg=f"step {t}")
        np.testing.assert_array_equal(result[3], ref_result[3], err_msg=f"step {t}")
        check(result, ref_result[1])
        after_end[0] = result[2] | result[3]

    _run_side_by_side(env_id, kwargs, n, steps, float64_reference=True, on_step=on_step, episode_stats=True)
    assert check.episodes > 2 * n
    print(f"{_case_id(case)}: {check.episodes} episodes, bitwise equal")


def _controller(env_id: str, obs: np.ndarray) -> np.ndarray:
    """Deterministic feedback that keeps episodes long and, for CartPole and Pendulum, the state near an
    unstable equilibrium for hundreds of steps (Acrobot: chaotic motion), where a last-bit difference in any
    operation grows until it shows in the float32 observations."""
    if env_id == "CartPole-v1":  # PD on the pole's angle: balances to the 500-step limit
        return (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)
    if env_id == "Pendulum-v1":  # pump energy while low, PD near the top
        theta = np.arctan2(obs[:, 1], obs[:, 0])
        pd = np.clip(-(10.0 * theta + 2.0 * obs[:, 2]), -2.0, 2.0)
        return np.where(obs[:, 0] > 0.8, pd, 2.0 * np.sign(obs[:, 2] + 1e-3)).astype(np.float32)[:, None]
    if env_id == "Acrobot-v1":  # torque along the second joint's velocity: long, chaotic swinging
        return np.where(obs[:, 5] >= 0, 2, 0)
    if env_id == "MountainCar-v0":  # push along the velocity, but only every other car: slower pumping
        return np.where(obs[:, 1] >= 0, 2, 0) * (np.arange(len(obs)) % 2) + (1 - np.arange(len(obs)) % 2)
    assert env_id == "MountainCarContinuous-v0"
    return np.where(obs[:, 1] >= 0, 0.3, -0.3).astype(np.float32)[:, None]


def _assert_obs_equal(env_id: str, got: np.ndarray, expected: np.ndarray, reset_rows: np.ndarray, msg: str) -> None:
    """Bitwise equality; Acrobot's reset observations are the one exception (see ``_assert_reset_obs_equal``:
    the reference's float32 cos/sin of its float32 reset state), checked there to their precise extent."""
    if env_id != "Acrobot-v1" or not reset_rows.any():
        np.testing.assert_array_equal(got, expected, err_msg=msg)
        return
    np.testing.assert_array_equal(got[~reset_rows], expected[~reset_rows], err_msg=msg)
    np.testing.assert_array_equal(got[reset_rows][:, 4:], expected[reset_rows][:, 4:], err_msg=msg)
    assert np.all(np.abs(got[reset_rows] - expected[reset_rows]) <= np.spacing(np.abs(expected[reset_rows]))), msg


# (env id, steps, seeds of the first env): thousands of steps, every episode long.
CONTROLLER_CASES = [
    ("CartPole-v1", 3000, [0, 7, 123]),
    ("Pendulum-v1", 2000, [0, 7, 123]),
    ("Acrobot-v1", 2000, [0, 7, 123]),
    ("MountainCar-v0", 2000, [0, 7, 123]),
    ("MountainCarContinuous-v0", 2000, [0, 7, 123]),
]


@pytest.mark.parametrize(("env_id", "steps", "first_seeds"), CONTROLLER_CASES, ids=[c[0] for c in CONTROLLER_CASES])
def test_controlled_trajectory_bitwise_equal_to_gymnasium(env_id, steps, first_seeds):
    """Long episodes under feedback controllers, next to gymnasium's SyncVectorEnv: observations, rewards and
    flags bitwise equal at every step, autoresets included. A random policy ends CartPole episodes within
    ~20 steps, too soon for a last-bit difference to show; a balancing controller keeps the pole near upright
    for 500 steps, and the old inline sin/cos (1 ulp off libm's for ~25% of cos values) showed by step ~150.
    Pendulum and MountainCarContinuous get float64 actions and state (``float64_reference``)."""
    n = 4
    lengths = []

    for first_seed in first_seeds:
        after_end = [np.ones(n, bool)]
        length = np.zeros(n, int)

        def on_step(t, actions, result, ref_result, after_end=after_end, length=length):
            _assert_obs_equal(env_id, result[0], ref_result[0], after_end[0], f"step {t}")
            after_end[0] = np.zeros(n, bool)
            if t < 0:
                return
            np.testing.assert_array_equal(result[1], ref_result[1].astype(np.float32), err_msg=f"step {t}")
            np.testing.assert_array_equal(result[2], ref_result[2], err_msg=f"step {t}")
            np.testing.assert_array_equal(result[3], ref_result[3], err_msg=f"step {t}")
            ended = result[2] | result[3]
            length[:] += 1
            lengths.extend(length[ended])
            length[ended] = -1  # the next step is the autoreset
            after_end[0] = ended

        _run_side_by_side(
            env_id,
            {},
            n,
            steps,
            float64_reference=True,
            on_step=on_step,
            first_seed=first_seed,
            policy=_controller,
        )
    assert len(lengths) >= len(first_seeds) * n
    assert np.mean(lengths) >= 50, lengths  # long episodes: the controllers work
    print(f"{env_id}: {len(lengths)} episodes, mean length {np.mean(lengths):.0f}")


# Whole-trajectory tolerance against the unmodified reference (float32 actions, NumPy 2 promotion) for
# MountainCarContinuous: each step may differ by ~1 float32 ulp of the velocity term (the reference's
# float32 intermediates, see STEP_ULPS), i.e. <= ~6e-8, and an episode carries that for <= 999 steps
# with little amplification (the dynamics are not chaotic): <= ~6e-5 accumulated. Measured: ~1e-5.
# Any real dynamics error (wrong constant, sign or clip) moves observations by >= 1e-3 within a few
# steps. (Pendulum is left out here: its upright equilibrium is unstable, growth rate sqrt(3g/2) ~ 3.9/s,
# so 1-ulp differences grow to ~1e-3 within an episode; its exact parity is the float64 test above.)
DRIFT_ATOL = 1e-4


@pytest.mark.parametrize("case", [c for c in OPTION_CASES if c[0] == "MountainCarContinuous-v0"], ids=_case_id)
def test_trajectory_close_to_unmodified_gymnasium(case):
    env_id, kwargs = case
    n, steps = 8, 2500
    worst = [0.0]
    ends = [0]

    def on_step(t, actions, result, ref_result):
        np.testing.assert_allclose(result[0], ref_result[0], rtol=0, atol=DRIFT_ATOL, err_msg=f"step {t}")
        worst[0] = max(worst[0], float(np.abs(result[0] - ref_result[0]).max()))
        if t < 0:
            return
        # the reward is 100*terminated - 0.1*action**2, independent of the state: exact
        np.testing.assert_array_equal(result[1], ref_result[1].astype(np.float32), err_msg=f"step {t}")
        np.testing.assert_array_equal(result[2], ref_result[2], err_msg=f"step {t}")
        np.testing.assert_array_equal(result[3], ref_result[3], err_msg=f"step {t}")
        ends[0] += int((result[2] | result[3]).sum())

    _run_side_by_side(env_id, kwargs, n, steps, float64_reference=False, on_step=on_step)
    assert ends[0] > n
    print(f"{_case_id(case)}: worst observation drift {worst[0]:.3g}")


# ---------------------------------------------------------------------------------------------
# toy text: whole trajectories, every draw of gymnasium's np_random included

# Every toy-text id of the installed gymnasium with its defaults, and each option gymnasium's class takes (Taxi-v4's
# probabilities where gymnasium has Taxi-v4, from 1.3).
TOY_TEXT_CASES = (
    [(e, {}) for e in GYMNASIUM_TOY_TEXT_IDS]
    + [
        ("FrozenLake-v1", {"is_slippery": False}),
        ("FrozenLake-v1", {"map_name": "8x8"}),
        ("FrozenLake-v1", {"success_rate": 0.75}),
        ("FrozenLake-v1", {"success_rate": 0.1}),  # cumulative sums that stop short of 1: the draw past them is 0
        ("FrozenLake-v1", {"desc": ["SFFHF", "FHSFF", "FFFHG"], "is_slippery": True}),  # two starts
        ("FrozenLake-v1", {"reward_schedule": (2, -1, -0.01)}),
        (TAXI_ID, {"is_rainy": True}),
        (TAXI_ID, {"fickle_passenger": True}),
        (TAXI_ID, {"is_rainy": True, "fickle_passenger": True}),
        ("CliffWalking-v1", {"is_slippery": True}),
        ("Blackjack-v1", {"sab": False}),
        ("Blackjack-v1", {"sab": False, "natural": True}),
    ]
    + (
        [
            ("Taxi-v4", {"is_rainy": True, "rainy_probability": 0.6}),  # lateral (1 - 0.6) / 2: 0.19999999999999998
            ("Taxi-v4", {"fickle_passenger": True, "fickle_probability": 0.9}),
        ]
        if TAXI_ID == "Taxi-v4"
        else []
    )
)


def _toy_text_policy(env_id: str):
    """Seeded random actions; Taxi's mostly among those its action mask allows (gymnasium's own mask of the
    state), so that passengers are picked up, carried (the fickle passenger's moves) and dropped off."""
    rng = np.random.default_rng(5)
    taxi = gym.make(TAXI_ID).unwrapped

    def policy(_, obs):
        n = len(obs[0]) if isinstance(obs, tuple) else len(obs)
        if not env_id.startswith("Taxi"):
            return rng.integers(0, 2 if env_id == "Blackjack-v1" else 4, n)
        masked = [rng.choice(np.flatnonzero(taxi.action_mask(int(s)))) for s in obs]
        return np.where(rng.random(n) < 0.8, masked, rng.integers(0, 6, n))

    return policy


def _assert_info_equal(info: dict, ref_info: dict, msg: str) -> None:
    """Every key of the reference's info (values and ``_key`` masks). A value is compared as the reference's
    dtype holds it: gymnasium's vector env types a key's array by the first env that reports it, so a reset's
    ``prob`` of 1 (a Python int) makes it int64 for that step (fastvec's is float64, as its steps' are)."""
    assert sorted(info) == sorted(ref_info), msg
    for key, expected in ref_info.items():
        np.testing.assert_array_equal(np.asarray(info[key]).astype(expected.dtype), expected, err_msg=f"{msg}: {key}")


@pytest.mark.toy_text
@pytest.mark.parametrize("case", TOY_TEXT_CASES, ids=_case_id)
def test_toy_text_trajectory_bitwise_equal_to_gymnasium(case):
    """fastvec next to gymnasium's SyncVectorEnv (TimeLimit where gymnasium.make has one, next-step autoreset)
    over many episodes from 32 seeds: observations (dtype included), rewards, flags and info equal at every step,
    as they are only if every draw (categorical_sample's random(), Blackjack's and the fickle passenger's
    choice(), Taxi's fickle draw) is taken from the same generator state in the same order."""
    env_id, kwargs = case
    n, steps = 32, 400
    ends = [0, 0]

    def on_step(t, actions, result, ref_result):
        msg = f"step {t}"
        if isinstance(ref_result[0], tuple):  # Blackjack: a tuple of int64 arrays
            assert isinstance(result[0], tuple) and len(result[0]) == len(ref_result[0]), msg
            for got, expected in zip(result[0], ref_result[0], strict=True):
                assert got.dtype == expected.dtype, msg
                np.testing.assert_array_equal(got, expected, err_msg=msg)
        else:
            assert result[0].dtype == ref_result[0].dtype == np.int64, msg
            np.testing.assert_array_equal(result[0], ref_result[0], err_msg=msg)
        _assert_info_equal(result[4], ref_result[4], msg)
        if t < 0:
            return
        assert result[1].dtype == ref_result[1].dtype, msg
        np.testing.assert_array_equal(result[1], ref_result[1], err_msg=msg)
        np.testing.assert_array_equal(result[2], ref_result[2], err_msg=msg)
        np.testing.assert_array_equal(result[3], ref_result[3], err_msg=msg)
        ends[0] += int(result[2].sum())
        ends[1] += int(result[3].sum())

    _run_side_by_side(
        env_id, kwargs, n, steps, float64_reference=False, on_step=on_step, policy=_toy_text_policy(env_id)
    )
    assert ends[0] > 0, ends  # episodes end by termination (and autoreset)
    print(f"{_case_id(case)}: {ends[0]} terminated, {ends[1]} truncated, equal")
