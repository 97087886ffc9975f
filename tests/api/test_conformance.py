"""Gymnasium conformance of every env fastvec lists (new envs are covered by adding them to the registry).

Gymnasium (1.4) has no checker for vector envs (``gymnasium.utils.env_checker.check_env`` takes a
single ``Env``); what it offers and is used here: ``data_equivalence``, ``batch_space`` /
``iterate``, ``make_vec`` and the vector wrappers, which check their inputs themselves.
"""

from __future__ import annotations

import copy

import ale_py
import gymnasium as gym
import numpy as np
import pytest
import shimmy
from conftest import (
    FIXED_START_IDS,
    FLOAT64_REWARD_IDS,
    GYMNASIUM_TOY_TEXT_IDS,
    TOY_TEXT_IDS,
    env_ids_under_test,
    is_dict_obs,
)
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, iterate
from gymnasium.wrappers.vector import DictInfoToList, RecordEpisodeStatistics

import fastvec

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)

gym.register_envs(ale_py)
gym.register_envs(shimmy)  # dm_control/<domain>-<task>-v0
ATARI_IDS = [e for e in fastvec.list_envs() if fastvec.registry.lookup(e).rom]
# The envs of gymnasium's ids, with its reference: toy text's of the installed gymnasium only.
ENV_IDS = [e for e in env_ids_under_test() if e not in TOY_TEXT_IDS or e in GYMNASIUM_TOY_TEXT_IDS]
DICT_OBS_IDS = [e for e in ENV_IDS if is_dict_obs(e)]
# Envs whose episodes may end within a few steps (every Blackjack hand, FrozenLake's holes, Taxi's drop-off): no
# fixed-length episodes under a short time limit.
LONG_EPISODE_IDS = [e for e in ENV_IDS if not e.startswith(("Blackjack", "FrozenLake", "Taxi"))]
BOX_ACTION_ENV_IDS = [e for e in ENV_IDS if isinstance(fastvec.make(e, 1).single_action_space, gym.spaces.Box)]
# dm_control's tasks have no gymnasium id of their own: their reference is dm_control's, through shimmy
# (dm_control/<domain>-<task>-v0).
DM_CONTROL_TASKS = {"CheetahRun-v1": ("cheetah", "run"), "WalkerWalk-v1": ("walker", "walk")}


def _gym_spec(env_id: str):
    if is_dict_obs(env_id):  # dm_control has no reward threshold: shimmy's spec says None, as fastvec's
        domain, task = DM_CONTROL_TASKS[env_id]
        return gym.spec(f"dm_control/{domain}-{task}-v0")
    return gym.spec(f"ALE/{env_id}" if env_id in ATARI_IDS else env_id)


def _max_episode_steps(env_id: str) -> int:
    """ALE/<Game>-v5 truncates inside the emulator at 108,000 frames: 27,000 steps of 4 frames; dm_control's tasks
    inside dm_control's Environment (shimmy's spec has none), at its time limit over its control timestep."""
    if is_dict_obs(env_id):
        from dm_control import suite

        return suite.load(*DM_CONTROL_TASKS[env_id])._step_limit
    return 27_000 if env_id in ATARI_IDS else gym.spec(env_id).max_episode_steps


def _reference_spaces(env_id: str) -> tuple[gym.Space, gym.Space]:
    if env_id in ATARI_IDS:  # gymnasium's standard Atari pipeline
        from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

        ref = FrameStackObservation(AtariPreprocessing(gym.make(f"ALE/{env_id}", frameskip=1)), 4)
        return ref.observation_space, ref.action_space
    ref = gym.make(_gym_spec(env_id).id).unwrapped if is_dict_obs(env_id) else gym.make(env_id).unwrapped
    return ref.observation_space, ref.action_space


