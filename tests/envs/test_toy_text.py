"""fastvec's native toy-text envs (FrozenLake, Taxi, CliffWalking, Blackjack) beyond what the shared harnesses check
(tests/envs/test_parity.py: whole trajectories against gymnasium's; tests/api/test_conformance.py and
tests/core/test_determinism.py: spaces, limits, determinism): ids and options as ``gymnasium.make``'s, and a clear
error for each bad option."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import GYMNASIUM_TOY_TEXT_IDS, TAXI_ID, TOY_TEXT_IDS

import fastvec

pytestmark = [pytest.mark.versions, pytest.mark.toy_text]  # gymnasium's toy text (its options since 1.1 and 1.2)


def test_every_toy_text_id_of_gymnasium_is_native():
    """The installed gymnasium's toy-text ids, and Taxi-v3 (gymnasium 1.2's) and Taxi-v4 (1.3's) whichever is."""
    toy_text = {
        name
        for name, spec in gym.registry.items()
        if isinstance(spec.entry_point, str)
        and spec.entry_point.startswith("gymnasium.envs.toy_text")
        and spec.namespace is None
    }
    assert sorted(toy_text) == GYMNASIUM_TOY_TEXT_IDS
    assert {"Taxi-v3", "Taxi-v4"} <= set(TOY_TEXT_IDS) and set(TOY_TEXT_IDS) - toy_text <= {"Taxi-v3", "Taxi-v4"}


def test_taxi_v4_does_not_drift_where_the_move_is_blocked():
    """gymnasium 1.3's fix of the rain: a taxi driven north into the top edge drifts east or west in Taxi-v3 (the
    blocked move's lateral outcomes), and stays where it is in Taxi-v4, whose rainy_probability sets the odds."""
    drifts = {}
    for env_id in ("Taxi-v3", "Taxi-v4"):
        env = fastvec.make(env_id, 16, is_rainy=True, seed=0)
        obs, _ = env.reset()
        north = np.ones(16, np.int64)
        drifts[env_id] = 0
        for _ in range(60):
            was = obs
            obs = env.step(north)[0]
            drifts[env_id] += int(((was // 100 == 0) & (obs % 100 // 20 != was % 100 // 20)).sum())  # row 0, new col
    assert drifts["Taxi-v3"] > 0 and drifts["Taxi-v4"] == 0, drifts
    env = fastvec.make("Taxi-v4", 16, is_rainy=True, rainy_probability=0.5, seed=0)
    env.reset()
    probs = {float(p) for _ in range(20) for p in env.step(np.zeros(16, np.int64))[4]["prob"]}
    assert probs == {0.5, 0.25}
    with pytest.raises(TypeError, match="unexpected keyword argument 'rainy_probability'"):
        fastvec.make("Taxi-v3", 1, rainy_probability=0.5)


def test_frames_of_a_taxi_the_installed_gymnasium_lacks_are_refused_by_name():
    """gymnasium draws toy text: Taxi-v4's frames need gymnasium 1.3, Taxi-v3's one before it."""
    other = "Taxi-v3" if TAXI_ID == "Taxi-v4" else "Taxi-v4"
    with pytest.raises(ValueError, match=f"render_mode must be None.*gymnasium {gym.__version__} has no {other}"):
        fastvec.make(other, 2, render_mode="rgb_array")
    fastvec.make(other, 2).close()  # without frames it runs


@pytest.mark.parametrize("env_id", GYMNASIUM_TOY_TEXT_IDS)
def test_defaults_are_gymnasium_makes(env_id):
    """Episode limit, reward threshold and options (the keywords gymnasium's class takes, with the defaults
    gymnasium.make gives them: Blackjack-v1's sab=True, FrozenLake8x8-v1's map_name)."""
    spec = gym.spec(env_id)
    entry = fastvec.registry.lookup(env_id)
    assert entry.max_episode_steps == spec.max_episode_steps
    assert entry.reward_threshold == spec.reward_threshold
    ref = gym.make(env_id).unwrapped
    import inspect

    parameters = inspect.signature(type(ref).__init__).parameters
    assert set(entry.options) == set(parameters) - {"self", "render_mode"}
    for name, value in entry.options.items():
        expected = spec.kwargs.get(name, parameters[name].default)
        if name == "reward_schedule":  # None: gymnasium's default, (1, 0, 0)
            assert value is None and expected == (1, 0, 0)
        else:
            assert value == expected, name


@pytest.mark.parametrize(
    ("env_id", "kwargs", "error", "match"),
    [
        ("FrozenLake-v1", {"map_name": "5x5"}, ValueError, "map_name must be '4x4' or '8x8'"),
        ("FrozenLake-v1", {"map_name": 4}, TypeError, "option 'map_name' must be a str"),
        ("FrozenLake-v1", {"map_name": None}, ValueError, "map_name=None with desc=None"),
        ("FrozenLake-v1", {"desc": ["SFF", "FG"]}, ValueError, "desc must be rows of one length"),
        ("FrozenLake-v1", {"desc": ["SFX", "FFG"]}, ValueError, "desc must hold only the tiles"),
        ("FrozenLake-v1", {"desc": ["FFF", "FFG"]}, ValueError, "desc must have a start tile"),
        ("FrozenLake-v1", {"desc": 3}, TypeError, "option 'desc' must be"),
        ("FrozenLake-v1", {"desc": []}, TypeError, "option 'desc' must be"),
        ("FrozenLake-v1", {"success_rate": 1.5}, ValueError, "success_rate must be in"),
        ("FrozenLake-v1", {"is_slippery": 2}, ValueError, "is_slippery must be a bool"),
        ("FrozenLake-v1", {"reward_schedule": (1, 0)}, ValueError, "reward_schedule must be 3 numbers"),
        ("FrozenLake-v1", {"reward_schedule": (1, 0, float("nan"))}, ValueError, "'reward_schedule' must hold finite"),
        ("FrozenLake-v1", {"reward_schedule": "1,0"}, ValueError, "reward_schedule must be 3 numbers"),
        ("Taxi-v3", {"is_rainy": "yes"}, TypeError, "option 'is_rainy' must be a number or bool"),
        ("Taxi-v3", {"fickle": True}, TypeError, "unexpected keyword argument 'fickle'"),
        ("Taxi-v4", {"rainy_probability": 1.5}, ValueError, "rainy_probability must be in"),
        ("CliffWalking-v1", {"is_slippery": 0.5}, ValueError, "is_slippery must be a bool"),
        ("Blackjack-v1", {"natural": 3}, ValueError, "natural must be a bool"),
    ],
)
def test_bad_options_are_named(env_id, kwargs, error, match):
    with pytest.raises(error, match=match):
        fastvec.make(env_id, 2, **kwargs)


@pytest.mark.parametrize("kwargs", [{"desc": ["SFFF", "FHFH", "FFFH", "HFFG"]}, {"desc": "SFFF\nFHFH\nFFFH\nHFFG"}])
def test_desc_as_lines_or_text(kwargs):
    """desc as gymnasium takes it (a list of rows) or as one string of lines: the 4x4 map either way."""
    env, ref = fastvec.make("FrozenLake-v1", 4, seed=3, **kwargs), fastvec.make("FrozenLake-v1", 4, seed=3)
    assert env.single_observation_space == gym.spaces.Discrete(16)
    np.testing.assert_array_equal(env.reset()[0], ref.reset()[0])
    for _ in range(50):
        actions = env.action_space.sample()
        np.testing.assert_array_equal(env.step(actions)[0], ref.step(actions)[0])


def test_desc_sets_the_observation_space():
    env = fastvec.make("FrozenLake-v1", 2, desc=["SFFHF", "FHFFF", "FFFHG"])
    assert env.single_observation_space == gym.spaces.Discrete(15)
    assert env.observation_space == gym.spaces.MultiDiscrete([15, 15])


def test_blackjack_observations_are_a_tuple_of_arrays():
    """As gymnasium's vector envs batch Tuple(Discrete(32), Discrete(11), Discrete(2)): a tuple of int64 arrays,
    one per part; in same-step mode the final observations too."""
    env = fastvec.make("Blackjack-v1", 6, seed=0, autoreset_mode="same_step")
    assert env.single_observation_space == gym.spaces.Tuple(
        (gym.spaces.Discrete(32), gym.spaces.Discrete(11), gym.spaces.Discrete(2))
    )
    obs, _ = env.reset()
    assert isinstance(obs, tuple) and [o.dtype for o in obs] == [np.int64] * 3 and [o.shape for o in obs] == [(6,)] * 3
    _, _, terminated, truncated, info = env.step(np.zeros(6, np.int64))  # stick: every hand ends
    assert terminated.all()
    final = info["final_obs"]  # gymnasium's same-step layout: an object array of each env's observation
    assert final.dtype == object and info["_final_obs"].all()
    for o in final:
        assert isinstance(o, tuple) and env.single_observation_space.contains(tuple(int(v) for v in o))


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [(e, {}) for e in GYMNASIUM_TOY_TEXT_IDS]
    + [("FrozenLake-v1", {"desc": ["SFFHF", "FHFFF", "FFFHG"]}), (TAXI_ID, {"is_rainy": True})],
)
def test_frames_are_gymnasiums(env_id, kwargs):
    """Env by env, every step (autoresets included: gymnasium's env reset, unseeded, where fastvec's autoresets),
    the frame of fastvec's env is the one gymnasium's env of the same options draws: its map, position, last
    action (the elf's and the taxi's direction) and Blackjack's dealer card (its suit and face, drawn at reset)."""
    pytest.importorskip("pygame")  # gymnasium draws toy text with pygame (gymnasium[toy-text])
    n = 3
    env = fastvec.make(env_id, num_envs=n, seed=11, render_mode="rgb_array", **kwargs)
    refs = [gym.make(env_id, render_mode="rgb_array", **kwargs) for _ in range(n)]
    env.reset()
    for i, ref in enumerate(refs):
        ref.reset(seed=11 + i)
    rng = np.random.default_rng(0)
    ended = np.zeros(n, bool)
    episodes = 0
    for t in range(40):
        frames = env.render()
        assert isinstance(frames, tuple) and len(frames) == n
        for i, ref in enumerate(refs):
            want = ref.render()
            assert frames[i].dtype == np.uint8 and frames[i].shape == want.shape
            np.testing.assert_array_equal(frames[i], want, err_msg=f"env {i}, step {t}")
        a = rng.integers(0, env.single_action_space.n, n)
        _, _, term, trunc, _ = env.step(a)
        for i, ref in enumerate(refs):
            if ended[i]:
                ref.reset()
            else:
                ref.step(int(a[i]))
        ended = term | trunc
        episodes += int(ended.sum())
    assert episodes > 0 or env_id.startswith(("Taxi", "CliffWalking"))  # (random walks rarely end those)
    env.close()


@pytest.mark.parametrize("env_id", GYMNASIUM_TOY_TEXT_IDS)
def test_gymnasium_single_env_steps_as_gymnasiums(env_id):
    """``gymnasium.make("fastvec/<id>")``: one env, its observations in its space (Blackjack's a tuple) and equal to
    gymnasium's env seeded the same, episode after episode (reset unseeded: the generator carries on)."""
    one, ref = gym.make(f"fastvec/{env_id}"), gym.make(env_id)
    obs, _ = one.reset(seed=4)
    ref_obs, _ = ref.reset(seed=4)
    rng = np.random.default_rng(1)
    for _ in range(200):
        assert one.observation_space.contains(obs)
        np.testing.assert_array_equal(np.asarray(obs, dtype=np.int64), np.asarray(ref_obs, dtype=np.int64))
        a = int(rng.integers(one.action_space.n))
        obs, reward, terminated, truncated, _ = one.step(a)
        ref_obs, ref_reward, ref_terminated, ref_truncated, _ = ref.step(a)
        assert (reward, terminated, truncated) == (ref_reward, ref_terminated, ref_truncated)
        if terminated or truncated:
            obs, _ = one.reset()
            ref_obs, _ = ref.reset()
