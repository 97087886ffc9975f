"""Parity of fastvec's native MPE envs with mpe2's parallel envs: the same seeds and actions give bit-equal float32
observations and float64 per-agent rewards, episode after episode (autoreset continues each env's stream as
mpe2's reset() without a seed does), with discrete and continuous actions and each env's options."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

import fastvec


def reference(env_id: str, **kwargs: Any) -> Any:
    return importlib.import_module(f"mpe2.{env_id}").parallel_env(**kwargs)


def random_actions(rng: np.random.Generator, agents: list[dict[str, Any]], num_envs: int, low: float) -> np.ndarray:
    """A (num_envs, width) float32 action batch: Discrete indices as floats; Box values in [low, 1], a few
    exactly 0 and 1 (values below 0 are clipped by both sides)."""
    columns = []
    for agent in agents:
        if agent["num_actions"]:
            columns.append(rng.integers(agent["num_actions"], size=(num_envs, 1)).astype(np.float32))
        else:
            a = rng.uniform(low, 1, size=(num_envs, agent["action_size"])).astype(np.float32)
            a[rng.uniform(size=a.shape) < 0.05] = 0.0
            a[rng.uniform(size=a.shape) < 0.05] = 1.0
            columns.append(a)
    return np.concatenate(columns, axis=1)


def agent_actions(agents: list[dict[str, Any]], row: np.ndarray) -> dict[str, Any]:
    """One env's action row as mpe2 takes it: an int (Discrete) or a float32 array (Box) per agent."""
    out: dict[str, Any] = {}
    at = 0
    for agent in agents:
        size = agent["action_size"]
        out[agent["name"]] = int(row[at]) if agent["num_actions"] else row[at : at + size].copy()
        at += size
    return out


def check_episodes(
    env_id: str, num_envs: int, seed: int, steps: int, low: float = 0.0, **kwargs: Any
) -> tuple[int, int]:
    """Steps fastvec's env_id and num_envs of mpe2's with the same random actions for `steps` steps, asserting
    equal observations, per-agent rewards, their sum and the flags at every step. Returns the numbers of
    episodes that ended and of steps with a non-zero reward (so that a test can check it saw some)."""
    env = fastvec.make(env_id, num_envs, num_threads=1, **kwargs)
    refs = [reference(env_id, **kwargs) for _ in range(num_envs)]
    agents = env.backend.spec()["agents"]
    names = [a["name"] for a in agents]
    assert names == refs[0].possible_agents
    for a in agents:
        assert refs[0].observation_space(a["name"]).shape == (a["obs_size"],)
        space = refs[0].action_space(a["name"])
        assert (space.n if a["num_actions"] else space.shape[0]) == (a["num_actions"] or a["action_size"])
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    ref_obs = [r.reset(seed=seed + i)[0] for i, r in enumerate(refs)]
    done = np.zeros(num_envs, dtype=bool)
    episodes = rewarded = 0
    for t in range(steps):
        for i in range(num_envs):
            expected = np.concatenate([ref_obs[i][n] for n in names])
            np.testing.assert_array_equal(obs[i], expected, err_msg=f"{env_id} env {i}, observation before step {t}")
        actions = random_actions(rng, agents, num_envs, low)
        obs, reward, terminated, truncated, info = env.step(actions)
        for i, r in enumerate(refs):
            if done[i]:
                ref_obs[i] = r.reset()[0]
                continue
            ref_obs[i], rewards, ref_terminated, ref_truncated, _ = r.step(agent_actions(agents, actions[i]))
            expected = np.array([rewards[n] for n in names], dtype=np.float64)
            np.testing.assert_array_equal(info["agent_rewards"][i], expected, err_msg=f"{env_id} env {i}, step {t}")
            assert reward[i] == sum(expected.tolist())
            assert bool(truncated[i]) == any(ref_truncated.values())
            assert bool(terminated[i]) == any(ref_terminated.values())
            rewarded += bool(np.any(expected != 0))
        done = terminated | truncated
        episodes += int(done.sum())
    env.close()
    return episodes, rewarded


CASES = [
    ("simple_v3", {}),
    ("simple_spread_v3", {}),
    ("simple_spread_v3", {"N": 1, "local_ratio": 0.0}),
    ("simple_spread_v3", {"N": 5, "local_ratio": 0.3}),
    ("simple_spread_v3", {"local_ratio": 1.0, "max_cycles": 60}),
    ("simple_adversary_v3", {}),
    ("simple_adversary_v3", {"N": 1}),
    ("simple_adversary_v3", {"N": 4, "max_cycles": 60}),
    ("simple_tag_v3", {}),
    ("simple_tag_v3", {"num_good": 3, "num_adversaries": 2, "num_obstacles": 4, "max_cycles": 40}),
    ("simple_tag_v3", {"num_good": 2, "num_adversaries": 0, "num_obstacles": 0}),
    ("simple_push_v3", {}),
    ("simple_speaker_listener_v4", {"max_cycles": 40}),
    ("simple_reference_v3", {}),
    ("simple_reference_v3", {"local_ratio": 0.2}),
    ("simple_crypto_v3", {}),
    ("simple_world_comm_v3", {}),
    ("simple_world_comm_v3", {"num_good": 3, "num_adversaries": 2, "num_food": 3, "num_forests": 4}),
    ("simple_world_comm_v3", {"num_adversaries": 0, "num_forests": 0, "num_obstacles": 0}),
]


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=[f"{e}-{k}" for e, k in CASES])
def test_episodes_equal_mpe2s(env_id: str, kwargs: dict[str, Any], continuous: bool) -> None:
    cycles = kwargs.get("max_cycles", 25)
    episodes, rewarded = check_episodes(env_id, 3, 11, 2 * cycles + 5, continuous_actions=continuous, **kwargs)
    assert episodes == 6
    assert rewarded > 0


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [("simple_tag_v3", {"num_adversaries": 6, "max_cycles": 60}), ("simple_spread_v3", {"N": 1, "max_cycles": 150})],
)
def test_terminate_on_success(env_id: str, kwargs: dict[str, Any]) -> None:
    """Episodes that end early (mpe2 terminates them; at max_cycles it truncates instead)."""
    episodes, _ = check_episodes(env_id, 4, 3, 2 * kwargs["max_cycles"], terminate_on_success=True, **kwargs)
    assert episodes > 4  # more than truncation alone ends (once in each env)


@pytest.mark.parametrize("env_id", fastvec.registry.family_ids("mpe"))
def test_many_seeds(env_id: str) -> None:
    """Resets over many seeds (the goal draws of simple_adversary use numpy's buffered 32-bit integers, whose
    second half the next episode's draw takes), a few steps each."""
    for seed in range(0, 4000, 97):
        check_episodes(env_id, 4, seed, 12, max_cycles=3)


def test_continuous_actions_outside_the_box_are_clipped_as_mpe2_clips_them(caplog: pytest.LogCaptureFixture) -> None:
    check_episodes("simple_spread_v3", 2, 5, 30, low=-0.5, continuous_actions=True)
    assert "Environment is clipping to space" in caplog.text  # (pettingzoo logs it: mpe2 did clip)
