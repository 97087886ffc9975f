"""CleanRL-style scripts on fastvec.envpool: PPO loops written here in the shape of CleanRL's EnvPool scripts
(``ppo_atari_envpool.py``: ``import gym`` (0.26, what those scripts ran with), EnvPool's 0.6-0.8 gym API, an
episode-statistics ``gym.Wrapper`` that probes the env for lives and reads ``info["reward"]``/``info["lives"]``,
the assert that the action space is ``gym.spaces.Discrete``, ``envs.num_envs = ...`` and the single spaces set
again), run with only the import changed, and the same loop in EnvPool 1.2's gymnasium form run unchanged on
EnvPool and on fastvec."""

from __future__ import annotations

import warnings

import gym  # the gym package (0.26), as CleanRL's EnvPool scripts import it: not gymnasium
import numpy as np
import pytest

import fastvec.envpool
import fastvec.envpool.legacy

torch = pytest.importorskip("torch")
nn = torch.nn

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import envpool

pytestmark = [
    pytest.mark.versions,
    pytest.mark.filterwarnings("ignore:.*precision lowered by casting to float32:UserWarning"),
]


class RecordEpisodeStatistics(gym.Wrapper):
    """CleanRL's episode statistics for EnvPool's legacy gym API: gym's Wrapper (which forwards other attributes,
    as ``envs.single_observation_space``, to the env); returns of the unclipped reward (info["reward"]), summed over
    the lives of a game when the env has lives (probed with a reset and a step, as CleanRL's does)."""

    def __init__(self, env, deque_size=100):
        super().__init__(env)
        self.num_envs = getattr(env, "num_envs", 1)
        self.episode_returns = None
        self.episode_lengths = None
        self.has_lives = False
        env.reset()
        info = env.step(np.zeros(self.num_envs, dtype=int))[-1]
        if info["lives"].sum() > 0:
            self.has_lives = True

    def reset(self, **kwargs):
        observations = super().reset(**kwargs)
        self.episode_returns = np.zeros(self.num_envs, dtype=np.float32)
        self.episode_lengths = np.zeros(self.num_envs, dtype=np.int32)
        self.lives = np.zeros(self.num_envs, dtype=np.int32)
        self.returned_episode_returns = np.zeros(self.num_envs, dtype=np.float32)
        self.returned_episode_lengths = np.zeros(self.num_envs, dtype=np.int32)
        return observations

    def step(self, action):
        observations, rewards, dones, infos = super().step(action)
        self.episode_returns += infos["reward"]
        self.episode_lengths += 1
        self.returned_episode_returns[:] = self.episode_returns
        self.returned_episode_lengths[:] = self.episode_lengths
        all_lives_exhausted = infos["lives"] == 0
        if self.has_lives:
            self.episode_returns *= 1 - all_lives_exhausted
            self.episode_lengths *= 1 - all_lives_exhausted
        else:
            self.episode_returns *= 1 - dones
            self.episode_lengths *= 1 - dones
        infos["r"] = self.returned_episode_returns
        infos["l"] = self.returned_episode_lengths
        return observations, rewards, dones, infos


def layer_init(layer, std=2**0.5, bias_const=0.0):
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, envs, cnn: bool):
        super().__init__()
        if cnn:
            c = envs.single_observation_space.shape[0]
            self.network = nn.Sequential(
                layer_init(nn.Conv2d(c, 16, 8, stride=4)),
                nn.ReLU(),
                layer_init(nn.Conv2d(16, 32, 4, stride=2)),
                nn.ReLU(),
                nn.Flatten(),
                layer_init(nn.Linear(32 * 9 * 9, 128)),
                nn.ReLU(),
            )
        else:
            n = int(np.prod(envs.single_observation_space.shape))
            self.network = nn.Sequential(layer_init(nn.Linear(n, 64)), nn.Tanh(), layer_init(nn.Linear(64, 128)))
        self.cnn = cnn
        self.actor = layer_init(nn.Linear(128, envs.single_action_space.n), std=0.01)
        self.critic = layer_init(nn.Linear(128, 1), std=1)

    def hidden(self, x):
        return self.network(x / 255.0 if self.cnn else x)

    def get_value(self, x):
        return self.critic(self.hidden(x))

    def get_action_and_value(self, x, action=None):
        hidden = self.hidden(x)
        probs = torch.distributions.Categorical(logits=self.actor(hidden))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(hidden)