def _assert_same_space(got: gym.Space, expected: gym.Space, *, action: bool = False) -> None:
    assert type(got) is type(expected)
    if isinstance(expected, gym.spaces.Dict):  # key by key; the order is checked apart (gymnasium sorts some Dicts)
        assert got.keys() == expected.keys()
        for key in expected:
            _assert_same_space(got[key], expected[key])
        return
    if action and isinstance(expected, gym.spaces.Box) and expected.dtype == np.float64 and got.dtype == np.float32:
        # dm_control's action spec is float64 and shimmy keeps it; fastvec's continuous actions are float32 in every
        # family (gymnasium's MuJoCo's, EnvPool's dm_control's), with the same bounds
        expected = gym.spaces.Box(expected.low.astype(np.float32), expected.high.astype(np.float32), dtype=np.float32)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    if isinstance(expected, gym.spaces.Box):
        # exact bounds, infinities included (Box.__eq__ only compares with np.allclose)
        np.testing.assert_array_equal(got.low, expected.low)
        np.testing.assert_array_equal(got.high, expected.high)
        assert got.low.dtype == expected.low.dtype and got.high.dtype == expected.high.dtype
        np.testing.assert_array_equal(got.bounded_below, expected.bounded_below)
        np.testing.assert_array_equal(got.bounded_above, expected.bounded_above)
    elif isinstance(expected, gym.spaces.Discrete):
        assert (got.n, got.start) == (expected.n, expected.start)
    elif isinstance(expected, gym.spaces.MultiDiscrete):
        np.testing.assert_array_equal(got.nvec, expected.nvec)
        np.testing.assert_array_equal(got.start, expected.start)
    assert got == expected


def test_list_envs():
    ids = fastvec.list_envs()
    assert ids == sorted(ids)
    assert len(ids) == len(set(ids))
    single_agent = [e for e in ids if fastvec.registry.lookup(e).family not in fastvec.registry.MULTI_AGENT_FAMILIES]
    assert all(gym.spec(f"fastvec/{env_id}") is not None for env_id in single_agent)
    assert "fastvec/simple_spread_v3" not in gym.registry  # a multi-agent id is no gymnasium env


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_single_spaces_match_reference(env_id):
    env = fastvec.make(env_id, 2, seed=0)
    obs_space, action_space = _reference_spaces(env_id)
    _assert_same_space(env.single_observation_space, obs_space)
    _assert_same_space(env.single_action_space, action_space, action=True)
    if is_dict_obs(env_id):  # fields in dm_control's order (its observation spec's), as its observations have them
        from dm_control import suite

        spec = suite.load(*DM_CONTROL_TASKS[env_id]).observation_spec()
        assert list(env.single_observation_space.keys()) == list(spec)
        obs, _ = env.reset()
        assert list(obs) == list(spec)


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize(("num_envs", "batch_size"), [(1, None), (6, None), (6, 3)])
def test_batched_spaces(env_id, num_envs, batch_size):
    env = fastvec.make(env_id, num_envs, batch_size=batch_size, seed=0)
    k = batch_size or num_envs
    assert (env.num_envs, env.batch_size) == (num_envs, k)
    # batched spaces are the gymnasium batch of fastvec's single spaces (recv returns batch_size rows)
    _assert_same_space(env.observation_space, batch_space(env.single_observation_space, k))
    _assert_same_space(env.action_space, batch_space(env.single_action_space, k))
    single = env.single_observation_space
    if isinstance(single, gym.spaces.Dict):
        fields = list(single.items())
    elif isinstance(single, gym.spaces.Tuple):
        fields = list(enumerate(single))
    else:
        fields = [(None, single)]
    for key, space in fields:
        batched = env.observation_space if key is None else env.observation_space[key]
        assert batched.shape == (k, *space.shape)
    if isinstance(env.single_action_space, gym.spaces.Discrete):
        assert isinstance(env.action_space, gym.spaces.MultiDiscrete)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_max_episode_steps_matches_gymnasium(env_id):
    env = fastvec.make(env_id, 2, seed=0)
    assert env.max_episode_steps == _max_episode_steps(env_id)
    assert fastvec.make(env_id, 2, seed=0, max_episode_steps=7).max_episode_steps == 7


def _check_obs_arrays(env, obs, k: int) -> None:
    """One array of ``k`` rows per field (one field unless the observations are a Dict), of its space's dtype."""
    single = env.single_observation_space
    if isinstance(single, gym.spaces.Dict):
        assert isinstance(obs, dict) and list(obs) == list(single.keys())
        fields = [(obs[key], single[key], env.observation_space[key]) for key in single]
    elif isinstance(single, gym.spaces.Tuple):  # Blackjack's Tuple of Discretes: a tuple of int64 arrays
        assert isinstance(obs, tuple) and len(obs) == len(single)
        fields = list(zip(obs, single, env.observation_space, strict=True))
    else:
        fields = [(obs, single, env.observation_space)]
    for array, space, batched in fields:
        assert isinstance(array, np.ndarray) and array.dtype == space.dtype
        assert array.shape == batched.shape == (k, *space.shape)
        assert batched.contains(array), array[~np.array([space.contains(o) for o in array])]


