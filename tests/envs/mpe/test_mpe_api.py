"""The native MPE envs as fastvec.make builds them: options, episode limits, refusals, env calls, numpy's exp."""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import fastvec
from fastvec import _core, _numpy_loops


def test_max_cycles_is_the_pools_episode_limit() -> None:
    assert fastvec.make("simple_spread_v3", 2).max_episode_steps == 25
    assert fastvec.make("simple_spread_v3", 2, max_cycles=40).max_episode_steps == 40
    assert fastvec.make("simple_spread_v3", 2, max_episode_steps=10).max_episode_steps == 10
    with pytest.raises(ValueError, match=r"max_episode_steps \(10\) and max_cycles \(40\) are the same limit"):
        fastvec.make("simple_spread_v3", 2, max_cycles=40, max_episode_steps=10)
    with pytest.raises(ValueError, match="max_cycles must be in"):
        fastvec.make("simple_spread_v3", 2, max_cycles=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"curriculum": True}, ValueError, "curriculum=True is not supported natively"),
        ({"benchmark_data": True}, ValueError, "benchmark_data=True is not supported natively"),
        ({"render_mode": "human"}, ValueError, "render_mode must be None"),
        ({"num_neighbors": 2}, TypeError, "unexpected keyword argument 'num_neighbors'"),
        ({"num_agent_neighbors": -1}, ValueError, "num_agent_neighbors must be an integer in"),
        ({"N": 0}, ValueError, "N must be an integer in"),
        ({"local_ratio": 1.5}, ValueError, "local_ratio must be in"),
    ],
)
def test_refused_options(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        fastvec.make("simple_spread_v3", 2, **kwargs)


def test_render_only_option_is_accepted() -> None:
    a = fastvec.make("simple_spread_v3", 1, dynamic_rescaling=False)
    b = fastvec.make("simple_spread_v3", 1)
    np.testing.assert_array_equal(a.reset(seed=1)[0]["agent_1"], b.reset(seed=1)[0]["agent_1"])


@pytest.mark.parametrize("continuous", [False, True])
def test_spaces_and_agents(continuous: bool) -> None:
    env = fastvec.make("simple_tag_v3", 2, continuous_actions=continuous, num_good=2, num_adversaries=1)
    assert isinstance(env, fastvec.MultiAgentVectorEnv)
    assert env.possible_agents == ["adversary_0", "agent_0", "agent_1"]
    assert [env.observation_space(a).shape for a in env.possible_agents] == [(16,), (14,), (14,)]
    flat = env.backend  # the native pool's VectorEnv: the agents' rows concatenated
    assert flat.single_observation_space.shape == (44,)
    if continuous:
        assert all(env.action_space(a) == gym.spaces.Box(0.0, 1.0, (5,), np.float32) for a in env.possible_agents)
        assert flat.single_action_space.shape == (15,)
        actions = {a: np.full((2, 5), 0.5, np.float32) for a in env.possible_agents}
    else:
        assert all(env.action_space(a) == gym.spaces.Discrete(5) for a in env.possible_agents)
        assert flat.single_action_space.high.tolist() == [4.0] * 3
        actions = {a: np.array([1, 4]) for a in env.possible_agents}
    env.reset(seed=0)
    _, rewards, terminations, truncations, infos = env.step(actions)
    assert set(infos) == {"active"}  # the per-agent rewards and the flag the translator read are not repeated
    assert all(rewards[a].dtype == np.float64 and rewards[a].shape == (2,) for a in env.possible_agents)
    assert not any(terminations[a].any() or truncations[a].any() for a in env.possible_agents)


def test_bad_actions_are_refused_naming_the_agent() -> None:
    env = fastvec.make("simple_spread_v3", 2)
    env.reset(seed=0)
    good = {a: np.zeros(2, np.int64) for a in env.possible_agents}
    with pytest.raises(ValueError, match=r"actions\['agent_1'\] = 5 for env 1 is out of range"):
        env.step({**good, "agent_1": np.array([0, 5])})
    with pytest.raises(KeyError, match="agent 'agent_2' is alive in env"):
        env.step({a: good[a] for a in ("agent_0", "agent_1")})
    continuous = fastvec.make("simple_spread_v3", 2, continuous_actions=True)
    continuous.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions\['agent_0'\] must be finite"):
        continuous.step(
            {a: np.full((2, 5), np.nan if a == "agent_0" else 0.5, np.float32) for a in env.possible_agents}
        )
    env.step(good)  # still usable


def test_episode_statistics_and_same_step_autoreset() -> None:
    """same_step: the final observations per agent and the final step's rewards, then the new episode's rows;
    the episode statistics sum the agents' rewards."""
    env = fastvec.make("simple_spread_v3", 2, max_cycles=3, autoreset_mode="same_step", episode_stats=True)
    ref = reference_spread(max_cycles=3)
    obs, _ = env.reset(seed=9)
    ref_obs, _ = ref.reset(seed=9)
    total = 0.0
    for t in range(3):
        actions = {a: np.array([t % 5, 1]) for a in env.possible_agents}
        obs, rewards, _, truncations, infos = env.step(actions)
        ref_obs, ref_rewards, _, ref_truncations, _ = ref.step({a: t % 5 for a in env.possible_agents})
        assert [rewards[a][0] for a in env.possible_agents] == [ref_rewards[a] for a in env.possible_agents]
        total += sum(ref_rewards.values())
    assert all(truncations[a].all() for a in env.possible_agents)
    assert infos["_final_obs"].tolist() == [True, True]
    for a in env.possible_agents:
        np.testing.assert_array_equal(infos["final_obs"][a][0], ref_obs[a])
    np.testing.assert_array_equal(obs["agent_0"][0], ref.reset()[0]["agent_0"])  # the stream went on
    assert infos["episode_length"].tolist() == [3, 3]
    assert infos["episode_return"][0] == pytest.approx(total)


def reference(env_id: str, **kwargs: object) -> Any:
    return importlib.import_module(f"mpe2.{env_id}").parallel_env(**kwargs)


def reference_spread(**kwargs: object) -> Any:
    import mpe2.simple_spread_v3 as spread

    return spread.parallel_env(**kwargs)


@pytest.mark.versions  # numpy's kernel, found in its ufunc object
def test_numpy_exp_loop_is_numpys() -> None:
    """The loop handed to the MPE envs computes np.exp bit for bit (numpy's kernel on this CPU)."""
    loop = _numpy_loops.float64_loop(np.exp)
    assert loop is not None
    xs = np.random.default_rng(0).uniform(-5, 5, 2000)
    assert [_numpy_loops.call(loop, x) for x in xs] == [float(np.exp(x)) for x in xs]
    assert hasattr(_core, "set_numpy_exp")


def _trajectory(env_id: str, **make: object) -> list[np.ndarray]:
    env = fastvec.make(env_id, 8, continuous_actions=True, **make)  # type: ignore[arg-type]
    out = [env.reset(seed=5)[0]["agent_0"]]
    rng = np.random.default_rng(0)
    for _ in range(30):
        actions = {a: rng.uniform(0, 1, (8, 5)).astype(np.float32) for a in env.possible_agents}
        out.append(env.step(actions)[0]["agent_0"])
    env.close()
    return out


@pytest.mark.parametrize("make", [{"num_threads": 2}, {"num_threads": 2, "block_size": 1}, {"block_size": 8}])
def test_same_seed_same_trajectories_for_any_threads_and_blocks(make: dict[str, object]) -> None:
    expected = _trajectory("simple_tag_v3", num_threads=1)
    for got, want in zip(_trajectory("simple_tag_v3", **make), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_async_rows_are_the_sync_envs_rows() -> None:
    """batch_size < num_envs: each row (infos["env_id"]) is its env's, as a sync pool steps it."""
    sync = fastvec.make("simple_adversary_v3", 4, continuous_actions=True)
    expected = [sync.reset(seed=2)[0]]
    actions = {a: np.full((4, 5), 0.25, np.float32) for a in sync.possible_agents}
    for _ in range(6):
        expected.append(sync.step(actions)[0])
    env = fastvec.make("simple_adversary_v3", 4, batch_size=2, continuous_actions=True)
    env.async_reset(seed=2)
    steps = np.zeros(4, dtype=int)
    half = {a: x[:2] for a, x in actions.items()}
    while steps.min() < 6:
        obs, _, _, _, infos = env.recv()
        for row, e in enumerate(infos["env_id"].tolist()):
            if steps[e] >= len(expected):  # (an env ahead of the others, past the sync run)
                continue
            for a in env.possible_agents:
                np.testing.assert_array_equal(obs[a][row], expected[steps[e]][a][e])
        steps[infos["env_id"]] += 1
        env.send(half, infos["env_id"])
    env.close()


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("env_id", fastvec.registry.family_ids("mpe"))
def test_env_calls_answer_as_mpe2s_parallel_env(env_id: str, continuous: bool) -> None:
    """What mpe2's parallel env answers and is fixed when it is made, the native pool answers for each env; what
    changes as it runs is a clear AttributeError; the options it was made with are answered besides."""
    ref = reference(env_id, continuous_actions=continuous)
    env = fastvec.make(env_id, 2, continuous_actions=continuous, max_cycles=7)
    agents = ref.possible_agents
    assert env.get_attr("possible_agents") == (agents, agents)
    assert env.get_attr("max_num_agents") == (ref.max_num_agents,) * 2
    for a in agents:
        assert env.call("observation_space", a) == (ref.observation_space(a),) * 2
        assert env.call("action_space", a) == (ref.action_space(a),) * 2
    assert env.get_attr("observation_spaces") == ({a: ref.observation_space(a) for a in agents},) * 2
    assert env.get_attr("action_spaces") == ({a: ref.action_space(a) for a in agents},) * 2
    assert env.get_attr("state_space") == (ref.state_space,) * 2
    assert env.get_attr("render_mode") == (ref.render_mode,) * 2
    # mpe2's metadata, but no render modes: a native env draws nothing (render_mode must be None)
    expected = {**ref.metadata, "render_modes": []}
    assert env.get_attr("metadata") == (expected, expected) and env.metadata == expected
    with pytest.raises(TypeError):  # a method, as get_attr calls it (gymnasium's call): mpe2's needs its agent too
        env.get_attr("observation_space")
    with pytest.raises(KeyError, match="agent 'zed' is not one of possible_agents"):
        env.call("action_space", "zed")
    for name in ("agents", "num_agents", "state"):
        with pytest.raises(AttributeError, match=f"native {env_id} cannot answer '{name}': .*backend='python'"):
            env.call(name)
    assert env.get_attr("max_cycles") == (7, 7)  # (mpe2's parallel env has no attribute for its keywords)
    env.reset(seed=0)
    env.step({a: np.zeros((2, *env.action_space(a).shape), env.action_space(a).dtype) for a in agents})
    env.close()


def test_one_agent_env_ends_its_episode_in_same_step_mode() -> None:
    """simple_v3 has one agent, whose per-agent info field comes as (B,), not (B, 1): same_step's final rows
    failed to reshape it when an episode ended (found by the multi-agent fuzzer)."""
    env = fastvec.make("simple_v3", 2, max_cycles=2, autoreset_mode="same_step", episode_stats=True)
    ref = reference("simple_v3", max_cycles=2)
    ref_obs, _ = ref.reset(seed=3)
    env.reset(seed=3)
    total = 0.0
    for _ in range(2):
        obs, rewards, _, truncations, infos = env.step({"agent_0": np.array([1, 2])})
        ref_obs, ref_rewards, *_ = ref.step({"agent_0": 1})
        assert rewards["agent_0"][0] == ref_rewards["agent_0"]
        total += ref_rewards["agent_0"]
    assert truncations["agent_0"].all() and infos["_final_obs"].all() and infos["final_active"]["agent_0"].all()
    np.testing.assert_array_equal(infos["final_obs"]["agent_0"][0], ref_obs["agent_0"])
    assert infos["episode_agent_returns"]["agent_0"][0] == total
    np.testing.assert_array_equal(obs["agent_0"][0], ref.reset()[0]["agent_0"])  # the next episode's
    async_env = fastvec.make("simple_v3", 2, batch_size=1, max_cycles=1, autoreset_mode="same_step")
    async_env.async_reset(seed=0)
    for _ in range(4):
        *_, infos = async_env.recv()
        async_env.send({"agent_0": np.zeros(1, np.int64)}, infos["env_id"])
    assert infos["_final_obs"].all() and infos["final_obs"]["agent_0"].shape == (1, 4)
    env.close()
    async_env.close()
