"""fastvec.rllib_env and fastvec.adapters.rllib.configure with RLlib's new API
stack: the creator's contract, and PPO training on CartPole with the local
EnvRunner, with two remote EnvRunners, and on a simulated two-node cluster,
env steps provably coming from fastvec pools."""

from __future__ import annotations

import numpy as np
import pytest

import fastvec

# RLlib is imported when these tests run, not when the module is collected: the CI passes
# that deselect them (-m "not rllib") run numpy 1.26, where the pyarrow RLlib imports fails.
pytestmark = [
    pytest.mark.rllib,
    # One Ray session at a time: the tests of this file run in one pytest-xdist worker (pyproject's --dist
    # loadgroup), so that the two-node cluster of one test is not running beside another's local session.
    pytest.mark.xdist_group("ray"),
    pytest.mark.filterwarnings("ignore:.*Overriding environment rllib-single-agent-env-v0:UserWarning"),
]


@pytest.fixture(scope="module", autouse=True)
def ray():
    pytest.importorskip("ray.rllib")
    pytest.importorskip("torch")
    import ray

    return ray


def creator(name: str):
    """The env creator RLlib's registry holds under `name`."""
    from ray.tune.registry import ENV_CREATOR, _global_registry

    return _global_registry.get(ENV_CREATOR, name)


def configure(*args, **kwargs):
    """fastvec.adapters.rllib.configure (the adapter imports Ray Tune at import)."""
    from fastvec.adapters.rllib import configure

    return configure(*args, **kwargs)


def bare_ppo_config():
    from ray.rllib.algorithms.ppo import PPOConfig

    return PPOConfig()


def ppo_config(num_env_runners: int):
    return (
        bare_ppo_config()
        .framework("torch")
        .debugging(seed=0)
        .training(lr=1e-3, train_batch_size_per_learner=1024, minibatch_size=256, num_epochs=6, gamma=0.99)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length="auto")
    )


def runner_facts(algo):
    """What each EnvRunner steps: its env's class, num_envs, node and first observations."""

    def facts(runner):
        import ray

        env = runner.env.unwrapped
        obs, _ = env.reset(seed=runner.config.seed + runner.worker_index)
        return {
            "runner": type(runner).__name__,
            "module": type(env).__module__,
            "class": type(env).__name__,
            "num_envs": env.num_envs,
            "num_threads": env.num_threads,
            "node": ray.get_runtime_context().get_node_id(),
            "obs": obs,
            "worker": runner.worker_index,
        }

    return algo.env_runner_group.foreach_env_runner(
        facts, local_env_runner=False
    ) or algo.env_runner_group.foreach_env_runner(facts, local_env_runner=True)


def train(config, iterations: int) -> tuple[list[float], list[dict]]:
    algo = config.build_algo()
    try:
        returns = []
        for _ in range(iterations):
            result = algo.train()
            returns.append(result["env_runners"]["episode_return_mean"])
        print("episode_return_mean per iteration:", [round(r, 1) for r in returns])
        return returns, runner_facts(algo)
    finally:
        algo.stop()


# -- the creator -------------------------------------------------------------


def test_rllib_env_registers_a_creator_that_needs_num_envs():
    name = fastvec.rllib_env("CartPole-v1")
    assert name == "fastvec-CartPole-v1" and ":" not in name
    make_env = creator(name)
    env = make_env({"num_envs": 4})
    assert isinstance(env, fastvec.VectorEnv) and env.num_envs == 4
    assert env.autoreset_mode.value == "NextStep"
    env.close()
    with pytest.raises(ValueError, match="vector_entry_point"):
        make_env({})
    other = fastvec.rllib_env("CartPole-v1", max_episode_steps=100)
    assert other != name and creator(other)({"num_envs": 1}).max_episode_steps == 100
    with pytest.raises(ValueError, match="num_envs"):
        fastvec.rllib_env("CartPole-v1", num_envs=3)
    with pytest.raises(ValueError, match="unknown env_id"):
        fastvec.rllib_env("CartPol-v1")


def test_configure_sets_everything_in_one_call():
    config = configure(bare_ppo_config(), "CartPole-v1", num_envs=16, num_threads=2)
    assert config.env == "fastvec-CartPole-v1-" + config.env.rsplit("-", 1)[1]
    assert config.num_envs_per_env_runner == 16
    assert config.gym_env_vectorize_mode == "vector_entry_point"
    assert config.num_cpus_per_env_runner == 2
    from fastvec.adapters.rllib import FastvecEnvRunner

    assert config.env_runner_cls is FastvecEnvRunner
    env = creator(config.env)({"num_envs": 16})
    assert env.num_threads == 2
    assert configure(bare_ppo_config(), "CartPole-v1", 4, env_runner_cls=None).env_runner_cls is None


