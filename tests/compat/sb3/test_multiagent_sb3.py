"""fastvec.sb3_vec over multi-agent envs against SuperSuit's recipe for SB3
(``concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(env), n, base_class="stable_baselines3")``): the same slots,
values and infos on mpe2's simple_spread; dead and unborn agents' slots as SuperSuit's black_death_v3 gives
them; SB3's VecEnv contract and wrappers; and PPO training through it (its learning:
benchmarks/bench_sb3_multiagent_learning.py)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from mpe2 import simple_spread_v3
from sb3_ma_envs import Dwindle

import fastvec

sb3 = pytest.importorskip("stable_baselines3")
ss = pytest.importorskip("supersuit")
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize  # noqa: E402

from fastvec.adapters.sb3_ma import SB3MultiAgentVecEnv  # noqa: E402

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)


def spread(max_cycles=5, continuous=False):
    return functools.partial(simple_spread_v3.parallel_env, max_cycles=max_cycles, continuous_actions=continuous)


def supersuit_vec(par_env, n):
    return ss.concat_vec_envs_v1(
        ss.pettingzoo_env_to_vec_env_v1(par_env), n, num_cpus=0, base_class="stable_baselines3"
    )


def step(venv, actions):
    venv.step_async(actions)
    return venv.step_wait()


def random_actions(venv, rng):
    space = venv.action_space
    if space.shape == ():
        return rng.integers(0, space.n, venv.num_envs)
    return rng.uniform(space.low, space.high, (venv.num_envs, *space.shape)).astype(space.dtype)


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("source", ["callable", "id"])
def test_slots_and_values_equal_supersuits(source, continuous):
    """Seeded alike (env i with seed + i) and given the same actions, every slot's observation, reward, done and
    terminal observation equal SuperSuit's, env-major (env 0's agents, then env 1's ...), through two episodes."""
    n, cycles = 3, 4
    if source == "callable":
        ours = fastvec.sb3_vec(spread(cycles, continuous), n)
    else:
        ours = fastvec.sb3_vec(
            "simple_spread_v3", n, backend="python", max_cycles=cycles, continuous_actions=continuous
        )
    ref = supersuit_vec(spread(cycles, continuous)(), n)
    try:
        assert isinstance(ours, SB3MultiAgentVecEnv)
        assert ours.num_envs == ref.num_envs == 9
        assert ours.observation_space == ref.observation_space and ours.action_space == ref.action_space
        assert [ours.env_slot(s) for s in (0, 1, 3, 8)] == [
            (0, "agent_0"),
            (0, "agent_1"),
            (1, "agent_0"),
            (2, "agent_2"),
        ]
        ours.seed(7)
        o1 = ours.reset()
        o2, ref.reset_infos = ref.venv.reset(seed=7)  # (SB3VecEnvWrapper.reset passes no seed on)
        np.testing.assert_array_equal(o1, o2)
        assert o1.dtype == o2.dtype and ours.reset_infos == ref.reset_infos
        rng = np.random.default_rng(0)
        ends = 0
        for _ in range(2 * cycles):
            a = random_actions(ours, rng)
            (obs1, rew1, done1, info1), (obs2, rew2, done2, info2) = step(ours, a), step(ref, a)
            np.testing.assert_array_equal(obs1, obs2)
            assert rew1.dtype == rew2.dtype == np.float32
            np.testing.assert_array_equal(rew1, rew2)
            np.testing.assert_array_equal(done1, done2)
            for s in np.flatnonzero(done2):
                np.testing.assert_array_equal(info1[s]["terminal_observation"], info2[s]["terminal_observation"])
                assert info1[s]["TimeLimit.truncated"]  # simple_spread ends at max_cycles: truncated
            ends += int(done1.sum())
        assert ends == 2 * ours.num_envs
    finally:
        ours.close()
        ref.close()


