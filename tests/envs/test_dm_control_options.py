"""fastvec's dm_control tasks off the beaten path, each against what dm_control 1.0.52 does: ``time_limit`` (none
at all included), NaN, infinite and huge actions, bad options, the one task that terminates (lqr, discount 0), and a
user's broken model (``xml_file``); and the table of EnvPool's ids (fastvec.dm_control_tasks) against the suite.

Where dm_control computes a value, fastvec's is compared bit for bit (test_dm_control.py's ``assert_same``); where
dm_control raises, fastvec raises a clear error at the same step, and the pool goes on afterwards as dm_control's
env does.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from test_dm_control import assert_obs, assert_same, suite_load

import fastvec
import fastvec.envpool
from fastvec import dm_control_models, dm_control_tasks

pytestmark = [pytest.mark.versions, pytest.mark.mujoco]


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """MuJoCo may append its warnings to MUJOCO_LOG.TXT in the working directory: not the checkout's."""
    monkeypatch.chdir(tmp_path)


def test_ids_are_envpools_spelling_of_the_suites_tasks():
    """Every pair of the table is a task of dm_control's suite, every id EnvPool's spelling of its pair (EnvPool
    1.2.5's 51), and every dm_control id this fastvec registers is in the table."""
    from dm_control import suite

    pairs = dm_control_tasks.SUITE_TASKS
    assert len(set(pairs)) == len(pairs) == 51
    assert set(pairs) <= set(suite.ALL_TASKS)
    assert dm_control_tasks.envpool_id("ball_in_cup", "catch") == "BallInCupCatch-v1"
    for domain, task in pairs:
        assert dm_control_tasks.suite_task(dm_control_tasks.envpool_id(domain, task)) == (domain, task)
    assert dm_control_tasks.suite_task("HumanoidCMURun-v1") == ("humanoid_CMU", "run")
    assert dm_control_tasks.suite_task("LqrLqr62-v1") == ("lqr", "lqr_6_2")
    registered = fastvec.registry.family_ids("dm_control")
    assert len(registered) >= 45
    for env_id in registered:
        dm_control_tasks.suite_task(env_id)
    for wrong in ("WalkerFly-v1", "WalkerWalk-v5", "CartPole-v1"):
        with pytest.raises(ValueError, match=f"env_id '{wrong}' is not a DeepMind Control Suite task"):
            dm_control_tasks.suite_task(wrong)


# --- time_limit ---------------------------------------------------------------------------------------------------


def test_time_limit_inf_is_no_limit():
    """time_limit=float("inf"), as dm_control takes it: no truncation past the suite's 1,000 steps, and the same
    observations and rewards as dm_control's env with the same time_limit, bit for bit, over 1,100 steps."""
    seed, n, steps = 3, 2, 1100
    refs = [suite_load("WalkerWalk-v1", seed + i, math.inf) for i in range(n)]
    actions = np.random.default_rng(0).uniform(-1, 1, (steps, n, 6))
    with fastvec.make("WalkerWalk-v1", num_envs=n, time_limit=math.inf) as env:
        assert env.spec is not None and env.spec.max_episode_steps is None
        obs, _ = env.reset(seed=seed)
        for i, ref in enumerate(refs):
            assert_obs(obs, i, ref.reset().observation, f"env {i} reset")
        for t, a in enumerate(actions):
            obs, reward, terminated, truncated, _ = env.step(a)
            assert not terminated.any() and not truncated.any(), t
            for i, ref in enumerate(refs):
                ts = ref.step(a[i])
                assert ts.mid() and ts.discount == 1.0, (t, i)
                assert_obs(obs, i, ts.observation, f"step {t} env {i}")
                assert_same(reward[i], np.float64(ts.reward), f"step {t} env {i} reward")