def test_configure_refuses_more_threads_than_a_node_has():
    """Ray could never place a runner that reserves more CPUs than any node has: build_algo() would wait
    for ever, silently. Ray not started yet: the limit is this machine's (what ray.init would give)."""
    import os

    with pytest.raises(ValueError, match=rf"num_threads=64: .*largest.* is {os.cpu_count()}"):
        configure(bare_ppo_config(), "CartPole-v1", num_envs=4, num_threads=64)


def test_bad_num_envs_and_runner_classes_are_refused_in_the_driver():
    from fastvec.adapters.rllib import configure_old_stack

    for setup in (configure, configure_old_stack):
        with pytest.raises(TypeError, match="num_envs must be an int, got str '8'"):
            setup(bare_ppo_config(), "CartPole-v1", num_envs="8")
        with pytest.raises(ValueError, match=r"num_envs must be in \[1, 16777216\], got 0"):  # (fastvec.make's)
            setup(bare_ppo_config(), "CartPole-v1", num_envs=0)
        with pytest.raises(TypeError, match=r"takes an env id \(str\) or a callable"):
            setup(bare_ppo_config(), 5, num_envs=2)
    with pytest.raises(TypeError, match="env_runner_cls must be an EnvRunner subclass or None, got 3"):
        configure(bare_ppo_config(), "CartPole-v1", num_envs=4, env_runner_cls=3)


def test_env_kwargs_are_checked_in_the_driver():
    """A kwarg the env does not take fails where it is written, with fastvec.make's words, not as
    RLlib's IndexError once a remote runner has failed to build its env."""
    with pytest.raises(TypeError, match="unexpected keyword argument 'gravity'"):
        fastvec.rllib_env("CartPole-v1", gravity=3.0)
    with pytest.raises(TypeError, match="gravity"):
        configure(bare_ppo_config(), "CartPole-v1", num_envs=4, gravity=3.0)


# Options configure takes, each with a value fastvec.make refuses (and configure took, or refused in other words).
BAD_OPTIONS = [
    ("CartPole-v1", {"num_envs": 4, "num_threads": 1.5}),
    ("CartPole-v1", {"num_envs": 4, "num_threads": "2"}),
    ("CartPole-v1", {"num_envs": 4, "num_threads": 0}),
    ("CartPole-v1", {"num_envs": 2**25}),
    ("CartPole-v1", {"num_envs": 0}),
    ("CartPole-v1", {"num_envs": 4, "seed": 2**64 - 2}),  # seed + i must stay below 2**64
    ("CartPole-v1", {"num_envs": 6, "block_size": 4}),  # must divide num_envs
    ("FrozenLake-v1", {"num_envs": 4, "num_threads": 1.5, "backend": "python"}),  # the Python-env pool's checks
    ("FrozenLake-v1", {"num_envs": 2**17, "num_threads": 1, "backend": "python"}),
    ("FrozenLake-v1", {"num_envs": 2, "num_threads": 3, "backend": "python"}),
]


@pytest.mark.parametrize(("env_id", "options"), BAD_OPTIONS, ids=lambda v: repr(v) if isinstance(v, dict) else v)
@pytest.mark.parametrize("setup", ["configure", "configure_old_stack"])
def test_configure_checks_every_option_as_fastvec_make_does(setup, env_id, options):
    """What fastvec.make refuses, configure refuses when it is called, in the driver, with make's exception and
    words (num_threads=1.5 was taken, as one CPU per runner); what make takes with num_envs > 1, configure takes."""
    import re

    from fastvec.adapters import rllib

    with pytest.raises((TypeError, ValueError)) as made:
        fastvec.make(env_id, **options)
    with pytest.raises(made.type, match=f"^{re.escape(str(made.value))}$"):
        getattr(rllib, setup)(bare_ppo_config(), env_id, **options)