def test_dead_and_unborn_agents_keep_their_slots():
    """Dwindle: b terminates at step 2, c is born at step 1. A slot whose agent is not there holds a zero observation
    and a zero reward and is not done (SuperSuit's black_death_v3); every slot of an env is done at its episode end,
    with its agent's final observation (zeros for b) and TimeLimit.truncated from its agent's flags."""
    for end in ("terminated", "truncated"):
        env = fastvec.sb3_vec(functools.partial(Dwindle, length=4, end=end), 2, seed=0)
        try:
            obs = env.reset()
            a, b, c = (obs[s] for s in range(3))
            assert a[1] == 1 and b[1] == 2 and not c.any()  # c's slot: zeros until it is born
            assert env.reset_infos[:3] == [{"born": 0}, {"born": 0}, {}]
            acts = np.array([2, 1, 0] * 2)
            obs, rew, done, infos = step(env, acts)  # step 1: a and b act; c is born (no reward yet)
            assert rew[:3].tolist() == [2 + 1, 1 + 2, 0.0] and obs[2][1] == 3 and not done.any()
            assert infos[2] == {"born": 1, "TimeLimit.truncated": False}
            obs, rew, done, infos = step(env, acts)  # step 2: b terminates (its last observation, its reward)
            assert rew[:3].tolist() == [3.0, 3.0, 3.0] and obs[1][1] == 2 and not done.any()
            obs, rew, done, infos = step(env, acts)  # step 3: b is gone: zeros, no reward, not done
            assert rew[:3].tolist() == [3.0, 0.0, 3.0] and not obs[1].any() and not done.any()
            obs, rew, done, infos = step(env, acts)  # step 4: the episode ends; reset in the same step
            assert done.all() and rew[:3].tolist() == [3.0, 0.0, 3.0]
            finals = [infos[s]["terminal_observation"] for s in range(3)]
            assert finals[0].tolist() == [4, 1, finals[0][2]] and not finals[1].any() and finals[2][1] == 3
            truncated = end == "truncated"
            assert [infos[s]["TimeLimit.truncated"] for s in range(3)] == [truncated, False, truncated]
            assert [infos[s]["episode"]["r"] for s in range(3)] == [12.0, 6.0, 9.0]
            assert {infos[s]["episode"]["l"] for s in range(3)} == {4}
            assert [infos[s].get("t") for s in range(3)] == [4, None, 4]  # the final step's agent infos
            assert obs[0][0] == 0 and not obs[2].any()  # the new episode's first observations
            assert env.reset_infos[:3] == [{"born": 0}, {"born": 0}, {}]
        finally:
            env.close()


def test_black_death_steps_equal_supersuits_until_the_end():
    """Before the episode ends, the slots of an agent that died equal SuperSuit's black_death_v3's (zero observation,
    zero reward, not done). (At the end SuperSuit's black_death_v3 never reports done: it tests
    ``terminations & truncations``; here every slot of the env is done.)"""
    n = 2
    ours = fastvec.sb3_vec(functools.partial(Dwindle, birth=False), n)
    ref = supersuit_vec(ss.black_death_v3(Dwindle(birth=False)), n)
    try:
        ours.seed(3)
        np.testing.assert_array_equal(ours.reset(), ref.venv.reset(seed=3)[0])
        acts = np.array([0, 1, 2] * n)
        for _ in range(3):
            r1, r2 = step(ours, acts), step(ref, acts)
            for x, y in zip(r1[:3], r2[:3], strict=True):
                np.testing.assert_array_equal(x, y)
        assert not r1[0][1].any() and r1[1][1] == 0  # b's slot after its death
        assert step(ours, acts)[2].all() and not step(ref, acts)[2].any()
    finally:
        ours.close()
        ref.close()


def test_vecenv_contract():
    """What SB3 asks of a VecEnv (its tests/test_vec_envs.py checks, for slots): spaces, shapes and dtypes, info
    dicts, seeding, env calls through to each slot's env, Monitor's episode info."""
    env = fastvec.sb3_vec(spread(3), 2)
    try:
        assert isinstance(env, VecEnv) and env.num_envs == 6
        assert env.seed(5) == [5, 5, 5, 6, 6, 6]
        obs = env.reset()
        assert obs.shape == (6, 18) and obs.dtype == np.float32 and all(o in env.observation_space for o in obs)
        env.seed(5)
        np.testing.assert_array_equal(env.reset(), obs)  # same seed, same observations
        rng = np.random.default_rng(1)
        for _ in range(3):
            obs, rew, done, infos = step(env, random_actions(env, rng))
            assert obs.shape == (6, 18) and rew.shape == (6,) and done.shape == (6,) and done.dtype == bool
            assert isinstance(infos, list) and len(infos) == 6 and all(isinstance(d, dict) for d in infos)
            assert all("TimeLimit.truncated" in d for d in infos)
        assert done.all() and all(d["terminal_observation"] in env.observation_space for d in infos)
        assert {d["episode"]["l"] for d in infos} == {3}
        assert env.get_attr("possible_agents", [0, 4]) == [["agent_0", "agent_1", "agent_2"]] * 2
        env.set_attr("tag", 3)
        env.set_attr("tag", 7, indices=[3])
        assert env.get_attr("tag") == [3] * 3 + [7] * 3  # the slots of env 1 share it
        assert env.env_method("state", indices=[0, 1])[0].shape == (54,)
        assert env.env_is_wrapped(Monitor) == [True] * 6
        with pytest.raises(ValueError, match=r"one per slot \(6 = 2 envs x 3 agents\)"):
            step(env, np.zeros(2, dtype=np.int64))
        env.set_options([{"a": 1}] + [{}] * 5)
        with pytest.raises(ValueError, match="every slot takes the same options"):
            env.reset()
    finally:
        env.close()


