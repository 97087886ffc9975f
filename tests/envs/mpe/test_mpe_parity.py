"""Parity of fastvec's native MPE envs with mpe2's parallel envs: the same seeds and actions give bit-equal float32
observations and float64 per-agent rewards, episode after episode (autoreset continues each env's stream as
mpe2's reset() without a seed does), with discrete and continuous actions and each env's options."""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import fastvec

# Bit-equality with mpe2 rests on numpy's arithmetic in this process (its exp kernel, its norms, its integer draws):
# CI's numpy 1.26 and newest-numpy passes run these.
pytestmark = pytest.mark.versions


def reference(env_id: str, **kwargs: Any) -> Any:
    return importlib.import_module(f"mpe2.{env_id}").parallel_env(**kwargs)


def random_actions(rng: np.random.Generator, env: Any, low: float) -> dict[str, np.ndarray]:
    """Per agent, a batch of random actions: Discrete indices (int64); Box values in [low, 1] (float32), a few
    exactly 0 and 1 (values below 0 are clipped by both sides)."""
    out = {}
    for a in env.possible_agents:
        space = env.action_space(a)
        if isinstance(space, gym.spaces.Discrete):
            out[a] = rng.integers(space.n, size=env.num_envs)
        else:
            x = rng.uniform(low, 1, size=(env.num_envs, *space.shape)).astype(np.float32)
            x[rng.uniform(size=x.shape) < 0.05] = 0.0
            x[rng.uniform(size=x.shape) < 0.05] = 1.0
            out[a] = x
    return out


def check_episodes(
    env_id: str, num_envs: int, seed: int, steps: int, low: float = 0.0, **kwargs: Any
) -> tuple[int, int]:
    """Steps fastvec's env_id (a MultiAgentVectorEnv over the native pool) and num_envs of mpe2's with the same
    random actions for `steps` steps, asserting the same spaces and, at every step, equal observations, per-agent
    rewards, terminations and truncations. Returns the numbers of episodes that ended and of steps with a
    non-zero reward (so that a test can check it saw some)."""
    env, refs = make_both(env_id, num_envs, **kwargs)
    result = run_both(env, refs, env_id, seed, steps, low)
    env.close()
    return result


def make_both(env_id: str, num_envs: int, **kwargs: Any) -> tuple[Any, list[Any]]:
    """fastvec's env_id and num_envs of mpe2's, checked to have the same agents and spaces."""
    env = fastvec.make(env_id, num_envs, num_threads=1, **kwargs)
    assert isinstance(env, fastvec.MultiAgentVectorEnv)
    refs = [reference(env_id, **kwargs) for _ in range(num_envs)]
    assert env.possible_agents == refs[0].possible_agents
    for a in env.possible_agents:
        assert env.observation_space(a) == refs[0].observation_space(a)
        assert env.action_space(a) == refs[0].action_space(a)
    return env, refs


def run_both(env: Any, refs: list[Any], env_id: str, seed: int, steps: int, low: float) -> tuple[int, int]:
    """check_episodes' steps, from a reset of both with `seed`."""
    num_envs, names = env.num_envs, env.possible_agents
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    ref_obs = [r.reset(seed=seed + i)[0] for i, r in enumerate(refs)]
    done = np.zeros(num_envs, dtype=bool)
    episodes = rewarded = 0
    for t in range(steps):
        for i in range(num_envs):
            for a in names:
                np.testing.assert_array_equal(obs[a][i], ref_obs[i][a], err_msg=f"{env_id} env {i} {a}, before {t}")
        actions = random_actions(rng, env, low)
        obs, rewards, terminations, truncations, infos = env.step(actions)
        for i, r in enumerate(refs):
            assert all(infos["active"][a][i] for a in names)
            if done[i]:
                ref_obs[i] = r.reset()[0]
                assert all(rewards[a][i] == 0 for a in names)
                continue
            one = {a: actions[a][i] if actions[a].ndim > 1 else int(actions[a][i]) for a in names}
            ref_obs[i], ref_rewards, ref_terminations, ref_truncations, _ = r.step(one)
            got = [rewards[a][i] for a in names]
            assert got == [ref_rewards[a] for a in names], f"{env_id} env {i}, step {t}: {got} != {ref_rewards}"
            assert [terminations[a][i] for a in names] == [ref_terminations[a] for a in names]
            assert [truncations[a][i] for a in names] == [ref_truncations[a] for a in names]
            rewarded += any(x != 0 for x in got)
        done = np.array([terminations[names[0]][i] or truncations[names[0]][i] for i in range(num_envs)])
        episodes += int(done.sum())
    return episodes, rewarded