# The observation field that gymnasium's own env leaves its space on: BipedalWalker's hull angle is Box2D's body angle,
# never wrapped, which its space bounds by pi; a walker tipping over past upside down leaves the space (as fastvec's,
# bit-identical: test_bipedal_walker_hull_angle_leaves_the_space_as_gymnasium_s_does). Checked finite, then clipped,
# so that the other fields are checked against the space.
REFERENCE_LEAVES_SPACE = {"BipedalWalker-v3": 0, "BipedalWalkerHardcore-v3": 0}


def _clip_where_the_reference_leaves_its_space(env, obs):
    field = REFERENCE_LEAVES_SPACE.get(env.spec.id.removeprefix("fastvec/"))
    if field is None:
        return obs
    assert np.all(np.isfinite(obs[:, field]))
    space = env.single_observation_space
    clipped = obs.copy()
    clipped[:, field] = np.clip(obs[:, field], space.low[field], space.high[field])
    return clipped


def _check_step_outputs(env, result, k: int) -> None:
    obs, reward, terminated, truncated, info = result
    obs = _clip_where_the_reference_leaves_its_space(env, obs)
    _check_obs_arrays(env, obs, k)
    assert env.observation_space.contains(obs)
    for row in iterate(env.observation_space, obs):
        if isinstance(row, dict):  # a scalar field's rows iterate as numpy scalars, which Box.contains warns about
            row = {key: np.asarray(value) for key, value in row.items()}
        assert env.single_observation_space.contains(row)
    # float32 rewards, but float64 where gymnasium's env computes them so (MuJoCo's, as its vector envs return them)
    assert reward.dtype == (np.float64 if env.spec.id.removeprefix("fastvec/") in FLOAT64_REWARD_IDS else np.float32)
    assert reward.shape == (k,)
    assert np.all(np.isfinite(reward))
    assert terminated.dtype == np.bool_ and terminated.shape == (k,)
    assert truncated.dtype == np.bool_ and truncated.shape == (k,)
    assert isinstance(info, dict)
    if env.batch_size < env.num_envs:  # async: the env of each row
        assert info["env_id"].shape == (k,) and np.issubdtype(info["env_id"].dtype, np.integer)
    else:  # sync: rows in env order, no env_id key
        assert "env_id" not in info
    ended = terminated | truncated
    if ended.any():
        np.testing.assert_array_equal(info["_episode_return"], ended)
        np.testing.assert_array_equal(info["_episode_length"], ended)
        assert info["episode_return"].shape == info["episode_length"].shape == (k,)
        assert np.all(info["episode_length"][ended] >= 1)
        assert env.max_episode_steps is None or np.all(info["episode_length"][ended] <= env.max_episode_steps)
    else:
        assert not {"episode_return", "_episode_return", "episode_length", "_episode_length"} & info.keys()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_outputs_in_spaces_sync(env_id):
    n, steps = 8, 1200
    # (an env without a time limit, CliffWalking, gets one: a random walk rarely reaches its goal)
    limit = {} if fastvec.registry.lookup(env_id).max_episode_steps else {"max_episode_steps": 200}
    env = fastvec.make(env_id, n, seed=1, episode_stats=True, **limit)
    env.action_space.seed(2)
    obs, info = env.reset()
    _check_obs_arrays(env, obs, n)
    assert env.observation_space.contains(obs)
    assert "env_id" not in info  # sync: rows in env order
    ends = 0
    for _ in range(steps):
        actions = env.action_space.sample()
        assert env.action_space.contains(actions)
        result = env.step(actions)
        _check_step_outputs(env, result, n)
        assert "env_id" not in result[4]
        ends += int((result[2] | result[3]).sum())
    assert ends > 0
    env.close()


