"""Runs fastvec's native MPE envs beside mpe2's parallel envs, episode by episode (helpers of the parity tests)."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

import fastvec


def reference(env_id: str, **kwargs: Any) -> Any:
    return importlib.import_module(f"mpe2.{env_id}").parallel_env(**kwargs)


def random_actions(rng: np.random.Generator, spec: dict[str, Any], num_envs: int) -> np.ndarray:
    """A (num_envs, width) float32 action batch: Discrete indices as floats, Box values in [0, 1] (a few exactly 0
    and 1, and some outside, which both sides clip)."""
    rows = []
    for agent in spec["agents"]:
        if agent["num_actions"]:
            rows.append(rng.integers(agent["num_actions"], size=(num_envs, 1)).astype(np.float32))
        else:
            a = rng.uniform(0, 1, size=(num_envs, agent["action_size"])).astype(np.float32)
            a[rng.uniform(size=a.shape) < 0.05] = 0.0
            a[rng.uniform(size=a.shape) < 0.05] = 1.0
            rows.append(a)
    return np.concatenate(rows, axis=1)


def agent_actions(spec: dict[str, Any], row: np.ndarray) -> dict[str, Any]:
    """One env's action row as mpe2 takes it: per agent an int (Discrete) or a float32 array (Box)."""
    out: dict[str, Any] = {}
    at = 0
    for agent in spec["agents"]:
        if agent["num_actions"]:
            out[agent["name"]] = int(row[at])
        else:
            out[agent["name"]] = row[at : at + agent["action_size"]].copy()
        at += agent["action_size"]
    return out


def check_episodes(env_id: str, num_envs: int, seed: int, steps: int, **kwargs: Any) -> None:
    """Steps fastvec's env_id and num_envs mpe2 envs with the same random actions for `steps` steps (episodes
    end at max_cycles and autoreset, the next step returning the reset's observation, the reference reset
    without a seed: its stream continues), asserting equal float32 observations and float64 per-agent
    rewards at every step."""
    env = fastvec.make(env_id, num_envs, num_threads=1, **kwargs)
    refs = [reference(env_id, **kwargs) for _ in range(num_envs)]
    spec = env.backend.spec()
    names = [a["name"] for a in spec["agents"]]
    assert names == refs[0].possible_agents
    for a in spec["agents"]:
        assert refs[0].observation_space(a["name"]).shape == (a["obs_size"],)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    ref_obs = [r.reset(seed=seed + i)[0] for i, r in enumerate(refs)]
    done = np.zeros(num_envs, dtype=bool)
    for t in range(steps):
        for i in range(num_envs):
            expected = np.concatenate([ref_obs[i][n] for n in names])
            np.testing.assert_array_equal(obs[i], expected, err_msg=f"{env_id} env {i} obs at step {t}")
        actions = random_actions(rng, spec, num_envs)
        obs, reward, terminated, truncated, info = env.step(actions)
        for i, r in enumerate(refs):
            if done[i]:
                ref_obs[i] = r.reset()[0]
                continue
            ref_obs[i], rewards, ref_term, ref_trunc, _ = r.step(agent_actions(spec, actions[i]))
            expected = np.array([rewards[n] for n in names])
            np.testing.assert_array_equal(info["agent_rewards"][i], expected, err_msg=f"{env_id} env {i} step {t}")
            assert reward[i] == sum(float(x) for x in expected)
            assert bool(truncated[i]) == any(ref_trunc.values())
            assert bool(terminated[i]) == any(ref_term.values())
        done = terminated | truncated
    env.close()

