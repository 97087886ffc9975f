"""The native MPE envs as fastvec.make builds them: options, episode limits, refusals, numpy's exp."""

from __future__ import annotations

import numpy as np
import pytest

import fastvec
from fastvec import _core, _numpy_loops


def test_max_cycles_is_the_pools_episode_limit() -> None:
    assert fastvec.make("simple_spread_v3", 2).backend.max_episode_steps == 25
    assert fastvec.make("simple_spread_v3", 2, max_cycles=40).backend.max_episode_steps == 40
    assert fastvec.make("simple_spread_v3", 2, max_episode_steps=10).backend.max_episode_steps == 10
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
        ({"num_agent_neighbors": 2}, TypeError, "unexpected keyword argument 'num_agent_neighbors'"),
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
    np.testing.assert_array_equal(a.reset(seed=1)[0], b.reset(seed=1)[0])


@pytest.mark.parametrize("continuous", [False, True])
def test_spaces_and_agents(continuous: bool) -> None:
    env = fastvec.make("simple_tag_v3", 2, continuous_actions=continuous, num_good=2, num_adversaries=1)
    agents = env.backend.spec()["agents"]
    assert [a["name"] for a in agents] == ["adversary_0", "agent_0", "agent_1"]
    assert [a["obs_size"] for a in agents] == [16, 14, 14]
    assert env.single_observation_space.shape == (44,)
    if continuous:
        assert [(a["action_size"], a["num_actions"]) for a in agents] == [(5, 0)] * 3
        assert env.single_action_space.shape == (15,)
        assert env.single_action_space.high.tolist() == [1.0] * 15
    else:
        assert [(a["action_size"], a["num_actions"]) for a in agents] == [(1, 5)] * 3
        assert env.single_action_space.high.tolist() == [4.0] * 3
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.zeros((2, env.single_action_space.shape[0]), np.float32))
    assert info["agent_rewards"].shape == (2, 3)
    np.testing.assert_array_equal(reward, info["agent_rewards"].sum(axis=1))


def test_numpy_exp_loop_is_numpys() -> None:
    """The loop handed to the MPE envs computes np.exp bit for bit (numpy's kernel on this CPU)."""
    loop = _numpy_loops.float64_loop(np.exp)
    assert loop is not None
    xs = np.random.default_rng(0).uniform(-5, 5, 2000)
    assert [_numpy_loops.call(loop, x) for x in xs] == [float(np.exp(x)) for x in xs]
    assert hasattr(_core, "set_numpy_exp")


def _trajectory(env_id: str, **make: object) -> list[np.ndarray]:
    env = fastvec.make(env_id, 8, continuous_actions=True, **make)  # type: ignore[arg-type]
    out = [env.reset(seed=5)[0]]
    rng = np.random.default_rng(0)
    for _ in range(30):
        out.append(env.step(rng.uniform(0, 1, (8, env.single_action_space.shape[0])).astype(np.float32))[0])
    env.close()
    return out


@pytest.mark.parametrize("make", [{"num_threads": 2}, {"num_threads": 2, "block_size": 1}, {"block_size": 8}])
def test_same_seed_same_trajectories_for_any_threads_and_blocks(make: dict[str, object]) -> None:
    expected = _trajectory("simple_tag_v3", num_threads=1)
    for got, want in zip(_trajectory("simple_tag_v3", **make), expected, strict=True):
        np.testing.assert_array_equal(got, want)