def test_time_limit_through_sb3_and_gymnasium_make():
    """The option reaches SB3's VecEnv and gymnasium.make's env: inf, no episode ends at 1,000 steps (gymnasium.make
    adds its TimeLimit of the registered 1,000 steps unless told max_episode_steps=-1, as for any env); 0.05 s,
    episodes of 5 steps, after which the env wants a reset."""
    import gymnasium as gym

    from fastvec._args import ResetNeeded

    venv = fastvec.sb3_vec("CartpoleBalance-v1", num_envs=2, seed=0, time_limit=math.inf)
    venv.reset()
    for _ in range(1001):
        _, _, dones, _ = venv.step(np.zeros((2, 1)))
        assert not dones.any()
    venv.close()
    zero = np.zeros(1, dtype=np.float32)
    env = gym.make("fastvec/CartpoleBalance-v1", time_limit=math.inf, max_episode_steps=-1)
    env.reset(seed=0)
    for _ in range(1001):
        *_, terminated, truncated, _ = env.step(zero)
        assert not (terminated or truncated)
    env.close()
    env = gym.make("fastvec/CartpoleBalance-v1", time_limit=math.inf)
    env.reset(seed=0)
    assert [env.step(zero)[3] for _ in range(1000)] == [False] * 999 + [True]  # gymnasium's TimeLimit
    env.close()
    env = gym.make("fastvec/CartpoleBalance-v1", time_limit=0.05)
    for _ in range(2):
        env.reset(seed=0)
        assert [env.step(zero)[3] for _ in range(5)] == [False] * 4 + [True]
        with pytest.raises(ResetNeeded, match=r"the episode has reached its time_limit; call env\.reset\(\)"):
            env.step(zero)
    env.close()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"time_limit": math.nan}, ValueError, "option 'time_limit' must be finite, got nan"),
        ({"time_limit": -math.inf}, ValueError, "option 'time_limit' must be finite, got -inf"),
        ({"time_limit": 0.0}, ValueError, r"option 'time_limit' must be > 0 seconds \(or inf: no limit\), got 0.0"),
        ({"time_limit": -1}, ValueError, r"option 'time_limit' must be > 0 seconds \(or inf: no limit\), got -1"),
        ({"time_limit": 1e300}, ValueError, r"option 'time_limit' must be a positive number of seconds up to"),
        ({"time_limit": "10"}, TypeError, "option 'time_limit' must be a number or bool, got str"),
        ({"time_limit": None}, TypeError, "option 'time_limit' must be a number or bool, got NoneType"),
        (
            {"time_limit": math.inf, "max_episode_steps": 2000},
            ValueError,
            r"max_episode_steps \(2000\) and time_limit \(inf s, no limit\) are the same limit",
        ),
        ({"flat_observation": "yes"}, TypeError, "option 'flat_observation' must be a number or bool, got str"),
        ({"flat_observation": 2}, ValueError, "flat_observation must be a bool, got 2"),
        ({"visualize_reward": True}, ValueError, "visualize_reward: fastvec's dm_control envs do not colour the model"),
        ({"xml_file": 3}, TypeError, "option 'xml_file' must be a path"),
        # dm_control's suite.load arguments are not fastvec's keywords: each is named, with the accepted ones
        (
            {"environment_kwargs": {"flat_observation": True}},
            TypeError,
            "'environment_kwargs' .*accepted: .*flat_observation",
        ),
        ({"task_kwargs": {"random": 1}}, TypeError, "unexpected keyword argument 'task_kwargs'"),
        ({"random": 1}, TypeError, "unexpected keyword argument 'random'"),
        ({"control_timestep": 0.1}, TypeError, "unexpected keyword argument 'control_timestep'"),
    ],
)
def test_bad_option_is_a_clear_error(kwargs, error, match):
    with pytest.raises(error, match=match):
        fastvec.make("WalkerWalk-v1", num_envs=2, **kwargs)
    with fastvec.make("WalkerWalk-v1", num_envs=2) as env:  # nothing was left behind
        env.reset(seed=0)
        assert np.isfinite(env.step(np.zeros((2, 6)))[1]).all()