@pytest.mark.parametrize("env_id", BOX_ACTION_ENV_IDS)
def test_outputs_in_spaces_with_out_of_range_continuous_actions(env_id):
    n = 4
    env = fastvec.make(env_id, n, seed=3, episode_stats=True)
    env.reset()
    rng = np.random.default_rng(0)
    scale = 3 * np.max(np.abs(env.single_action_space.high))
    for _ in range(600):
        actions = rng.uniform(-scale, scale, env.action_space.shape).astype(np.float32)
        _check_step_outputs(env, env.step(actions), n)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_outputs_in_spaces_async(env_id):
    n, k = 8, 4
    limit = {} if fastvec.registry.lookup(env_id).max_episode_steps else {"max_episode_steps": 200}
    env = fastvec.make(env_id, n, batch_size=k, seed=4, episode_stats=True, **limit)
    env.action_space.seed(5)
    env.async_reset()
    seen = np.zeros(n, int)
    for _ in range(800):
        result = env.recv()
        _check_step_outputs(env, result, k)
        ids = result[4]["env_id"]
        assert len(set(ids.tolist())) == k and ids.min() >= 0 and ids.max() < n
        seen[ids] += 1
        env.send(env.action_space.sample(), ids)
    assert np.all(seen > 0)
    env.close()


@pytest.mark.parametrize(("env_id", "steps"), [("BipedalWalker-v3", 101), ("BipedalWalkerHardcore-v3", 104)])
def test_bipedal_walker_hull_angle_leaves_the_space_as_gymnasium_s_does(env_id, steps):
    """Why REFERENCE_LEAVES_SPACE takes the hull angle apart (test_outputs_in_spaces_async once saw 3.16): from seed
    1074 and these random actions, gymnasium's walker tips over past upside down, its hull angle above pi, outside
    its own observation space, and steps on before its hull touches the ground (terminated); fastvec's walker does
    the same, bit for bit, in the same space."""
    seed = 1074
    actions = np.random.default_rng(seed).uniform(-1, 1, (steps, 4)).astype(np.float32)
    ref = gym.make(env_id)
    ref.reset(seed=seed)
    env = fastvec.make(env_id, 1)
    env.reset(seed=seed)
    assert env.single_observation_space == ref.observation_space
    space = ref.observation_space
    outside = []
    for t, action in enumerate(actions, 1):
        want, _, terminated, _, _ = ref.step(action)
        got = env.step(action[None])
        assert got[0][0].tobytes() == want.tobytes(), f"step {t}: {got[0][0]} vs gymnasium's {want}"
        assert got[2][0] == terminated, f"step {t}"
        if not space.contains(want):
            fields = np.flatnonzero((want < space.low) | (want > space.high)).tolist()
            assert fields == [0] and want[0] > np.pi, f"step {t}: {want}"
            outside.append(terminated)
    assert len(outside) >= 2 and not outside[0] and outside[-1], outside  # out of bounds, on, then terminated
    env.close()
    ref.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("next_step", AutoresetMode.NEXT_STEP),
        ("same_step", AutoresetMode.SAME_STEP),
        ("disabled", AutoresetMode.DISABLED),
    ],
)
def test_autoreset_mode_metadata(env_id, mode, expected):
    env = fastvec.make(env_id, 2, seed=0, autoreset_mode=mode)
    assert env.metadata["autoreset_mode"] is expected
    assert env.autoreset_mode is expected
    from_enum = fastvec.make(env_id, 2, seed=0, autoreset_mode=expected)
    assert from_enum.metadata["autoreset_mode"] is expected
    assert fastvec.make(env_id, 2, seed=0).metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP


@pytest.mark.parametrize("env_id", LONG_EPISODE_IDS)
def test_next_step_autoreset_semantics(env_id):
    """Gymnasium's NEXT_STEP: the step after an episode end ignores the action and returns the reset
    observation with reward 0 and no flags; its episode restarts there."""
    n = 4
    env = fastvec.make(env_id, n, seed=6, max_episode_steps=5, episode_stats=True)
    env.reset()
    actions = np.stack([env.single_action_space.sample() for _ in range(n)])
    for step in range(1, 13):
        obs, reward, terminated, truncated, info = env.step(actions)
        phase = step % 6  # 5 steps, then the autoreset step
        if phase == 0:
            assert not terminated.any() and not truncated.any() and np.all(reward == 0)
        elif phase == 5:
            assert np.all(terminated | truncated)
            np.testing.assert_array_equal(info["episode_length"], np.full(n, 5))
        else:
            assert not truncated.any()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_vec_vector_entry_point(env_id):
    env = gym.make_vec(f"fastvec/{env_id}", num_envs=3, vectorization_mode="vector_entry_point")
    assert isinstance(env, fastvec.VectorEnv)
    assert env.num_envs == 3
    assert env.spec is not None and env.spec.id == f"fastvec/{env_id}"
    assert env.spec.max_episode_steps == _max_episode_steps(env_id)
    assert env.max_episode_steps == _max_episode_steps(env_id)
    assert env.spec.reward_threshold == _gym_spec(env_id).reward_threshold
    assert env.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    _assert_same_space(env.single_observation_space, _reference_spaces(env_id)[0])
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert data_equivalence(fastvec.make(env_id, 3).reset(seed=0), env.reset(seed=0), exact=True)
    env.close()