CASES = [
    ("simple_v3", {}),
    ("simple_spread_v3", {}),
    ("simple_spread_v3", {"N": 1, "local_ratio": 0.0}),
    ("simple_spread_v3", {"N": 5, "local_ratio": 0.3}),
    ("simple_spread_v3", {"local_ratio": 1.0, "max_cycles": 60}),
    ("simple_spread_v3", {"N": 4, "num_agent_neighbors": 2, "num_landmark_neighbors": 2}),
    ("simple_spread_v3", {"num_agent_neighbors": 5, "num_landmark_neighbors": None}),
    ("simple_adversary_v3", {}),
    ("simple_adversary_v3", {"N": 1}),
    ("simple_adversary_v3", {"N": 4, "max_cycles": 60}),
    ("simple_adversary_v3", {"N": 3, "num_agent_neighbors": 1, "num_landmark_neighbors": 4}),
    ("simple_tag_v3", {}),
    ("simple_tag_v3", {"num_good": 3, "num_adversaries": 2, "num_obstacles": 4, "max_cycles": 40}),
    ("simple_tag_v3", {"num_good": 2, "num_adversaries": 0, "num_obstacles": 0}),
    ("simple_tag_v3", {"num_good": 2, "num_agent_neighbors": 2, "num_landmark_neighbors": 1}),
    ("simple_tag_v3", {"num_agent_neighbors": 6, "num_landmark_neighbors": 3}),
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
    env, refs = make_both(env_id, 4, max_cycles=3)
    for seed in range(0, 4000, 157):
        run_both(env, refs, env_id, seed, 12, 0.0)
    env.close()


def test_continuous_actions_outside_the_box_are_clipped_as_mpe2_clips_them(caplog: pytest.LogCaptureFixture) -> None:
    check_episodes("simple_spread_v3", 2, 5, 30, low=-0.5, continuous_actions=True)
    assert "Environment is clipping to space" in caplog.text  # (pettingzoo logs it: mpe2 did clip)


@pytest.mark.parametrize("env_id", ["simple_tag_v3", "simple_reference_v3"])
def test_flat_rows_of_the_native_pool(env_id: str) -> None:
    """The native pool under the façade: its observation row is the agents' observations concatenated in
    possible_agents order, its info the per-agent rewards, its reward their sum."""
    env = fastvec.make(env_id, 3, num_threads=1, continuous_actions=True)
    flat = env.backend
    ref = reference(env_id, continuous_actions=True)
    obs, _ = flat.reset(seed=4)
    ref_obs, _ = ref.reset(seed=4)
    np.testing.assert_array_equal(obs[0], np.concatenate([ref_obs[a] for a in ref.possible_agents]))
    width = flat.single_action_space.shape[0]
    actions = np.random.default_rng(0).uniform(0, 1, (3, width)).astype(np.float32)
    obs, reward, _, _, info = flat.step(actions)
    sizes = [ref.action_space(a).shape[0] for a in ref.possible_agents]
    split = np.split(actions[0], np.cumsum(sizes)[:-1])
    ref_obs, ref_rewards, _, _, _ = ref.step(dict(zip(ref.possible_agents, split, strict=True)))
    np.testing.assert_array_equal(obs[0], np.concatenate([ref_obs[a] for a in ref.possible_agents]))
    assert info["agent_rewards"][0].tolist() == [ref_rewards[a] for a in ref.possible_agents]
    assert reward[0] == sum(ref_rewards[a] for a in ref.possible_agents)
    env.close()
