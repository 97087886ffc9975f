"""SB3's PPO learns the native LunarLander-v3 through fastvec.sb3_vec, with rl-baselines3-zoo's hyper-parameters
(issue 33)."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

import fastvec

pytestmark = [pytest.mark.slow, pytest.mark.box2d]

# rl-baselines3-zoo's hyperparams/ppo.yml for LunarLander-v2 (and v3): 16 envs and these, for 1e6 steps.
ZOO_PPO = {"n_steps": 1024, "batch_size": 64, "gae_lambda": 0.98, "gamma": 0.999, "n_epochs": 4, "ent_coef": 0.01}
STEPS = 30 * 16 * 1024  # 30 rollouts of 16 envs: 491,520 steps, half the zoo's budget
EVAL_SEED = 1_000  # the training envs are seeded 0-15


def _episode_returns(policy, env) -> np.ndarray:
    """The first episode's return of each env of ``env``, reset with the seeds EVAL_SEED + i, by SB3's
    evaluate_policy: the same start states (terrain, initial push) for every policy evaluated."""
    from stable_baselines3.common.evaluation import evaluate_policy

    env.seed(EVAL_SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # evaluate_policy warns when it cannot find Monitor's statistics
        returns, lengths = evaluate_policy(
            policy, env, n_eval_episodes=env.num_envs, deterministic=True, return_episode_rewards=True
        )
    assert len(returns) == env.num_envs and all(0 < n <= 1000 for n in lengths)
    return np.asarray(returns)


# About 115 s of one core (PPO's updates, not the envs): on a busy 2-core machine it can pass pytest's default
# 240 s, which is there to catch hangs, not slow learning; this one's own bound is a hang's too.
@pytest.mark.timeout(900)
def test_ppo_learns_lunar_lander():
    """PPO("MlpPolicy") with the zoo's hyper-parameters, trained on 16 envs for 491,520 steps, lands: the mean
    return of its deterministic policy over 32 episodes from fresh seeds is above random's and the untrained policy's
    (the same 32 start states) by at least 200.

    rl-baselines3-zoo trains for 1e6 steps; half that is what fits a CI test (about 2 minutes of one core). With these
    hyper-parameters the deterministic policy first learns to hover, which times out or drifts off near -150, about as
    bad as random's crashes (-187 here); it starts landing abruptly, its mean first above the bar after 295k to 426k
    steps (training seeds 0-4), and stays above it. At the budget the trained means were 151, 165, 227, 227 and 246
    (seeds 0-4; worst after crossing: 104), the untrained policies' -260 to -1017: the bar (about +13) stands 90
    below the worst, and 12 standard errors of random's mean above it."""
    import torch
    from stable_baselines3 import PPO

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    env = fastvec.sb3_vec("LunarLander-v3", 16, seed=0)
    eval_env = fastvec.sb3_vec("LunarLander-v3", 32)
    rng = np.random.default_rng(0)

    class Uniform:
        def predict(self, obs, state=None, episode_start=None, deterministic=False):
            return rng.integers(0, 4, len(obs)), None

    try:
        random_return = _episode_returns(Uniform(), eval_env).mean()
        model = PPO("MlpPolicy", env, **ZOO_PPO, seed=0, device="cpu")
        untrained_return = _episode_returns(model, eval_env).mean()
        start = time.time()
        model.learn(STEPS)
        elapsed = time.time() - start
        assert model.num_timesteps == STEPS
        trained_return = _episode_returns(model, eval_env).mean()
    finally:
        env.close()
        eval_env.close()
        torch.set_num_threads(threads)
    print(
        f"PPO on LunarLander-v3: {trained_return:.1f} against random {random_return:.1f}, untrained"
        f" {untrained_return:.1f}; {elapsed:.0f} s of training"
    )
    assert trained_return >= max(random_return, untrained_return) + 200, (
        trained_return,
        random_return,
        untrained_return,
    )