def test_configure_takes_what_fastvec_make_takes_for_num_envs():
    """Options checked against num_envs are checked against the runners' num_envs (block_size 8 of 64 envs was
    refused, checked against a pool of one env)."""
    from fastvec.adapters.rllib import configure_old_stack

    config = configure(bare_ppo_config(), "CartPole-v1", num_envs=64, num_threads=1, block_size=8)
    assert creator(config.env)({"num_envs": 64}).num_envs == 64
    configure_old_stack(bare_ppo_config(), "CartPole-v1", num_envs=64, num_threads=1, block_size=8)
    configure(bare_ppo_config(), "FrozenLake-v1", num_envs=4, num_threads=2)


# -- training ----------------------------------------------------------------


@pytest.fixture
def outside_checkout(tmp_path, monkeypatch):
    """Ray puts the driver's working directory first on its workers' sys.path: run
    from the source checkout, they would import fastvec's sources (without the
    compiled extension, when fastvec is installed from a wheel) instead of fastvec."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module", autouse=True)
def torch_on_one_thread():
    """The learners here run in the test process: torch's intra-op threads spin at their barriers, and beside a
    busy core an update took many times as long (SAC's test took 290 s, against 33 s idle)."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# Ray's raylet starts one idle Python worker per CPU when the driver connects: the tests here that sample in the
# driver never use them, and beside a busy core their imports competed with the test (an actor starts its
# worker when it is made).
NO_IDLE_WORKERS = {"prestart_worker_first_driver": False}


@pytest.fixture
def local_ray(outside_checkout, ray):
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _system_config=NO_IDLE_WORKERS)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ppo_trains_on_fastvec_envs(local_ray):
    """The local EnvRunner, in the driver. (Remote runners: the two-node test below.)"""
    config = configure(ppo_config(0), "CartPole-v1", num_envs=8)
    returns, facts = train(config, iterations=5)
    assert len(facts) == 1
    assert (facts[0]["module"], facts[0]["class"], facts[0]["num_envs"]) == ("fastvec.vector", "VectorEnv", 8)
    assert facts[0]["runner"] == "FastvecEnvRunner"
    assert returns[-1] > 1.5 * returns[0], returns


@pytest.mark.slow
def test_ppo_on_a_two_node_cluster(outside_checkout, ray):
    """A head node without CPUs (the driver and its learner) and a node of one CPU: the remote EnvRunner, and
    its fastvec pool of one thread, land on the other node, and PPO learns from what it samples there. (One
    runner: a second, on the head, took as long again on a busy machine; that runners draw different streams is
    test_rllib_runner's test_no_two_envs_of_three_runners_share_a_stream.)"""
    from ray.cluster_utils import Cluster

    # No log monitor (the driver does not take the workers' logs) and no autoscaler monitor (the nodes are fixed):
    # two processes less to start beside the runner.
    quiet = {"include_dashboard": False, "include_log_monitor": False}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "no_monitor": True, **quiet})
    try:
        cluster.add_node(num_cpus=1, include_log_monitor=False)
        ray.init(address=cluster.address, log_to_driver=False)
        config = configure(ppo_config(1), "CartPole-v1", num_envs=8)
        returns, facts = train(config, iterations=5)
        assert len(facts) == 1 and facts[0]["node"] != ray.get_runtime_context().get_node_id()
        assert (facts[0]["module"], facts[0]["class"], facts[0]["num_envs"]) == ("fastvec.vector", "VectorEnv", 8)
        assert (facts[0]["runner"], facts[0]["num_threads"]) == ("FastvecEnvRunner", 1)
        assert returns[-1] > 1.5 * returns[0], returns
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.mark.slow
def test_a_pool_made_without_num_threads_takes_the_cpus_ray_gave_its_runner(local_ray):
    """rllib_env without configure: in a Ray actor of one CPU the pool runs one thread, not the machine's
    cores (in the driver, outside any actor, the pool's own default applies). An actor that only builds envs
    imports neither RLlib nor torch to unpickle the creator (about 4 s of CPU each, when it did)."""
    import ray

    name = fastvec.rllib_env("CartPole-v1")

    @ray.remote(num_cpus=1)
    class Runner:
        def threads(self, name):
            import sys

            from ray.tune.registry import ENV_CREATOR, _global_registry  # (no globals of this module here)

            threads = _global_registry.get(ENV_CREATOR, name)({"num_envs": 4}).num_threads
            return threads, sorted({"ray.rllib", "torch"} & set(sys.modules))

    assert ray.get(Runner.remote().threads.remote(name)) == (1, [])
    assert ray.get(Runner.options(num_cpus=2).remote().threads.remote(name)) == (2, [])


