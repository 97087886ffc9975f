"""Stable-Baselines3 2.x's own tests of Monitor with a ``SubprocVecEnv``, with ``fastvec.sb3_vec(env_fns)`` in its
place: ``tests/test_utils.py``'s ``test_evaluate_policy_monitors`` and ``tests/test_vec_monitor.py``'s
``test_vec_monitor_warn`` and ``test_vec_monitor_ppo``. A list of callables is ``SubprocVecEnv``'s idiom: nothing is
added to the envs, so an env is Monitor-wrapped exactly when its callable wraps it; an id keeps ``make_vec_env``'s
Monitor (``test_make_vec_env_ids_keep_monitor``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor, VecNormalize

import fastvec

pytestmark = pytest.mark.versions  # SB3's warnings and numpy's error states (CI's variant passes)


def subproc(env_fns):
    """fastvec in place of ``SubprocVecEnv(env_fns)``."""
    return fastvec.sb3_vec(list(env_fns), start_method="fork", num_workers=min(2, len(env_fns)))


class ZeroRewardWrapper(gym.RewardWrapper):
    def reward(self, reward):
        return reward * 0


class AlwaysDoneWrapper(gym.Wrapper):
    # Pretends that environment only has single step for each episode.
    def __init__(self, env):
        super().__init__(env)
        self.last_obs = None
        self.needs_reset = True

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.needs_reset = terminated or truncated
        self.last_obs = obs
        return obs, reward, True, truncated, info

    def reset(self, **kwargs):
        info = {}
        if self.needs_reset:
            obs, info = self.env.reset(**kwargs)
            self.last_obs = obs
            self.needs_reset = False
        return self.last_obs, info


@pytest.mark.parametrize("vec_env_class", [subproc, SubprocVecEnv])
def test_evaluate_policy_monitors(vec_env_class):
    """test_evaluate_policy_monitors (its VecEnv cases; ``np.seterr(all="raise")`` as ``np.errstate``, so that it
    does not outlive the test): ``evaluate_policy`` warns without a Monitor in the envs, and takes the rewards
    and episode ends from the envs' own Monitor when there is one."""
    from stable_baselines3 import A2C

    n_eval_episodes = 3
    n_envs = 2
    env_id = "CartPole-v1"
    model = A2C("MlpPolicy", env_id, seed=0, policy_kwargs=dict(net_arch=[]))

    def make_eval_env(with_monitor, wrapper_class=gym.Wrapper):
        if with_monitor:
            return vec_env_class([lambda: wrapper_class(Monitor(gym.make(env_id)))] * n_envs)
        return vec_env_class([lambda: wrapper_class(gym.make(env_id))] * n_envs)

    with np.errstate(all="raise"):
        eval_env = make_eval_env(with_monitor=True)
        _ = evaluate_policy(model, eval_env, n_eval_episodes)
        eval_env.close()

        # Warning without Monitor
        eval_env = make_eval_env(with_monitor=False)
        with pytest.warns(UserWarning):
            _ = evaluate_policy(model, eval_env, n_eval_episodes)
        eval_env.close()

        # Sanity check that we get zero-reward without Monitor
        eval_env = make_eval_env(with_monitor=False, wrapper_class=ZeroRewardWrapper)
        average_reward, _ = evaluate_policy(model, eval_env, n_eval_episodes, warn=False)
        assert average_reward == 0.0, "ZeroRewardWrapper wrapper for testing did not work"
        eval_env.close()

        # Should get non-zero-rewards with Monitor (true reward)
        eval_env = make_eval_env(with_monitor=True, wrapper_class=ZeroRewardWrapper)
        average_reward, _ = evaluate_policy(model, eval_env, n_eval_episodes)
        assert average_reward > 0.0, "evaluate_policy did not get reward from Monitor"
        eval_env.close()

        # Sanity check that we get only one step per episode.
        eval_env = make_eval_env(with_monitor=False, wrapper_class=AlwaysDoneWrapper)
        _, episode_lengths = evaluate_policy(model, eval_env, n_eval_episodes, return_episode_rewards=True, warn=False)
        assert all(length == 1 for length in episode_lengths), "AlwaysDoneWrapper did not fix episode lengths to one"
        eval_env.close()

        # Should get longer episodes with Monitor (true episodes)
        eval_env = make_eval_env(with_monitor=True, wrapper_class=AlwaysDoneWrapper)
        _, episode_lengths = evaluate_policy(model, eval_env, n_eval_episodes, return_episode_rewards=True)
        assert all(length > 1 for length in episode_lengths), "evaluate_policy did not get episode lengths from Monitor"
        eval_env.close()