def ppo_update(agent, optimizer, b, num_minibatches=4, epochs=2, clip=0.1):
    """CleanRL's PPO update over a flattened batch ``b`` (obs, logprobs, actions, advantages, returns), its
    minibatches drawn from a seeded generator."""
    rng = np.random.default_rng(len(b["obs"]))
    n = len(b["obs"])
    size = n // num_minibatches
    losses = []
    for _ in range(epochs):
        for start in range(0, n, size):
            mb = rng.permutation(n)[:size] if start else np.arange(size)
            _, newlogprob, entropy, newvalue = agent.get_action_and_value(b["obs"][mb], b["actions"].long()[mb])
            ratio = (newlogprob - b["logprobs"][mb]).exp()
            adv = b["advantages"][mb]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg_loss = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1 - clip, 1 + clip)).mean()
            v_loss = 0.5 * ((newvalue.view(-1) - b["returns"][mb]) ** 2).mean()
            loss = pg_loss - 0.01 * entropy.mean() + 0.5 * v_loss
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            optimizer.step()
            losses.append(loss.item())
    return losses


def advantages(rewards, dones, values, next_value, next_done, gamma=0.99, lam=0.95):
    num_steps = len(rewards)
    adv = torch.zeros_like(rewards)
    last = 0
    for t in reversed(range(num_steps)):
        nonterminal = 1.0 - (next_done if t == num_steps - 1 else dones[t + 1])
        nextvalues = next_value if t == num_steps - 1 else values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nonterminal - values[t]
        adv[t] = last = delta + gamma * lam * nonterminal * last
    return adv, adv + values


def flat_batch(envs, obs, logprobs, actions, adv, returns) -> dict:
    """A rollout's (num_steps, num_envs) tensors flattened into one batch, as CleanRL does before its update."""
    return {
        "obs": obs.reshape((-1, *envs.single_observation_space.shape)),
        "logprobs": logprobs.reshape(-1),
        "actions": actions.reshape(-1),
        "advantages": adv.reshape(-1),
        "returns": returns.reshape(-1),
    }


def cleanrl_legacy_ppo(envpool, env_id: str, num_envs: int, num_steps: int, updates: int) -> dict:
    """ppo_atari_envpool.py's loop, shortened, on ``envpool`` (a module with EnvPool's 0.6-0.8 API)."""
    torch.manual_seed(1)
    envs = envpool.make(env_id, env_type="gym", num_envs=num_envs, episodic_life=True, reward_clip=True, seed=1)
    envs.num_envs = num_envs
    envs.single_action_space = envs.action_space
    envs.single_observation_space = envs.observation_space
    envs = RecordEpisodeStatistics(envs)
    assert isinstance(envs.action_space, gym.spaces.Discrete), "only discrete action space is supported"
    agent = Agent(envs, cnn=True)
    optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
    obs = torch.zeros((num_steps, num_envs, *envs.single_observation_space.shape))
    actions = torch.zeros((num_steps, num_envs))
    logprobs, rewards, dones, values = (torch.zeros((num_steps, num_envs)) for _ in range(4))
    global_step, episodes, losses = 0, [], []
    next_obs = torch.Tensor(envs.reset())
    next_done = torch.zeros(num_envs)
    for _ in range(updates):
        for step in range(num_steps):
            global_step += num_envs
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            next_obs, reward, next_done, info = envs.step(action.cpu().numpy())
            rewards[step] = torch.tensor(reward).view(-1)
            next_obs, next_done = torch.Tensor(next_obs), torch.Tensor(next_done.astype(np.float32))
            for idx, d in enumerate(next_done):
                if d and info["lives"][idx] == 0:
                    episodes.append((float(info["r"][idx]), int(info["l"][idx])))
        with torch.no_grad():
            adv, returns = advantages(rewards, dones, values, agent.get_value(next_obs).reshape(1, -1), next_done)
        losses += ppo_update(agent, optimizer, flat_batch(envs, obs, logprobs, actions, adv, returns))
    envs.close()
    return {"global_step": global_step, "episodes": episodes, "losses": losses}