@pytest.mark.slow
def test_ppo_learns_the_same_on_fastvecs_runner_as_on_rllibs(local_ray):
    """Equal seeds, local runner: the same episode_return_mean every iteration (the same episodes, the
    same RNG draws), whichever runner samples."""
    from fastvec.adapters.rllib import FastvecEnvRunner

    returns = {}
    for cls in (None, FastvecEnvRunner):
        config = configure(ppo_config(0), "CartPole-v1", num_envs=8, num_threads=1, env_runner_cls=cls)
        returns[cls], facts = train(config, iterations=4)
        assert facts[0]["runner"] == ("FastvecEnvRunner" if cls else "SingleAgentEnvRunner")
    assert returns[None] == returns[FastvecEnvRunner]
    assert returns[FastvecEnvRunner][-1] > returns[FastvecEnvRunner][0]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")  # APPO starts Ray Data: its own deprecations
@pytest.mark.parametrize("algo", ["APPO", "DQN", "SAC"])
def test_other_algorithms_run_on_fastvecs_runner(local_ray, algo):
    """APPO (asynchronous sampling), DQN (random actions first, then epsilon-greedy from the module) and SAC
    (Box actions, random first): a few iterations sample from the fastvec runner and log episodes."""
    if algo == "APPO":
        from ray.rllib.algorithms.appo import APPOConfig as Config

        env_id = "CartPole-v1"
    elif algo == "DQN":
        from ray.rllib.algorithms.dqn import DQNConfig as Config

        env_id = "CartPole-v1"
    else:
        from ray.rllib.algorithms.sac import SACConfig as Config

        env_id = "Pendulum-v1"
    config = Config().framework("torch").debugging(seed=0).env_runners(num_env_runners=0)
    config.reporting(min_time_s_per_iteration=1, min_sample_timesteps_per_iteration=400)
    if algo != "APPO":
        # 100 steps a sample() call: an update per 100 steps, where one per call of 4 steps made SAC's test
        # 33 s idle and 290 s beside a busy core
        config.env_runners(rollout_fragment_length=25)
        config.training(num_steps_sampled_before_learning_starts=200)
    configure(config, env_id, num_envs=4, num_threads=1, max_episode_steps=50)  # episodes end within 3 calls
    algo_ = config.build_algo()
    try:
        results = [algo_.train()["env_runners"] for _ in range(3)]
        assert runner_facts(algo_)[0]["runner"] == "FastvecEnvRunner"
    finally:
        algo_.stop()
    assert sum(r["num_env_steps_sampled"] for r in results) >= 3 * 400
    assert np.isfinite(results[-1]["episode_return_mean"])


# -- more than native classic control ----------------------------------------


def test_rllib_env_takes_what_fastvec_make_takes():
    """A gymnasium id with backend="python" and a callable run in the Python-env pool; Atari frames
    come channel-last and normalized for RLlib's CNNs (or as uint8 with normalize_images=False)."""
    import gymnasium as gym

    from fastvec.vector import PyVectorEnv

    for env_id, kwargs in (("FrozenLake-v1", {"backend": "python"}), (lambda: gym.make("FrozenLake-v1"), {})):
        name = fastvec.rllib_env(env_id, num_threads=1, **kwargs)
        assert ":" not in name
        env = creator(name)({"num_envs": 2})
        try:
            assert isinstance(env, PyVectorEnv) and env.num_envs == 2
            assert env.reset(seed=0)[0].shape == (2,)
        finally:
            env.close()
    with pytest.raises(TypeError, match="callable"):
        fastvec.rllib_env([lambda: gym.make("FrozenLake-v1")] * 2)

    env = creator(fastvec.rllib_env("Pong-v5"))({"num_envs": 2})
    assert env.single_observation_space == gym.spaces.Box(-1.0, 1.0, (84, 84, 4), np.float32)
    obs, _ = env.reset(seed=0)
    frames, _ = env.unwrapped.reset(seed=0)
    assert isinstance(env.unwrapped, fastvec.VectorEnv) and frames.dtype == np.uint8 and frames.shape == (2, 84, 84, 4)
    np.testing.assert_array_equal(obs, frames.astype(np.float32) / 128 - 1)
    assert env.step(np.zeros(2, np.int64))[0].dtype == np.float32
    env.close()
    raw = creator(fastvec.rllib_env("Pong-v5", normalize_images=False))({"num_envs": 1})
    assert raw.single_observation_space.dtype == np.uint8 and raw.single_observation_space.shape == (84, 84, 4)
    raw.close()


