"""fastvec.adapters.rllib with multi-agent envs: configure sets up RLlib's own MultiAgentEnvRunner (its
SyncVectorMultiAgentEnv over the env) or fastvec's FastvecMultiAgentEnvRunner (the envs in a fastvec pool), and the
two, from one config with the same weights, seeds and torch RNG stream, return the same MultiAgentEpisode chunks
(data, lookback, flags, module ids, which chunks share an id) and the same metrics: with one shared policy and
with a policy per agent, on mpe2's simple_spread and on an RLlib MultiAgentEnv whose agents end at different
steps. PPO trains on simple_spread through fastvec's runner."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest
from rllib_compare import COMMON_METRICS, assert_same_data, assert_same_metrics_of, sample_both

try:
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
except ImportError:  # CI's numpy 1.26 pass, where RLlib cannot import, collects this file and deselects its tests
    MultiAgentEnv = object  # type: ignore[assignment,misc]

pytestmark = [
    pytest.mark.rllib,
    pytest.mark.xdist_group("ray"),
    pytest.mark.filterwarnings("ignore:.*Overriding environment rllib-multi-agent-env-v0:UserWarning"),
]

# The pool's workers fork from this process, which has imported ray already (a worker importing it takes seconds).
POOL = {"num_workers": 1, "start_method": "fork"}

METRICS = (*COMMON_METRICS, "agent_episode_returns_mean", "agent_steps", "module_episode_returns_mean")


class Staggered(MultiAgentEnv):
    """An RLlib MultiAgentEnv whose agents end at different steps: ``early`` terminates after 2 to 3 steps, ``late``
    after 4 to 6 (drawn at reset from the env's seeded RNG), when the episode ends (``"__all__"``); rewards and
    observations depend on the actions and the RNG."""

    def __init__(self, config=None):
        super().__init__()
        self.possible_agents = ["early", "late"]
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: gym.spaces.Box(-10.0, 10.0, (3,), np.float32) for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in self.possible_agents}
        self.rng = np.random.default_rng()

    def _obs(self, agents):
        # Drawn in possible_agents order, not the action dict's: RLlib's runner orders that dict by module.
        return {a: self.rng.uniform(-1, 1, 3).astype(np.float32) for a in self.possible_agents if a in agents}

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.ends = {"early": int(self.rng.integers(2, 4)), "late": int(self.rng.integers(4, 7))}
        self.agents = list(self.possible_agents)
        return self._obs(self.agents), {}

    def step(self, action_dict):
        self.t += 1
        acting = list(action_dict)
        rewards = {a: float(action_dict[a]) - 1.0 + (2.0 if a == "late" else 0.0) for a in acting}
        terminateds = {a: self.t >= self.ends[a] for a in acting}
        self.agents = [a for a in self.agents if not terminateds.get(a, False)]
        terminateds["__all__"] = not self.agents
        return self._obs(acting), rewards, terminateds, {"__all__": False}, {a: {"t": self.t} for a in acting}


class Turns(MultiAgentEnv):
    """An RLlib MultiAgentEnv whose agents take turns: one observes and acts per step, both are rewarded every step
    (the other without an observation); the episode ends after 3 to 6 steps (drawn from the env's seeded RNG)."""

    def __init__(self, config=None):
        super().__init__()
        self.possible_agents = ["a", "b"]
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: gym.spaces.Box(-10.0, 10.0, (2,), np.float32) for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.possible_agents}
        self.rng = np.random.default_rng()

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t, self.end = 0, int(self.rng.integers(3, 7))
        return {"a": self.rng.uniform(-1, 1, 2).astype(np.float32)}, {}

    def step(self, action_dict):
        self.t += 1
        (mover,) = action_dict
        other = "b" if mover == "a" else "a"
        rewards = {mover: float(action_dict[mover]) + 0.5, other: -0.25}
        over = self.t >= self.end
        obs = {other: self.rng.uniform(-1, 1, 2).astype(np.float32)}
        return obs, rewards, {other: over, "__all__": over}, {"__all__": False}, {}


def spread(**kwargs):
    from mpe2 import simple_spread_v3

    return simple_spread_v3.parallel_env(**kwargs)


@pytest.fixture(scope="module", autouse=True)
def torch():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


def ppo_config(env, num_envs: int, lookback: int = 1, **configure_kwargs):
    from ray.rllib.algorithms.ppo import PPOConfig

    from fastvec.adapters.rllib import configure

    config = PPOConfig().framework("torch").debugging(seed=0)
    configure(config, env, num_envs=num_envs, env_runner_cls=None, **configure_kwargs)
    return config.env_runners(num_env_runners=0, episode_lookback_horizon=lookback)


@pytest.fixture
def runner_pair():
    """RLlib's MultiAgentEnvRunner and fastvec's from one config (same weights, same seeds); stopped at the end."""
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    from fastvec.adapters.rllib import FastvecMultiAgentEnvRunner

    made = []

    def make(config):
        stock, fast = MultiAgentEnvRunner(config=config), FastvecMultiAgentEnvRunner(config=config)
        made.extend((stock, fast))
        fast.module.set_state(stock.module.get_state())
        stock._seed = fast._seed  # worker 0: seed + 0 in both; set, not assumed
        return stock, fast

    yield make
    for runner in made:
        runner.stop()


def assert_same_chunks(a, b, ids: dict[str, str]) -> None:
    """Chunk by chunk, agent by agent: the same data, flags and module ids; an id of RLlib's always maps to the
    same id of ours."""
    assert len(a) == len(b), (len(a), len(b))
    for x, y in zip(a, b, strict=True):
        y.validate()
        assert ids.setdefault(x.id_, y.id_) == y.id_, "two chunks of one episode got different ids"
        facts = ("env_t_started", "env_t", "is_terminated", "is_truncated")
        assert [getattr(x, f) for f in facts] == [getattr(y, f) for f in facts]
        if x.agent_episodes:  # (RLlib's is_numpy fails on a chunk without agents)
            assert x.is_numpy == y.is_numpy
        assert len(x) == len(y)
        assert_same_data(x.env_t_to_agent_t, y.env_t_to_agent_t, "env_t_to_agent_t")
        assert set(x.agent_episodes) == set(y.agent_episodes)
        for aid, sx in x.agent_episodes.items():
            sy = y.agent_episodes[aid]
            facts = ("agent_id", "module_id", "t_started", "t", "is_terminated", "is_truncated")
            assert [getattr(sx, f) for f in facts] == [getattr(sy, f) for f in facts], aid
            buffers = {"observations": (sx.observations, sy.observations), "actions": (sx.actions, sy.actions)}
            buffers |= {"rewards": (sx.rewards, sy.rewards), "infos": (sx.infos, sy.infos)}
            assert set(sx.extra_model_outputs) == set(sy.extra_model_outputs)
            buffers |= {k: (sx.extra_model_outputs[k], sy.extra_model_outputs[k]) for k in sx.extra_model_outputs}
            for name, (bx, by) in buffers.items():
                assert bx.lookback == by.lookback, (aid, name, bx.lookback, by.lookback)
                assert_same_data(bx.data, by.data, f"{aid}.{name}")
    assert len(set(ids.values())) == len(ids), "two episodes of RLlib's share an id of ours"


def assert_same_metrics(stock, fast) -> dict:
    ma, mb = assert_same_metrics_of(stock, fast, METRICS)
    assert set(METRICS) <= set(ma), set(METRICS) - set(ma)  # every name is one RLlib logs
    return mb


def test_configure_sets_up_rllibs_own_runner(torch):
    """env_runner_cls=None: RLlib's own MultiAgentEnvRunner runs the env (its SyncVectorMultiAgentEnv over
    ParallelPettingZooEnv), with the shared policy configure chose for agents of equal spaces."""
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
    from ray.rllib.env.vector.sync_vector_multi_agent_env import SyncVectorMultiAgentEnv

    config = ppo_config(spread, 3, max_cycles=5)
    assert config.is_multi_agent and config.policies.keys() == {"shared"}
    assert config.gym_env_vectorize_mode == "sync" and config.num_envs_per_env_runner == 3
    runner = MultiAgentEnvRunner(config=config)
    try:
        assert isinstance(runner.env, SyncVectorMultiAgentEnv) and runner.num_envs == 3
        episodes = runner.sample(num_timesteps=30, random_actions=True)
        done = [e for e in episodes if e.is_done]
        assert len(done) == 6 and all(e.env_t == 5 and e.is_truncated for e in done)
        assert {sa.module_id for e in episodes for sa in e.agent_episodes.values()} == {"shared"}
    finally:
        runner.stop()


def test_configure_sets_fastvec_runner_and_policies():
    from ray.rllib.algorithms.ppo import PPOConfig

    from fastvec.adapters.rllib import FastvecMultiAgentEnvRunner, configure

    config = configure(PPOConfig(), Staggered, num_envs=4, num_threads=1)
    assert config.env_runner_cls is FastvecMultiAgentEnvRunner
    assert config.num_envs_per_env_runner == 4 and config.num_cpus_per_env_runner == 1
    assert config.policies.keys() == {"shared"}
    config = configure(
        PPOConfig(), spread, num_envs=2, num_threads=1, policies={"p0", "p1"}, policy_mapping_fn=lambda a, e, **k: "p0"
    )
    assert config.policies.keys() == {"p0", "p1"}
    with pytest.raises(ValueError, match="policy_mapping_fn needs policies"):
        configure(PPOConfig(), Staggered, num_envs=2, num_threads=1, policy_mapping_fn=lambda a, e, **k: "x")
    with pytest.raises(ValueError, match="'batch_size' is RLlib's"):
        configure(PPOConfig(), Staggered, num_envs=2, num_threads=1, batch_size=1)
    with pytest.raises(ValueError, match="single-agent"):
        configure(PPOConfig(), "CartPole-v1", num_envs=2, num_threads=1, policies={"p"})


@pytest.mark.parametrize(
    ("env", "policies"),
    [
        ("pettingzoo", "shared"),
        ("pettingzoo", "per_agent"),
        ("native", "shared"),
        ("native", "per_agent"),
        ("mpe2_id", "per_agent"),
    ],
)
def test_runner_matches_rllibs_on_simple_spread(torch, runner_pair, env, policies):
    """Three agents of simple_spread, episodes of 7 steps, sample calls that cut episodes mid-way: the same chunks,
    module ids and metrics as RLlib's runner over mpe2's env. ``pettingzoo``: mpe2's env in fastvec's Python-env
    pool; ``native``: the id, fastvec's C++ port in the native pool (RLlib's runner: mpe2's env); ``mpe2_id``: the id
    with ``backend="python"``, mpe2's env in the Python-env pool."""
    from fastvec.adapters.rllib import policy_per_agent

    kw = {} if policies == "shared" else {"policies": {"agent_0", "agent_1", "agent_2"}}
    if env == "pettingzoo":
        config = ppo_config(spread, 3, lookback=2, max_cycles=7, **POOL, **kw)
    elif env == "native":
        config = ppo_config("simple_spread_v3", 3, lookback=2, max_cycles=7, **kw)
    else:
        config = ppo_config("simple_spread_v3", 3, lookback=2, max_cycles=7, backend="python", **POOL, **kw)
    if policies == "per_agent":
        assert config.policy_mapping_fn is policy_per_agent
    stock, fast = runner_pair(config)
    ids: dict[str, str] = {}
    for call, steps in enumerate((10, 25, 4, 30)):
        a, b = sample_both(torch, stock, fast, call, num_timesteps=steps)
        assert_same_chunks(a, b, ids)
    backend = type(fast.env.pool.backend).__name__
    assert backend == ("VectorEnv" if env == "native" else "PyVectorEnv")  # the native pool's façade, or the Python's
    # The native pool's agents never come and go: sampled in columns; a Python env's through RLlib's loop.
    assert (fast._fallback_reason is None) == (env == "native") == fast.env.pool.fixed_agents, fast._fallback_reason
    modules = {sa.module_id for e in b for sa in e.agent_episodes.values()}
    assert modules == ({"shared"} if policies == "shared" else {"agent_0", "agent_1", "agent_2"})
    metrics = assert_same_metrics(stock, fast)
    assert metrics["num_episodes_lifetime"] > 5


def sample_seeded(torch, runner, seed: int, **kwargs):
    """``runner.sample(**kwargs)`` from torch and Python RNG seed ``seed``."""
    random.seed(seed)
    torch.manual_seed(seed)
    return runner.sample(**kwargs)


def random_module(agent_id, episode, **kwargs):
    """A policy mapping drawing from Python's RNG, as RLlib's examples do: each call one draw."""
    return random.choice(["p0", "p1"])


@pytest.mark.parametrize("lookback", [0, 1, 3])
def test_columns_match_rllibs_draw_for_draw(torch, runner_pair, lookback):
    """The native pool sampled in columns beside RLlib's runner over mpe2's env: modules drawn at random per agent
    and episode (the mapping called where RLlib calls it: at each reset and at each cut), calls as short as one step
    per env (lookbacks padded as RLlib's cut pads them) or of none, inference calls, a call of whole episodes
    (RLlib's loop, then a seeded reset, as RLlib's) and a metrics window shorter than the episodes of a call: the
    same chunks, modules and metrics."""
    config = ppo_config("simple_spread_v3", 3, lookback=lookback, max_cycles=4, policies={"p0", "p1"})
    config.multi_agent(policy_mapping_fn=random_module).reporting(metrics_num_episodes_for_smoothing=4)
    stock, fast = runner_pair(config)
    assert fast._fallback_reason is None
    ids: dict[str, str] = {}
    modules, done = set(), 0
    calls = [{"num_timesteps": 3}, {"num_timesteps": 20}, {"num_timesteps": 3, "explore": False}]
    calls += [
        {"num_episodes": 2},
        {"num_timesteps": 7},
        {"num_timesteps": 0},
        {"num_timesteps": 40},
        {"num_timesteps": 3},
    ]
    for call, kwargs in enumerate(calls):
        a, b = [sample_seeded(torch, runner, call, **kwargs) for runner in (stock, fast)]
        assert_same_chunks(a, b, ids)
        modules |= {sa.module_id for e in b for sa in e.agent_episodes.values()}
        done += sum(e.is_done for e in b)
        assert_same_metrics_of(stock, fast, METRICS)  # (each key in both or in neither)
    assert modules == {"p0", "p1"}
    assert done > 10


@pytest.mark.parametrize(
    ("env", "kwargs"),
    [
        ("simple_spread_v3", {"continuous_actions": True}),
        ("simple_adversary_v3", {}),
        ("simple_speaker_listener_v4", {"continuous_actions": True}),
    ],
)
def test_columns_match_rllibs_on_other_mpe_envs(torch, runner_pair, env, kwargs):
    """Box actions (sampled from a Gaussian, unsquashed for the env, kept raw in the episodes) and agents of different
    spaces (a module per kind of agent, batches of different shapes): the same chunks and metrics as RLlib's runner
    over mpe2's env, exploring and not (with Discrete actions only: RLlib's runner fails to finish an episode whose
    Box actions were drawn both ways, its action_logp having two shapes)."""
    config = ppo_config(env, 3, lookback=1, max_cycles=6, **kwargs)
    stock, fast = runner_pair(config)
    assert fast._fallback_reason is None
    ids: dict[str, str] = {}
    for call, steps in enumerate((8, 20, 25)):
        explore = call != 1 or bool(kwargs.get("continuous_actions"))
        a, b = sample_both(torch, stock, fast, call, num_timesteps=steps, explore=explore)
        assert_same_chunks(a, b, ids)
    assert_same_metrics(stock, fast)


def test_columns_match_rllibs_counting_agent_steps(torch, runner_pair):
    """``count_steps_by="agent_steps"``: a call samples until its agent steps reach ``num_timesteps``, as RLlib's."""
    config = ppo_config("simple_spread_v3", 2, lookback=1, max_cycles=5, policies={"agent_0", "agent_1", "agent_2"})
    config.multi_agent(count_steps_by="agent_steps")
    stock, fast = runner_pair(config)
    ids: dict[str, str] = {}
    for call, steps in enumerate((7, 30, 13)):
        a, b = sample_both(torch, stock, fast, call, num_timesteps=steps)
        assert_same_chunks(a, b, ids)
        assert steps <= sum(e.agent_steps() for e in b) < steps + 6
    assert_same_metrics(stock, fast)


def test_columns_random_actions(runner_pair):
    """``random_actions=True`` in columns: each env's agents act from their action spaces, the episodes carry no
    model outputs, and a model call after them continues the same episodes."""
    config = ppo_config("simple_spread_v3", 3, lookback=1, max_cycles=6, continuous_actions=True)
    _, fast = runner_pair(config)
    episodes = fast.sample(num_timesteps=12, random_actions=True)
    assert sum(e.env_steps() for e in episodes) == 12
    space = fast.env.single_action_spaces["agent_0"]
    for e in episodes:
        e.validate()
        for sa in e.agent_episodes.values():
            assert sa.extra_model_outputs == {}
            assert all(space.contains(x) for x in sa.actions.data)
    ongoing = {e.id_ for e in episodes if not e.is_done}
    later = fast.sample(num_timesteps=3)
    assert ongoing & {e.id_ for e in later}
    for e in later:
        e.validate()


def test_columns_refuse_an_agent_that_leaves():
    """The columns hold pools whose agents never come and go; an agent without an observation mid-episode is a
    broken promise, raised, not recorded."""
    from fastvec.adapters._rllib_ma_columns import MultiAgentColumns

    spaces = {a: gym.spaces.Box(-1.0, 1.0, (2,), np.float32) for a in ("a", "b")}
    acts = {a: gym.spaces.Discrete(2) for a in ("a", "b")}
    obs = {a: np.zeros((2, 2), np.float32) for a in ("a", "b")}
    cols = MultiAgentColumns(["a", "b"], spaces, acts, lambda aid, ep, **kw: "shared", obs, {}, 0.0)
    cols.begin(1)
    flags = {a: np.zeros(2, bool) for a in ("a", "b")}
    infos = {"active": {"a": np.array([True, True]), "b": np.array([True, False])}}
    actions = {a: np.zeros(2, np.int64) for a in ("a", "b")}
    rewards = {a: np.zeros(2) for a in ("a", "b")}
    with pytest.raises(RuntimeError, match="come and go"):
        cols.add(actions, {}, obs, rewards, flags, flags, infos, 1.0)


def test_runner_falls_back_to_rllibs_loop_for_connectors_of_its_own(torch, runner_pair, caplog):
    """A connector of the user's in the env-to-module pipeline: RLlib's loop runs it (the columns would not), with
    the same chunks as RLlib's runner, and the runner says so once, at WARNING (RLlib keeps ray.rllib at WARN)."""
    import logging

    from ray.rllib.connectors.env_to_module import FlattenObservations

    config = ppo_config("simple_spread_v3", 2, lookback=1, max_cycles=5)
    config.env_runners(env_to_module_connector=lambda env, spaces, device: FlattenObservations(multi_agent=True))
    stock, fast = runner_pair(config)
    assert "FlattenObservations" in fast._fallback_reason
    ids: dict[str, str] = {}
    with caplog.at_level(logging.WARNING, logger="ray.rllib"):
        for call, steps in enumerate((6, 11)):
            a, b = sample_both(torch, stock, fast, call, num_timesteps=steps)
            assert_same_chunks(a, b, ids)
    said = [r for r in caplog.records if "FastvecMultiAgentEnvRunner" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING, said
    assert "FlattenObservations" in said[0].getMessage()
    assert_same_metrics(stock, fast)


def test_runner_matches_rllibs_when_agents_end_early(torch, runner_pair):
    """Staggered's agents terminate at different steps (drawn per env from its seed): the same chunks (the early
    agent's episode ends before the others'), a policy per agent, and the same metrics."""
    from ray.rllib.policy.policy import PolicySpec

    policies = {"early": PolicySpec(), "late": PolicySpec()}
    config = ppo_config(Staggered, 4, lookback=1, policies=policies, **POOL)
    stock, fast = runner_pair(config)
    ids: dict[str, str] = {}
    ended_early = 0
    for call, steps in enumerate((7, 13, 20, 5)):
        a, b = sample_both(torch, stock, fast, call, num_timesteps=steps)
        assert_same_chunks(a, b, ids)
        for e in b:
            early, late = e.agent_episodes.get("early"), e.agent_episodes.get("late")
            ended_early += bool(e.is_done and early is not None and late is not None and early.t < late.t)
    assert ended_early > 0
    metrics = assert_same_metrics(stock, fast)
    assert set(metrics["agent_episode_returns_mean"]) == {"early", "late"}


def test_runner_matches_rllibs_on_turns(torch, runner_pair):
    """Turns: agents that act in turns and are rewarded while they wait (rewards without an observation): the same
    chunks and metrics as RLlib's runner."""
    config = ppo_config(Turns, 3, lookback=1, **POOL)
    stock, fast = runner_pair(config)
    ids: dict[str, str] = {}
    for call, steps in enumerate((5, 11, 17)):
        a, b = sample_both(torch, stock, fast, call, num_timesteps=steps)
        assert_same_chunks(a, b, ids)
    assert any(e.is_done and len(e.agent_episodes) == 2 for e in b)
    assert_same_metrics(stock, fast)


def test_runner_takes_an_env_class_set_by_hand():
    """config.environment(env=SomeMultiAgentEnv) with the runner set by hand (no configure): the runner makes the
    pool of the class itself."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from fastvec.adapters.rllib import FastvecMultiAgentEnvRunner, SharedPolicy

    config = (
        PPOConfig()
        .environment(env=Staggered, env_config=POOL)  # (the env config reaches fastvec.make)
        .env_runners(env_runner_cls=FastvecMultiAgentEnvRunner, num_env_runners=0, num_envs_per_env_runner=2)
        .multi_agent(policies={"shared"}, policy_mapping_fn=SharedPolicy("shared"))
    )
    runner = FastvecMultiAgentEnvRunner(config=config)
    try:
        assert runner.env.pool.possible_agents == ["early", "late"] and runner.num_envs == 2
        episodes = runner.sample(num_timesteps=12)
        assert sum(e.env_t - e.env_t_started for e in episodes) >= 12
        assert any(e.is_done for e in episodes)
    finally:
        runner.stop()


def test_runner_refuses_single_agent_pool():
    import fastvec
    from fastvec.adapters._rllib_multiagent import PoolVectorMultiAgentEnv

    with pytest.raises(TypeError, match=r"fastvec\.MultiAgentVectorEnv"):
        PoolVectorMultiAgentEnv(fastvec.make("CartPole-v1", 2))


@pytest.mark.slow
def test_ppo_trains_on_simple_spread():
    """PPO on simple_spread (by its id: the native MPE port) through FastvecMultiAgentEnvRunner: it samples from
    the pool, and the shared policy's learner steps on it."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from fastvec.adapters.rllib import FastvecMultiAgentEnvRunner, configure

    config = PPOConfig().framework("torch").debugging(seed=0)
    configure(config, "simple_spread_v3", num_envs=4, num_threads=1, max_cycles=25)
    config.env_runners(num_env_runners=0, rollout_fragment_length=50)
    config.training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=2)
    algo = config.build_algo()
    try:
        assert isinstance(algo.env_runner, FastvecMultiAgentEnvRunner)
        for _ in range(3):
            result = algo.train()
        runners = result["env_runners"]
        assert runners["num_env_steps_sampled_lifetime"] >= 600
        assert runners["num_episodes_lifetime"] >= 20  # 25-step episodes
        assert set(runners["agent_episode_returns_mean"]) == {"agent_0", "agent_1", "agent_2"}
        learner = result["learners"]["shared"]
        assert learner["num_module_steps_trained_lifetime"] > 0
        assert np.isfinite(learner["total_loss"])
    finally:
        algo.stop()