# --- NaN, infinite and huge actions -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("env_id", ["CartpoleBalance-v1", "LqrLqr21-v1"])
def test_non_finite_actions_are_refused_and_the_step_not_taken(env_id, value, dtype):
    """dm_control raises PhysicsError (mjWARN_BADCTRL) for a NaN control, and for an infinite one on an unbounded
    actuator (lqr's); on a bounded one (cartpole's) MuJoCo clamps inf to the bound. fastvec refuses any non-finite
    action with a ValueError naming the row, before the step is taken: stepped afterwards, each env is where
    dm_control's env is that never took the bad action."""
    from dm_control.rl.control import PhysicsError

    bad, bound = suite_load(env_id, 1), suite_load(env_id, 1)
    bad.reset()
    bound.reset()
    if math.isnan(value) or env_id.startswith("Lqr"):
        with pytest.raises(PhysicsError, match="mjWARN_BADCTRL"):
            bad.step(np.full(1, value))
    else:  # cartpole's motor is limited to [-1, 1]
        clamped = bad.step(np.full(1, value)).observation
        assert_obs({k: v[None] for k, v in clamped.items()}, 0, bound.step(np.sign([value])).observation, "inf")
    refs = [suite_load(env_id, 1 + i) for i in range(2)]
    with fastvec.make(env_id, num_envs=2) as env:
        env.reset(seed=1)
        for ref in refs:
            ref.reset()
        actions = np.array([[0.5], [value]], dtype=dtype)
        with pytest.raises(ValueError, match=r"actions must be finite.* for env row 1"):
            env.step(actions)
        a = np.array([[0.5], [-0.5]])
        obs, reward, *_ = env.step(a)
        for i, ref in enumerate(refs):
            ts = ref.step(a[i])
            assert_obs(obs, i, ts.observation, f"env {i}")
            assert_same(reward[i], np.float64(ts.reward), f"env {i} reward")


def test_non_finite_actions_refused_in_async_send():
    with fastvec.make("CartpoleBalance-v1", num_envs=2, batch_size=1) as env:
        env.async_reset(seed=0)
        ids = env.recv()[4]["env_id"]
        with pytest.raises(ValueError, match="actions must be finite, got nan for env row 0"):
            env.send(np.full((1, 1), np.nan), ids)
        env.send(np.zeros((1, 1)), ids)
        env.send(np.zeros((1, 1)), env.recv()[4]["env_id"])
        obs, reward, *_ = env.recv()
        assert np.isfinite(reward).all() and np.isfinite(obs["position"]).all()


def test_huge_actions_as_dm_control():
    """A finite but huge control (1e30): clamped to a bounded actuator's range by MuJoCo, as in dm_control (the
    same observations, bit for bit); on lqr's unbounded actuator dm_control raises PhysicsError, and fastvec an
    EnvError naming the env and the PhysicsError; after a reset both go on from the same RandomState."""
    from dm_control.rl.control import PhysicsError

    ref = suite_load("CartpoleBalance-v1", 4)
    with fastvec.make("CartpoleBalance-v1", num_envs=1) as env:
        env.reset(seed=4)
        ref.reset()
        for a in (1e30, -1e30, 1.0):
            obs, reward, *_ = env.step(np.full((1, 1), a))
            ts = ref.step(np.full(1, a))
            assert_obs(obs, 0, ts.observation, f"action {a}")
            assert_same(reward[0], np.float64(ts.reward), f"action {a} reward")

    refs = [suite_load("LqrLqr21-v1", 4 + i) for i in range(2)]
    with fastvec.make("LqrLqr21-v1", num_envs=2) as env:
        env.reset(seed=4)
        for r in refs:
            r.reset()
        with pytest.raises(PhysicsError, match="mjWARN_BADCTRL"):
            refs[1].step(np.full(1, 1e30))
        with pytest.raises(fastvec.EnvError, match=r"env 1 raised: PhysicsError: .*CTRL at ACTUATOR 0"):
            env.step(np.array([[0.0], [1e30]]))
        with pytest.raises(RuntimeError, match="reset it before stepping it again"):
            env.step(np.zeros((2, 1)))
        obs, _ = env.reset()  # each env's RandomState goes on, as dm_control's task's does
        for i, r in enumerate(refs):
            assert_obs(obs, i, r.reset().observation, f"env {i} reset")
        obs, reward, *_ = env.step(np.full((2, 1), 0.25))
        for i, r in enumerate(refs):
            ts = r.step(np.full(1, 0.25))
            assert_obs(obs, i, ts.observation, f"env {i}")
            assert_same(reward[i], np.float64(ts.reward), f"env {i} reward")