def test_under_vecmonitor_and_vecnormalize():
    """VecMonitor counts each slot's episodes as the adapter's own Monitor info does; VecNormalize normalizes the
    slots' observations and terminal observations."""
    n, cycles = 2, 3
    env = VecNormalize(VecMonitor(fastvec.sb3_vec(spread(cycles), n, seed=0, monitor=False)), gamma=0.9)
    try:
        obs = env.reset()
        rng = np.random.default_rng(2)
        for _ in range(cycles):
            obs, rew, done, infos = step(env, rng.integers(0, 5, 6))
        assert done.all() and obs.shape == (6, 18) and np.isfinite(obs).all()
        assert all(d["episode"]["l"] == cycles for d in infos)
        raw = env.get_original_obs()
        assert not np.allclose(raw, obs)  # normalized
        term = np.stack([d["terminal_observation"] for d in infos])
        assert term.shape == (6, 18) and np.abs(term).max() <= env.clip_obs
    finally:
        env.close()


def test_agents_with_different_spaces_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"same observation space: agent 'adversary_0' has Box.*agent 'agent_0' has"):
        fastvec.sb3_vec("simple_adversary_v3", 2, backend="python")
    with pytest.raises(ValueError, match="autoreset_mode must be 'same_step'"):
        fastvec.sb3_vec(spread(), 2, autoreset_mode="next_step")


def test_ppo_trains_on_simple_spread():
    """PPO with one policy shared by every agent (SuperSuit's recipe) trains through the slots: whole episodes of
    every slot reach its episode buffer, and the policy moves. (That it learns takes longer than a test should:
    benchmarks/bench_sb3_multiagent_learning.py, 200k agent-steps, random -24.1 -> trained -18.4 per agent.)"""
    import torch

    env = fastvec.sb3_vec(spread(25), 4, seed=0)
    try:
        model = PPO("MlpPolicy", env, n_steps=64, batch_size=256, n_epochs=2, seed=0, device="cpu")
        before = [p.detach().clone() for p in model.policy.parameters()]
        model.learn(4 * 3 * 64 * 2)
        assert model.num_timesteps == 4 * 3 * 64 * 2
        episodes = list(model.ep_info_buffer)
        assert len(episodes) == 12 * 5  # 128 steps a slot: 5 whole episodes of 25 each
        assert {e["l"] for e in episodes} == {25} and all(np.isfinite(e["r"]) and e["r"] < 0 for e in episodes)
        assert any(not torch.equal(a, b) for a, b in zip(before, model.policy.parameters(), strict=True))
    finally:
        env.close()


def _mean_agent_return(model, env, seed: int, episodes_per_slot: int = 2) -> float:
    """Mean episode return of the slots: the model's deterministic actions, or uniform random ones without one."""
    rng = np.random.default_rng(seed)
    sums = np.zeros(env.num_envs)
    returns: list[float] = []
    env.seed(seed)
    obs = env.reset()
    while len(returns) < episodes_per_slot * env.num_envs:
        act = model.predict(obs, deterministic=True)[0] if model is not None else rng.integers(0, 5, env.num_envs)
        obs, rew, done, _ = env.step(act)
        sums += rew
        returns += sums[done].tolist()
        sums[done] = 0.0
    return float(np.mean(returns))


@pytest.mark.slow
def test_ppo_learns_simple_spread():
    """PPO with one policy shared by the agents learns simple_spread through the slots of the native port: on the
    same seeds, the trained policy's mean episode return per agent beats a random policy's by a margin far beyond
    the two scores' noise (benchmarks/bench_sb3_multiagent_learning.py does the same over mpe2's env)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    env = fastvec.sb3_vec("simple_spread_v3", 8, seed=0, max_cycles=25)
    try:
        random_return = _mean_agent_return(None, env, 100)
        model = PPO("MlpPolicy", env, n_steps=64, batch_size=512, n_epochs=4, learning_rate=1e-3, seed=0, device="cpu")
        model.learn(100_000)
        trained = _mean_agent_return(model, env, 100)
    finally:
        env.close()
        torch.set_num_threads(threads)
    assert trained > random_return + 3.0, (random_return, trained)