@pytest.mark.slow
def test_ppo_trains_on_pong_frames(outside_checkout, ray):
    """PPO with RLlib's default CNN on fastvec's Pong, local EnvRunner: one training iteration
    samples from the fastvec pool and changes the weights."""
    config = (
        bare_ppo_config()
        .framework("torch")
        .debugging(seed=0)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .env_runners(num_env_runners=0, rollout_fragment_length="auto")
    )
    configure(config, "Pong-v5", num_envs=4, num_threads=1)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _system_config=NO_IDLE_WORKERS)
    algo = config.build_algo()
    try:
        facts = runner_facts(algo)
        assert (facts[0]["module"], facts[0]["num_envs"]) == ("fastvec.vector", 4)
        assert facts[0]["obs"].shape == (4, 84, 84, 4)
        before = algo.learner_group.get_weights()["default_policy"]
        result = algo.train()
        after = algo.learner_group.get_weights()["default_policy"]
        assert result["env_runners"]["num_env_steps_sampled"] >= 256
        assert any(not np.array_equal(before[k], after[k]) for k in before)
    finally:
        algo.stop()
        ray.shutdown()


def _atari_ppo_env_to_module(env=None, spaces=None, device=None):
    from ray.rllib.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule

    return FrameStackingEnvToModule(num_frames=4)


def _atari_ppo_learner(input_observation_space=None, input_action_space=None):
    from ray.rllib.connectors.learner.frame_stacking import FrameStackingLearner

    return FrameStackingLearner(num_frames=4)


@pytest.mark.slow
def test_ppo_trains_with_atari_ppos_frame_stacking_connectors(local_ray, caplog):
    """RLlib's atari_ppo.py (single 64x64 frames, stacked by its env-to-module and learner connectors) with
    configure: the runner stacks on its fast path (no fallback said), and the learner stacks the episodes."""
    import logging

    config = (
        bare_ppo_config()
        .framework("torch")
        .debugging(seed=0)
        .training(
            learner_connector=_atari_ppo_learner, train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1
        )
        .rl_module(model_config={"conv_filters": [[16, 4, 2], [32, 4, 2], [64, 4, 2], [128, 4, 2]]})
        .env_runners(
            num_env_runners=0, rollout_fragment_length="auto", env_to_module_connector=_atari_ppo_env_to_module
        )
    )
    options = dict(stack_num=1, img_height=64, img_width=64, episodic_life=True, use_fire_reset=True)
    configure(config, "Pong-v5", num_envs=2, num_threads=1, repeat_action_probability=0.0, **options)
    algo = config.build_algo()
    try:
        runner = algo.env_runner
        assert type(runner).__name__ == "FastvecEnvRunner" and runner._fallback_reason is None
        assert runner.env.single_observation_space.shape == (64, 64, 1)
        before = algo.learner_group.get_weights()["default_policy"]
        with caplog.at_level(logging.WARNING, logger="ray.rllib"):
            result = algo.train()
        assert not [r for r in caplog.records if "FastvecEnvRunner" in r.getMessage()]
        after = algo.learner_group.get_weights()["default_policy"]
        assert result["env_runners"]["num_env_steps_sampled"] >= 128
        assert any(not np.array_equal(before[k], after[k]) for k in before)
    finally:
        algo.stop()


@pytest.mark.slow
@pytest.mark.mujoco
def test_ppo_trains_on_half_cheetah(local_ray):
    """MuJoCo (float64 observations and rewards, float32 Box actions, infos with masks): PPO with
    configure(config, "HalfCheetah-v5", ...) samples from FastvecEnvRunner's fast path, finishes episodes (cut at
    50 steps) and updates the weights."""
    from fastvec.adapters.rllib import FastvecEnvRunner

    config = (
        bare_ppo_config()
        .framework("torch")
        .debugging(seed=0)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .env_runners(num_env_runners=0, rollout_fragment_length="auto")
    )
    configure(config, "HalfCheetah-v5", num_envs=4, num_threads=1, max_episode_steps=50)
    algo = config.build_algo()
    try:
        runner = algo.env_runner
        assert isinstance(runner, FastvecEnvRunner) and runner._fallback_reason is None
        facts = runner_facts(algo)[0]
        assert (facts["module"], facts["class"], facts["num_envs"]) == ("fastvec.vector", "VectorEnv", 4)
        assert facts["obs"].dtype == np.float64 and facts["obs"].shape == (4, 17)
        before = algo.learner_group.get_weights()["default_policy"]
        results = [algo.train()["env_runners"] for _ in range(2)]
        after = algo.learner_group.get_weights()["default_policy"]
    finally:
        algo.stop()
    assert sum(r["num_env_steps_sampled"] for r in results) >= 2 * 256
    assert sum(r["num_episodes"] for r in results) >= 8 and np.isfinite(results[-1]["episode_return_mean"])
    assert any(not np.array_equal(before[k], after[k]) for k in before)