# --- termination: discount 0 ---------------------------------------------------------------------------------------


def _lqr_episodes(seeds: list[int]) -> list[dict]:
    """dm_control's lqr_2_1 under its optimal controller (dm_control.suite.lqr_solver, u = k x) until the episode
    ends, per seed: the actions, observations, rewards and discounts, and the second episode's reset."""
    from dm_control.suite import lqr_solver

    episodes = []
    for seed in seeds:
        ref = suite_load("LqrLqr21-v1", seed)
        ts = ref.reset()
        _, gain, _ = lqr_solver.solve(ref)
        steps: list = []
        while not ts.last():
            action = gain @ np.concatenate([ts.observation["position"], ts.observation["velocity"]])
            ts = ref.step(action)
            steps.append((action, ts))
        episodes.append({"steps": steps, "next_reset": ref.reset().observation})
    return episodes


def test_lqr_terminates_with_discount_0_as_dm_control():
    """lqr is the suite's one task that terminates: its get_termination gives discount 0 once the state's norm is
    below 1e-6, which the optimal controller reaches after some 5,000 steps (no time limit: lqr's is infinite).
    fastvec terminates each env at dm_control's step (terminated, not truncated; observations and rewards bit for
    bit on the way), autoresets it next step into dm_control's second episode, and its dm_env TimeStep has
    discount 0 and step type LAST there, 1 and MID before."""
    seeds = [0, 5]
    episodes = _lqr_episodes(seeds)
    lengths = [len(e["steps"]) for e in episodes]
    assert all(1000 < n < 10_000 for n in lengths) and lengths[0] != lengths[1], lengths
    for e in episodes:
        *before, (_, last) = e["steps"]
        assert last.discount == 0.0 and last.last()
        assert all(ts.discount == 1.0 and ts.mid() for _, ts in before)

    horizon = max(lengths)

    def action(t: int) -> np.ndarray:  # each env's controller while its episode lasts, then zeros
        return np.array([e["steps"][t][0] if t < len(e["steps"]) else np.zeros(1) for e in episodes])

    with fastvec.make("LqrLqr21-v1", num_envs=2) as env:
        obs, _ = env.reset(seed=seeds)
        for t in range(horizon):
            obs, reward, terminated, truncated, _ = env.step(action(t))
            assert not truncated.any(), t
            for i, e in enumerate(episodes):
                n = len(e["steps"])
                if t < n:
                    ts = e["steps"][t][1]
                    assert terminated[i] == (t == n - 1), (t, i)
                    assert_obs(obs, i, ts.observation, f"step {t} env {i}")
                    assert_same(reward[i], np.float64(ts.reward), f"step {t} env {i} reward")
                elif t == n:  # next_step autoreset: the new episode, from where the RandomState was left
                    assert not terminated[i] and reward[i] == 0.0
                    assert_obs(obs, i, e["next_reset"], f"env {i} second reset")

    dm = fastvec.envpool.make_dm("LqrLqr21-v1", num_envs=1, seed=seeds[0])
    dm.reset()
    steps = episodes[0]["steps"]
    for t, (a, ts) in enumerate(steps):
        got = dm.step(a[None])
        assert got.discount[0] == np.float32(ts.discount) and got.step_type[0] == int(ts.step_type), t
    assert got.discount[0] == 0.0 and got.step_type[0] == 2
    dm.close()