def test_vec_monitor_warn():
    """test_vec_monitor_warn, over ``subproc``: VecMonitor warns of envs already wrapped in Monitor."""
    env = subproc([lambda: Monitor(gym.make("CartPole-v1"))])
    with pytest.warns(UserWarning, match="already wrapped with a `Monitor`"):
        VecMonitor(env)
    with pytest.warns(UserWarning, match="already wrapped with a `Monitor`"):
        VecMonitor(VecNormalize(env))
    env.close()


def test_vec_monitor_ppo(recwarn):
    """test_vec_monitor_ppo, over ``subproc``: VecMonitor over envs with no Monitor neither warns of a double
    Monitor nor leaves ``evaluate_policy`` to warn of a missing one."""
    from stable_baselines3 import PPO

    env = subproc([lambda: gym.make("CartPole-v1")])
    env.seed(seed=0)
    monitor_env = VecMonitor(env)
    model = PPO("MlpPolicy", monitor_env, verbose=0, n_steps=64, device="cpu")
    model.learn(total_timesteps=250)
    # No warnings because using `VecMonitor`
    evaluate_policy(model, monitor_env)
    # JAX, started by another test in this pytest worker (tests/api/test_xla.py), warns at every fork; not SB3's.
    warned = [w for w in recwarn if "JAX is multithreaded" not in str(w.message)]
    assert len(warned) == 0, f"{[str(warning) for warning in warned]}"
    monitor_env.close()


def test_env_is_wrapped_is_each_envs_own_as_subproc_vec_envs():
    """``env_is_wrapped(Monitor)`` is what ``SubprocVecEnv`` says of the same callables: False for an env its
    callable does not wrap."""
    fns = [lambda: gym.make("CartPole-v1"), lambda: Monitor(gym.make("CartPole-v1"))]
    ours, ref = subproc(fns), SubprocVecEnv(fns, start_method="fork")
    assert ours.env_is_wrapped(Monitor) == ref.env_is_wrapped(Monitor) == [False, True]
    ours.close()
    ref.close()


def test_make_vec_env_ids_keep_monitor():
    """An id (``make_vec_env(id, n)``'s idiom, which wraps every env in Monitor) keeps Monitor's episode info, and
    so does one callable with ``num_envs``; ``monitor=`` chooses either way."""
    from stable_baselines3.common.env_util import make_vec_env

    ref = make_vec_env("CartPole-v1", 2, vec_env_cls=DummyVecEnv)
    for env in (
        fastvec.sb3_vec("CartPole-v1", 2, seed=0),
        fastvec.sb3_vec(lambda: gym.make("CartPole-v1"), 2, start_method="fork", num_workers=1),
        fastvec.sb3_vec([lambda: gym.make("CartPole-v1")] * 2, monitor=True, start_method="fork", num_workers=1),
    ):
        assert env.env_is_wrapped(Monitor) == ref.env_is_wrapped(Monitor) == [True, True]
        env.reset()
        infos: list = []
        for _ in range(600):  # CartPole ends within 500 steps
            *_, infos = env.step(np.zeros(2, np.int64))
            if any("episode" in i for i in infos):
                break
        assert any("episode" in i for i in infos)
        env.close()
    ref.close()
    plain = fastvec.sb3_vec("CartPole-v1", 2, seed=0, monitor=False)
    assert plain.env_is_wrapped(Monitor) == [False, False]
    plain.close()