# -- RLlib's old API stack ---------------------------------------------------


def test_the_old_stack_base_env_steps_the_pool_as_gymnasium_envs():
    """poll/send_actions/try_reset (RLlib's VectorEnvWrapper over OldStackVectorEnv) give what gymnasium's
    CartPole gives, env by env; a finished env is reset by try_reset and goes on."""
    import gymnasium as gym
    from ray.rllib.env.base_env import _DUMMY_AGENT_ID, convert_to_base_env

    from fastvec.adapters.rllib import OldStackVectorEnv

    n = 3
    with pytest.raises(ValueError, match="autoreset_mode='disabled'"):
        OldStackVectorEnv(fastvec.make("CartPole-v1", n))
    vec = OldStackVectorEnv(fastvec.make("CartPole-v1", n, autoreset_mode="disabled"))
    base = convert_to_base_env(vec, num_envs=n)
    refs = [gym.make("CartPole-v1") for _ in range(n)]
    obs, infos = vec.vector_reset(seeds=[10, 11, 12])
    for i, ref in enumerate(refs):
        np.testing.assert_array_equal(obs[i], ref.reset(seed=10 + i)[0])
    base.first_reset_done = True  # the wrapper would reset unseeded at its first poll
    base.new_obs, base.cur_infos = obs, infos
    rng = np.random.default_rng(0)
    resets = 0
    for _ in range(60):
        polled, rewards, terminated, truncated, _, _ = base.poll()
        actions = rng.integers(0, 2, n)
        for i, ref in enumerate(refs):
            if terminated[i]["__all__"] or truncated[i]["__all__"]:
                seed = 100 + resets
                resets += 1
                got, _ = base.try_reset(i, seed=seed)
                np.testing.assert_array_equal(got[i][_DUMMY_AGENT_ID], ref.reset(seed=seed)[0])
        base.send_actions({i: {_DUMMY_AGENT_ID: int(actions[i])} for i in range(n)})
        for i, ref in enumerate(refs):
            o, r, term, trunc, _ = ref.step(int(actions[i]))
            np.testing.assert_array_equal(base.new_obs[i], o)
            assert (base.cur_rewards[i], base.cur_terminateds[i], base.cur_truncateds[i]) == (r, term, trunc)
    assert resets > 0
    base.stop()
    assert vec.pool.closed


@pytest.mark.slow
def test_ppo_trains_on_the_old_api_stack(local_ray):
    """RLlib's old stack (RolloutWorker, BaseEnv): PPO samples from a fastvec pool per worker and learns."""
    from fastvec.adapters.rllib import OldStackVectorEnv, configure_old_stack

    config = (
        bare_ppo_config()
        .framework("torch")
        .debugging(seed=0)
        .training(lr=1e-3, train_batch_size=1024, minibatch_size=256, num_epochs=4)
        .env_runners(num_env_runners=0, rollout_fragment_length="auto")
    )
    configure_old_stack(config, "CartPole-v1", num_envs=8, num_threads=1)
    assert not config.enable_env_runner_and_connector_v2
    algo = config.build_algo()
    try:
        returns = [algo.train()["env_runners"]["episode_return_mean"] for _ in range(4)]
        env = algo.env_runner.env
        assert isinstance(env, OldStackVectorEnv) and isinstance(env.pool, fastvec.VectorEnv)
        assert env.pool.num_envs == 8 and env.pool.num_threads == 1
    finally:
        algo.stop()
    print("episode_return_mean per iteration:", [round(r, 1) for r in returns])
    assert returns[-1] > returns[0], returns
    with pytest.raises(TypeError, match="gravity"):
        configure_old_stack(bare_ppo_config(), "CartPole-v1", num_envs=2, gravity=3.0)