def cleanrl_gymnasium_ppo(envpool, env_id: str, num_envs: int, num_steps: int, updates: int) -> dict:
    """The same loop written against EnvPool 1.2's gymnasium API (5-tuples; returns summed in the loop), which
    runs on EnvPool 1.2.5 as it is."""
    torch.manual_seed(1)
    envs = envpool.make(env_id, env_type="gymnasium", num_envs=num_envs, seed=1)
    agent = Agent(envs, cnn=False)
    optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-3, eps=1e-5)
    obs = torch.zeros((num_steps, num_envs, *envs.single_observation_space.shape))
    actions = torch.zeros((num_steps, num_envs))
    logprobs, rewards, dones, values = (torch.zeros((num_steps, num_envs)) for _ in range(4))
    running, episodes, losses = np.zeros(num_envs), [], []
    next_obs, _ = envs.reset()
    next_obs, next_done = torch.Tensor(next_obs), torch.zeros(num_envs)
    for _ in range(updates):
        for step in range(num_steps):
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            next_obs, reward, terminated, truncated, info = envs.step(action.cpu().numpy())
            reset_rows = info["elapsed_step"] == 0  # next-step autoreset: these rows began a new episode
            running[~reset_rows] += reward[~reset_rows]
            done = terminated | truncated
            episodes += running[done].tolist()
            running[done | reset_rows] = 0
            rewards[step] = torch.tensor(reward).view(-1)
            next_obs, next_done = torch.Tensor(next_obs), torch.Tensor(done.astype(np.float32))
        with torch.no_grad():
            adv, returns = advantages(rewards, dones, values, agent.get_value(next_obs).reshape(1, -1), next_done)
        losses += ppo_update(agent, optimizer, flat_batch(envs, obs, logprobs, actions, adv, returns), epochs=4)
    envs.close()
    return {"episodes": episodes, "losses": losses}


@pytest.mark.atari
def test_cleanrl_legacy_atari_ppo_runs_with_the_import_changed():
    """ppo_atari_envpool.py's loop (EnvPool's 0.6-0.8 gym API, the statistics wrapper, num_envs set again) runs
    on fastvec.envpool.legacy for a few updates on Breakout: finite losses, every step counted, and episodes
    logged only at game over with their unclipped returns and full lengths."""
    out = cleanrl_legacy_ppo(fastvec.envpool.legacy, "Breakout-v5", num_envs=8, num_steps=64, updates=3)
    assert out["global_step"] == 3 * 64 * 8
    assert np.isfinite(out["losses"]).all() and len(out["losses"]) == 3 * 2 * 4
    assert out["episodes"], "no game over in 1536 Breakout steps of a near-random policy"
    for ret, length in out["episodes"]:
        assert ret >= 0 and ret == int(ret)  # Breakout's unclipped rewards are whole points
        assert length > 100  # five lives' worth of steps, not one life's


def test_cleanrl_gymnasium_ppo_runs_unchanged_on_envpool_and_fastvec():
    """The loop in EnvPool 1.2's gymnasium form, unchanged, on EnvPool 1.2.5 and on fastvec.envpool: PPO learns
    CartPole on both (mean return of the last tenth of the episodes above 40 and twice the first tenth's; a
    random policy's is about 22)."""
    results = {}
    for module in (envpool, fastvec.envpool):
        out = cleanrl_gymnasium_ppo(module, "CartPole-v1", num_envs=8, num_steps=128, updates=30)
        assert np.isfinite(out["losses"]).all()
        # The first and last tenth of the ~640 episodes: the last 10 alone are a few short ones (short episodes
        # end more often) and swung from 35 to 88 between machines with the same seeds.
        tenths = np.array_split(np.asarray(out["episodes"]), 10)
        first, last = tenths[0].mean(), tenths[-1].mean()
        results[module.__name__] = (round(float(first), 1), round(float(last), 1))
    assert all(last > 40 and last > 2 * first for first, last in results.values()), results