@pytest.mark.parametrize("env_id", LONG_EPISODE_IDS)
def test_make_vec_passes_options(env_id):
    env = gym.make_vec(
        f"fastvec/{env_id}", num_envs=2, vectorization_mode="vector_entry_point", max_episode_steps=3, seed=8
    )
    assert env.max_episode_steps == 3
    env.reset()
    actions = np.stack([env.single_action_space.sample() for _ in range(2)])
    flags = [env.step(actions)[3] for _ in range(3)]
    assert np.all(flags[2]) and not np.any(flags[0]) and not np.any(flags[1])


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reset_seed_determinism_data_equivalence(env_id):
    """gymnasium's reset-seed contract, vectorized: same seed, same data; unseeded resets differ."""
    env = fastvec.make(env_id, 4)
    first = env.reset(seed=123)
    assert data_equivalence(first, env.reset(seed=123), exact=True)
    assert data_equivalence(env.reset(seed=[1, 2, 3, 4]), env.reset(seed=[1, 2, 3, 4]), exact=True)
    if env_id not in ATARI_IDS and env_id not in FIXED_START_IDS:
        # An Atari game's first frame rarely depends on the seed (only the noop count does, and many
        # games show the same screen for the first 30 frames); test_atari checks seeds' effect on play
        # (FrozenLake and CliffWalking start on their start tile: test_determinism checks trajectories).
        assert not data_equivalence(first, env.reset(), exact=True)
    # fresh arrays every call: results are not views of a buffer that later calls overwrite
    obs, _ = env.reset(seed=123)
    kept = copy.deepcopy(obs)
    env.step(np.stack([env.single_action_space.sample() for _ in range(4)]))
    assert data_equivalence(obs, kept, exact=True)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_vector_wrappers(env_id):
    """RecordEpisodeStatistics (needs NEXT_STEP autoreset) agrees with fastvec's own episode stats;
    DictInfoToList accepts fastvec's info dict."""
    n = 4
    env = RecordEpisodeStatistics(fastvec.make(env_id, n, seed=9, max_episode_steps=50, episode_stats=True))
    env.reset()
    rng = np.random.default_rng(1)
    env.unwrapped.action_space.seed(int(rng.integers(2**31)))
    episodes = 0
    for _ in range(300):
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        ended = terminated | truncated
        if ended.any():
            np.testing.assert_array_equal(info["_episode"], ended)
            np.testing.assert_array_equal(info["episode"]["l"][ended], info["episode_length"][ended])
            np.testing.assert_allclose(info["episode"]["r"][ended], info["episode_return"][ended], rtol=1e-5)
            episodes += int(ended.sum())
    assert episodes >= n * 5
    listed = DictInfoToList(fastvec.make(env_id, n, seed=9))
    _, infos = listed.reset()
    assert isinstance(infos, list) and len(infos) == n
    assert not any("env_id" in i for i in infos)  # sync: rows in env order, no env_id key


@pytest.mark.mujoco  # the Dict-observation ids are dm_control's: none in a build without MuJoCo
@pytest.mark.parametrize("env_id", DICT_OBS_IDS)
@pytest.mark.parametrize("batch_size", [None, 4])
def test_dict_observations_belong_to_the_caller(env_id, batch_size, check_results_kept):
    """A Dict observation's fields are views (of one result buffer per step): a later step must not overwrite them,
    and no two fields overlap. tests/core/test_pool.py checks the single-array case."""
    env = fastvec.make(env_id, 8, batch_size=batch_size, seed=10)
    obs, _ = env.reset()
    assert isinstance(obs, dict) and all(isinstance(v, np.ndarray) for v in obs.values())
    check_results_kept(env, 20)
    env.close()