# --- a user's model ------------------------------------------------------------------------------------------------


def _cartpole_xml(tmp_path, gear: str = "10"):
    """The suite's cartpole.xml with its includes made absolute (so the file can live anywhere) and the motor's
    gear set."""
    suite = dm_control_models.suite_dir()
    text = (suite / "cartpole.xml").read_text()
    assert text.count('file="./common/') == 3 and text.count('gear="10"') == 1
    path = tmp_path / f"cartpole_gear_{gear}.xml"
    path.write_text(text.replace('file="./common/', f'file="{suite}/common/').replace('gear="10"', f'gear="{gear}"'))
    return path


def test_users_model_that_does_not_load(tmp_path):
    """xml_file is the one way a user brings a model: one that MuJoCo cannot parse, or that lacks what the task
    reads, is a ValueError naming xml_file when the env is made."""
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body")
    with pytest.raises(ValueError, match=f"xml_file: MuJoCo cannot load {re.escape(str(broken))}: XML parse error"):
        fastvec.make("CartpoleBalance-v1", num_envs=2, xml_file=str(broken))
    other = tmp_path / "other.xml"
    other.write_text("<mujoco><worldbody><body><joint type='hinge'/><geom size='.1'/></body></worldbody></mujoco>")
    with pytest.raises(ValueError, match="xml_file: the model has no joint named 'slider'"):
        fastvec.make("CartpoleBalance-v1", num_envs=2, xml_file=str(other))
    with pytest.raises(ValueError, match="xml_file: the model has no joint named 'slider'"):
        fastvec.make("CartpoleBalance-v1", num_envs=2, xml_file="walker.xml")  # a suite model, another domain's
    with fastvec.make("CartpoleBalance-v1", num_envs=2, xml_file=str(_cartpole_xml(tmp_path))) as env:
        obs, _ = env.reset(seed=2)  # the suite's model, from elsewhere: the suite's task
        assert_obs(obs, 1, suite_load("CartpoleBalance-v1", 3).reset().observation, "reset")


def test_users_model_whose_physics_diverge(tmp_path):
    """A model that loads but blows up (a motor geared 1e30): dm_control's env over it raises PhysicsError
    (mjWARN_BADQACC) at the first step that pushes, fastvec an EnvError naming the env and the PhysicsError at the
    same step; after a reset, both go on alike (bit for bit), with the other env unharmed."""
    from dm_control.rl import control
    from dm_control.suite import cartpole

    path = _cartpole_xml(tmp_path, gear="1e30")

    def ref(seed: int):
        physics = cartpole.Physics.from_xml_path(str(path))
        return control.Environment(physics, cartpole.Balance(swing_up=False, sparse=False, random=seed))

    refs = [ref(6), ref(7)]
    for r in refs:
        r.reset()
    assert refs[0].step(np.zeros(1)).mid()  # no push: no blow-up
    with pytest.raises(control.PhysicsError, match="mjWARN_BADQACC"):
        refs[0].step(np.ones(1))
    with fastvec.make("CartpoleBalance-v1", num_envs=2, xml_file=str(path)) as env:
        env.reset(seed=6)
        env.step(np.zeros((2, 1)))
        refs[1].step(np.zeros(1))
        with pytest.raises(fastvec.EnvError, match=r"env 0 raised: PhysicsError: .*QACC"):
            env.step(np.array([[1.0], [0.0]]))
        obs, _ = env.reset()
        for i, r in enumerate(refs):
            assert_obs(obs, i, r.reset().observation, f"env {i} reset")
        for t in range(20):
            obs, reward, *_ = env.step(np.zeros((2, 1)))
            for i, r in enumerate(refs):
                ts = r.step(np.zeros(1))
                assert_obs(obs, i, ts.observation, f"step {t} env {i}")
                assert_same(reward[i], np.float64(ts.reward), f"step {t} env {i} reward")
