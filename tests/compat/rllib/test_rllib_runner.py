"""fastvec.adapters.rllib.FastvecEnvRunner against RLlib's own SingleAgentEnvRunner: over the same
fastvec pool, with the same weights and the same torch RNG stream, both return the same episode chunks
(data, dtypes, lookback, t_started, flags, which chunks share an id) and the same metrics; where the
fast path does not apply the runner is the parent, and says why; RLlib's algorithms train on it."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from rllib_compare import COMMON_METRICS, assert_same_data, assert_same_metrics_of, sample_both

import fastvec

pytestmark = [
    pytest.mark.rllib,
    pytest.mark.filterwarnings("ignore:.*Overriding environment rllib-single-agent-env-v0:UserWarning"),
]

# The metrics both runners must agree on (RLlib's names).
METRICS = (*COMMON_METRICS, "agent_episode_return_mean", "module_episode_return_mean")


@pytest.fixture(scope="module", autouse=True)
def torch():
    pytest.importorskip("ray.rllib")
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


def ppo_config(env_id: str, num_envs: int, lookback: int = 1, **env_runners):
    from ray.rllib.algorithms.ppo import PPOConfig

    from fastvec.adapters.rllib import configure

    config = PPOConfig().framework("torch").debugging(seed=0)
    configure(config, env_id, num_envs=num_envs, num_threads=1, env_runner_cls=None)
    return config.env_runners(num_env_runners=0, episode_lookback_horizon=lookback, **env_runners)


@pytest.fixture
def runner_pair():
    """Makes RLlib's runner and fastvec's from one config (same weights, same seeds, same space RNG), and
    stops them when the test ends."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    from fastvec.adapters.rllib import FastvecEnvRunner

    made = []

    def make(config):
        stock, fast = SingleAgentEnvRunner(config=config), FastvecEnvRunner(config=config)
        made.extend((stock, fast))
        fast.module.set_state(stock.module.get_state())
        stock._seed = fast._seed  # worker 0: seed + 0 in both; set, not assumed
        for runner in (stock, fast):
            runner.env.action_space.seed(0)
        return stock, fast

    yield make
    for runner in made:
        runner.stop()


def assert_same_chunks(a, b, ids: dict[str, str], lookback_too: bool = True) -> None:
    """Chunk by chunk: the same data and flags, and an id of RLlib's always maps to the same id of ours."""
    assert len(a) == len(b), (len(a), len(b))
    for x, y in zip(a, b, strict=True):
        y.validate()
        assert y.is_numpy
        assert ids.setdefault(x.id_, y.id_) == y.id_, "two chunks of one episode got different ids"
        facts = ("t_started", "t", "is_terminated", "is_truncated")
        assert [getattr(x, f) for f in facts] == [getattr(y, f) for f in facts]
        assert len(x) == len(y)
        buffers = {"observations": (x.observations, y.observations), "actions": (x.actions, y.actions)}
        buffers |= {"rewards": (x.rewards, y.rewards), "infos": (x.infos, y.infos)}
        assert set(x.extra_model_outputs) == set(y.extra_model_outputs)
        buffers |= {k: (x.extra_model_outputs[k], y.extra_model_outputs[k]) for k in x.extra_model_outputs}
        for name, (bx, by) in buffers.items():
            if lookback_too:
                assert bx.lookback == by.lookback, (name, bx.lookback, by.lookback)
                assert_same_data(bx.data, by.data, name)
            else:
                assert_same_data(bx.get(), by.get(), name)
    assert len(set(ids.values())) == len(ids), "two episodes of RLlib's share an id of ours"


def assert_same_metrics(stock, fast) -> dict:
    ma, mb = assert_same_metrics_of(stock, fast, METRICS)
    return mb


# -- equivalence -------------------------------------------------------------


@pytest.mark.parametrize(
    ("env_id", "num_envs", "lookback", "explore", "timesteps"),
    [
        ("CartPole-v1", 4, 3, True, 6),  # fewer steps per env than the lookback: the lookback spans chunks
        ("CartPole-v1", 4, 1, True, 400),
        ("CartPole-v1", 64, 3, True, 4000),
        ("CartPole-v1", 256, 1, True, 4000),
        ("CartPole-v1", 16, 1, False, 1000),
        ("Pendulum-v1", 16, 3, True, 1000),  # Box actions, unsquashed from [-1, 1]
        ("MountainCar-v0", 8, 1, True, 1700),  # truncation at 200 steps
    ],
)
def test_the_same_chunks_and_metrics_as_rllibs_runner(
    torch, runner_pair, env_id, num_envs, lookback, explore, timesteps
):
    stock, fast = runner_pair(ppo_config(env_id, num_envs, lookback))
    assert fast._fallback_reason is None
    ids: dict[str, str] = {}
    finished = truncated = 0
    for call in range(3):
        a, b = sample_both(torch, stock, fast, call, num_timesteps=timesteps, explore=explore)
        assert_same_chunks(a, b, ids)
        finished += sum(e.is_done for e in b)
        truncated += sum(e.is_truncated for e in b)
        metrics = assert_same_metrics(stock, fast)
        assert metrics["num_env_steps_sampled"] >= timesteps
    steps_per_env = 3 * timesteps // num_envs
    if env_id == "CartPole-v1" and steps_per_env >= 100:
        assert finished > num_envs and len(ids) > num_envs  # episodes ended and new ones began
    if env_id == "MountainCar-v0":
        assert truncated >= num_envs


def test_the_same_chunks_on_pong_with_its_infos(torch, runner_pair):
    """Atari: normalized frames, the env's info (lives) in every step's dict."""
    config = ppo_config("Pong-v5", 4, 1)
    stock, fast = runner_pair(config)
    ids: dict[str, str] = {}
    for call in range(2):
        a, b = sample_both(torch, stock, fast, call, num_timesteps=200)
        assert_same_chunks(a, b, ids)
        assert set(b[0].infos.data[-1]) == {"lives"}
        assert b[0].observations.data.dtype == np.float32
        assert_same_metrics(stock, fast)


@pytest.mark.mujoco
def test_the_same_chunks_on_hopper_with_its_infos(torch, runner_pair):
    """MuJoCo: float64 observations and rewards, Box actions unsquashed, and infos as gymnasium's vector envs
    batch them (a reset's keys in an episode's first info, the step's in the others, masked per env); Hopper's
    episodes end within a call, so some chunks are whole episodes and others go on into the next call."""
    stock, fast = runner_pair(ppo_config("Hopper-v5", 4, 2))
    ids: dict[str, str] = {}
    reset_keys = {"x_position", "z_distance_from_origin"}
    step_keys = reset_keys | {"x_velocity", "reward_forward", "reward_ctrl", "reward_survive"}
    terminated = continued = 0
    for call in range(3):
        a, b = sample_both(torch, stock, fast, call, num_timesteps=300)
        assert_same_chunks(a, b, ids)
        assert_same_metrics(stock, fast)
        for eps in b:
            assert eps.observations.data.dtype == eps.rewards.data.dtype == np.float64
            assert eps.actions.data.dtype == np.float32 and eps.actions.data.shape[1:] == (3,)
            infos, start = eps.infos.data, eps.infos.lookback  # (the lookback holds earlier steps' infos)
            if eps.t_started == 0:
                assert start == 0 and set(infos[0]) == reset_keys
                start = 1
            assert all(set(i) == step_keys for i in infos[start:])
            assert all(type(v) is np.float64 for i in infos for v in i.values())
            terminated += eps.is_terminated
            continued += eps.t_started > 0
    assert terminated > 8 and continued > 0


def test_force_reset_and_a_changed_explore_flag(torch, runner_pair):
    stock, fast = runner_pair(ppo_config("CartPole-v1", 8, 2))
    ids: dict[str, str] = {}
    for call, kwargs in enumerate([{}, {"force_reset": True}, {"explore": False}, {"explore": True}]):
        a, b = sample_both(torch, stock, fast, call, **({"num_timesteps": 300} | kwargs))
        assert_same_chunks(a, b, ids)
        assert_same_metrics(stock, fast)


def test_random_actions_before_and_after_policy_calls(torch, runner_pair):
    """Random actions carry no model outputs: in an episode that has both, those steps get zeros (RLlib's
    own runner fails validate() on an episode of policy steps followed by random ones)."""
    stock, fast = runner_pair(ppo_config("CartPole-v1", 8, 1))
    ids: dict[str, str] = {}
    a, b = sample_both(torch, stock, fast, 0, num_timesteps=200, random_actions=True)
    assert_same_chunks(a, b, ids)
    assert set(b[-1].extra_model_outputs) == {"weights_seq_no"}
    a, b = sample_both(torch, stock, fast, 1, num_timesteps=200)
    assert_same_chunks(a, b, ids, lookback_too=False)  # RLlib's lookback lacks the outputs
    assert_same_metrics(stock, fast)
    for random_actions in (True, False, True):
        for eps in fast.sample(num_timesteps=200, random_actions=random_actions):
            eps.validate()
            lengths = {len(v.data) for v in eps.extra_model_outputs.values()}
            assert lengths == {len(eps.actions.data)}
            assert {"action_logp", "action_dist_inputs", "weights_seq_no"} <= set(eps.extra_model_outputs)


def test_chunks_keep_their_ids_across_calls_and_sum_to_whole_episodes(torch, runner_pair):
    """What replay buffers and get_metrics rely on: every chunk of one episode has its id, chunks follow
    on (t_started is the previous chunk's t), and a finished episode's chunks add up to its length."""
    _, fast = runner_pair(ppo_config("CartPole-v1", 16, 1))
    chunks: dict[str, list] = {}
    for _ in range(6):
        for eps in fast.sample(num_timesteps=100):
            chunks.setdefault(eps.id_, []).append(eps)
    whole = 0
    for parts in chunks.values():
        assert parts[0].t_started == 0
        for before, after in itertools.pairwise(parts):
            assert after.t_started == before.t and not before.is_done
            first = after.observations.data[after.observations.lookback]  # the chunk's first observation
            np.testing.assert_array_equal(first, before.observations.data[-1])
        if parts[-1].is_done:
            whole += 1
            assert parts[-1].t == sum(len(p) for p in parts)
    assert whole > 10


# -- when the fast path does not apply -----------------------------------------


def _callback_class():
    from ray.rllib.callbacks.callbacks import RLlibCallback

    class CountEnds(RLlibCallback):
        def on_episode_end(self, *, episode, **kwargs):
            episode.custom_data["seen"] = True

    return CountEnds


def _user_connector(env=None, spaces=None, device=None):
    from ray.rllib.connectors.connector_v2 import ConnectorV2

    class PassObservationsOn(ConnectorV2):
        def __call__(self, *, rl_module, batch, episodes, **kwargs):
            return batch

    return PassObservationsOn()


def _user_module_to_env(env=None, spaces=None):
    from ray.rllib.connectors.connector_v2 import ConnectorV2

    class PassActionsOn(ConnectorV2):
        def __call__(self, *, rl_module, batch, episodes, **kwargs):
            return batch

    return PassActionsOn()


FALLBACKS = {
    "env-to-module": (lambda c: c.env_runners(env_to_module_connector=_user_connector), "PassObservationsOn"),
    "module-to-env": (lambda c: c.env_runners(module_to_env_connector=_user_module_to_env), "PassActionsOn"),
    "callback class": (lambda c: c.callbacks(_callback_class()), "on_episode_end"),
    "callback function": (lambda c: c.callbacks(on_episode_step=lambda **kw: None), "on_episode_step"),
    "stateful module": (lambda c: c.rl_module(model_config={"use_lstm": True, "max_seq_len": 4}), "stateful"),
    "episodes_to_numpy": (lambda c: c.env_runners(episodes_to_numpy=False), "episodes_to_numpy"),
}


@pytest.mark.parametrize("case", list(FALLBACKS))
def test_the_fallback_is_the_parents_loop_and_says_why(torch, runner_pair, case, caplog):
    change, words = FALLBACKS[case]
    stock, fast = runner_pair(change(ppo_config("CartPole-v1", 4, 1)))
    assert words in fast._fallback_reason
    ids: dict[str, str] = {}
    with caplog.at_level(logging.WARNING, logger="ray.rllib"):
        for call in range(2):
            a, b = sample_both(torch, stock, fast, call, num_timesteps=100)
            if case == "episodes_to_numpy":
                assert not any(e.is_numpy for e in b)
                a, b = [e.to_numpy() for e in a], [e.to_numpy() for e in b]
            assert_same_chunks(a, b, ids)
    said = [r for r in caplog.records if "FastvecEnvRunner" in r.getMessage()]
    assert len(said) == 1 and words in said[0].getMessage(), said  # once, however many calls
    assert said[0].levelno == logging.WARNING  # RLlib keeps its logger at WARN: INFO would not show
    assert_same_metrics(stock, fast)


def test_a_fallback_is_said_once_per_runner_whatever_the_reasons(torch, runner_pair, caplog):
    """A fast runner asked for whole episodes, then for a connector's fallback: one warning in all."""
    stock, fast = runner_pair(ppo_config("CartPole-v1", 4, 1))
    with caplog.at_level(logging.WARNING, logger="ray.rllib"):
        fast.sample(num_episodes=1)
        fast.sample(num_episodes=1)
        fast._fallback_reason = "a reason of another kind"
        fast.sample(num_timesteps=20)
    said = [r.getMessage() for r in caplog.records if "FastvecEnvRunner" in r.getMessage()]
    assert len(said) == 1 and "whole episodes" in said[0], said


def test_sampling_whole_episodes_falls_back_and_the_next_fast_call_starts_afresh(torch, runner_pair):
    stock, fast = runner_pair(ppo_config("CartPole-v1", 4, 1))
    ids: dict[str, str] = {}
    for call, kwargs in enumerate([{"num_timesteps": 50}, {"num_episodes": 3}, {"num_timesteps": 50}]):
        a, b = sample_both(torch, stock, fast, call, **kwargs)
        assert_same_chunks(a, b, ids)
        if "num_episodes" in kwargs:
            assert all(e.is_done for e in b) and len(b) >= 3
        assert_same_metrics(stock, fast)


# -- seeds across runners ----------------------------------------------------


def test_no_two_envs_of_three_runners_share_a_stream():
    """Runner w seeds its env i with seed + w * num_envs + i (RLlib's seed + w would hand runner w's env i
    the stream of runner w + 1's env i - 1): reproducible, and three runners start from distinct states."""
    from fastvec.adapters.rllib import FastvecEnvRunner

    n, firsts = 4, []
    for w in (1, 2, 3):
        config = ppo_config("CartPole-v1", n, 1)
        runner = FastvecEnvRunner(config=config, worker_index=w, num_workers=3)
        try:
            assert runner._seed == 0 + w * n
            first = np.stack([e.observations.data[0] for e in runner.sample(num_timesteps=n)[-n:]])
        finally:
            runner.stop()
        expected, _ = fastvec.make("CartPole-v1", n, seed=w * n).reset(seed=w * n)
        np.testing.assert_array_equal(first, expected)
        firsts.append(first)
    starts = np.concatenate(firsts)
    assert len({row.tobytes() for row in starts}) == 3 * n


# -- the shortcuts, held against what they stand for ---------------------------


def test_the_episode_builder_sets_what_rllibs_constructor_sets():
    """FastvecEnvRunner builds chunks without SingleAgentEpisode's constructor (its per-buffer space walks
    are most of a chunk's cost): every slot and every buffer attribute must come out the same."""
    import gymnasium as gym
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    from fastvec.adapters._rllib_columns import _EpisodeBuilder

    obs_space, act_space = gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2)
    rng = np.random.default_rng(0)
    obs = rng.random((6, 3), dtype=np.float32)
    data = dict(
        observations=obs,
        infos=[{"a": i} for i in range(6)],
        actions=np.array([0, 1, 1, 0, 1], np.int32),
        rewards=np.ones(5, np.float32),
        extra_model_outputs={"action_logp": rng.random(5, dtype=np.float32), "weights_seq_no": np.zeros(5, np.int64)},
    )
    for lookback, flags in ((0, (False, False)), (2, (True, False)), (5, (False, True))):
        ref = SingleAgentEpisode(
            "x",
            observation_space=obs_space,
            action_space=act_space,
            terminated=flags[0],
            truncated=flags[1],
            t_started=7,
            len_lookback_buffer=lookback,
            **data,
        )
        built = _EpisodeBuilder(obs_space, act_space)(
            "x",
            data["observations"],
            data["infos"],
            data["actions"],
            data["rewards"],
            flags,
            data["extra_model_outputs"],
            7,
            lookback,
        )
        for slot in SingleAgentEpisode.__slots__:
            a, b = getattr(ref, slot), getattr(built, slot)
            if slot in ("observations", "infos", "actions", "rewards"):
                assert a.__dict__.keys() == b.__dict__.keys() and a == b, slot
            elif slot == "extra_model_outputs":
                assert a.keys() == b.keys() and all(a[k] == b[k] for k in a)
            elif slot not in ("_start_time", "_last_step_time"):  # the constructor leaves both None, too
                assert a == b and type(a) is type(b), (slot, a, b)
        built.validate()


def test_the_tensor_conversions_are_rllibs():
    """The loop's numpy<->torch shortcuts give what RLlib's convert_to_torch_tensor / convert_to_numpy give:
    values and dtypes (floats to float32, signed ints to int32 on the way back; uint8 and bool kept)."""
    import torch
    from ray.rllib.utils.numpy import convert_to_numpy
    from ray.rllib.utils.torch_utils import convert_to_torch_tensor

    from fastvec.adapters._rllib_runner import _to_numpy, _to_tensor

    for array in (np.ones((4, 3), np.float64), np.ones((4, 3), np.float32), np.ones((4, 84, 84, 4), np.uint8)):
        a, b = convert_to_torch_tensor(array), _to_tensor(array, None)
        assert a.dtype == b.dtype and torch.equal(a, b)
    out = {
        "f64": torch.ones(4, dtype=torch.float64),
        "f32": torch.ones(4, 2),
        "i64": torch.arange(4),
        "u8": torch.ones(4, dtype=torch.uint8),
        "b": torch.ones(4, dtype=torch.bool),
    }
    a, b = convert_to_numpy(dict(out)), _to_numpy(dict(out))
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k


# -- RLlib's observation connectors on the fast path ---------------------------


def _mean_std_filter(env=None, spaces=None, device=None):
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    return MeanStdFilter()  # as RLlib's mujoco_ppo.py adds it


def assert_same_filter_state(stock, fast) -> None:
    from ray.rllib.core import COMPONENT_ENV_TO_MODULE_CONNECTOR

    a = stock.get_state(components=COMPONENT_ENV_TO_MODULE_CONNECTOR)[COMPONENT_ENV_TO_MODULE_CONNECTOR]
    b = fast.get_state(components=COMPONENT_ENV_TO_MODULE_CONNECTOR)[COMPONENT_ENV_TO_MODULE_CONNECTOR]
    assert_same_data(a, b, "env_to_module state")
    assert filter_stats(b)[0]["num_pushes"] > 0


def filter_stats(pipeline_state: dict) -> list:
    """The running stats in an env-to-module pipeline's state (keyed by connector, then agent)."""
    (stats,) = (s["running_stats"] for key, c in pipeline_state.items() if "MeanStdFilter" in key for s in c.values())
    return stats


def _std_only_filter(env=None, spaces=None, device=None):
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    return MeanStdFilter(de_mean_to_zero=False, clip_by_value=5.0)


@pytest.mark.parametrize(
    ("env_id", "num_envs", "lookback", "timesteps", "connector"),
    [
        ("CartPole-v1", 8, 3, 400, _mean_std_filter),
        ("CartPole-v1", 8, 1, 200, _std_only_filter),  # float32 rows divided, not de-meaned
        ("Pendulum-v1", 4, 1, 300, _mean_std_filter),
        pytest.param("Hopper-v5", 4, 2, 300, _mean_std_filter, marks=pytest.mark.mujoco),  # mujoco_ppo.py's env
    ],
)
def test_mean_std_filter_gives_rllibs_chunks_and_running_stats(
    torch, runner_pair, env_id, num_envs, lookback, timesteps, connector
):
    """The filtered observations (lookback, reset observations and the last one of a call included) and the
    filter's running stats and deltas equal RLlib's after every call, and after a reset."""
    config = ppo_config(env_id, num_envs, lookback).env_runners(env_to_module_connector=connector)
    stock, fast = runner_pair(config)
    assert fast._fallback_reason is None
    ids: dict[str, str] = {}
    for call, kwargs in enumerate([{}, {}, {"force_reset": True}, {}]):
        a, b = sample_both(torch, stock, fast, call, num_timesteps=timesteps, **kwargs)
        assert_same_chunks(a, b, ids)
        assert_same_filter_state(stock, fast)
        assert_same_metrics(stock, fast)
    if connector is _mean_std_filter:
        assert max(abs(e.observations.data).max() for e in b) <= 10.0  # clipped as the filter clips
    assert b[0].observations.space == stock._env_to_module.observation_space


def _flatten(env=None, spaces=None, device=None):
    from ray.rllib.connectors.env_to_module import FlattenObservations

    return FlattenObservations()


def _flatten_then_filter(env=None, spaces=None, device=None):
    from ray.rllib.connectors.env_to_module import FlattenObservations, MeanStdFilter

    return [FlattenObservations(), MeanStdFilter()]


@pytest.mark.parametrize(
    ("env_id", "connector"),
    [
        ("CartPole-v1", _flatten),  # Box: float32 rows
        ("FrozenLake-v1", _flatten),  # Discrete: one-hot rows (the Python-env pool)
        ("FrozenLake-v1", _flatten_then_filter),  # the filter on the flattened rows
    ],
)
def test_flatten_observations_gives_rllibs_chunks(torch, runner_pair, env_id, connector):
    stock, fast = runner_pair(ppo_config(env_id, 4, 2).env_runners(env_to_module_connector=connector))
    assert fast._fallback_reason is None
    ids: dict[str, str] = {}
    for call in range(3):
        a, b = sample_both(torch, stock, fast, call, num_timesteps=200)
        assert_same_chunks(a, b, ids)
        assert_same_metrics(stock, fast)
    obs = b[0].observations.data
    assert obs.dtype == np.float32 and obs.ndim == 2
    if env_id == "FrozenLake-v1" and connector is _flatten:
        assert obs.shape[1] == 16 and (obs.sum(axis=1) == 1).all()  # one-hot
    if connector is _flatten_then_filter:
        assert_same_filter_state(stock, fast)


def test_mean_std_filter_state_syncs_across_runners_as_rllibs(torch, runner_pair):
    """Two runner pairs sample, their filter states are merged on one runner and set on all (what RLlib's
    EnvRunnerGroup.sync_env_runner_states does), and sampling goes on from the merged stats alike."""
    from ray.rllib.core import COMPONENT_ENV_TO_MODULE_CONNECTOR as E2M

    config = ppo_config("Pendulum-v1", 4, 1).env_runners(env_to_module_connector=_mean_std_filter)
    pairs = [runner_pair(config), runner_pair(config)]
    for k, (stock, fast) in enumerate(pairs):
        sample_both(torch, stock, fast, k, num_timesteps=40 * (k + 1))  # the two pairs see different data
    merged = []
    for side in (0, 1):
        runners = [pair[side] for pair in pairs]
        states = [r.get_state(components=E2M)[E2M] for r in runners]
        merged.append(runners[0]._env_to_module.merge_states(states))
        for r in runners:
            r.set_state({E2M: merged[-1]})
    assert_same_data(merged[0], merged[1], "merged state")
    # Both runners' pushes count (steps, and each env's reset observation), as merged on runner 0.
    assert filter_stats(merged[1])[0]["num_pushes"] >= (40 + 4) + (80 + 4)
    ids: dict[str, str] = {}
    for call, (stock, fast) in enumerate(pairs):
        a, b = sample_both(torch, stock, fast, 10 + call, num_timesteps=100)
        assert_same_chunks(a, b, ids)
        assert_same_filter_state(stock, fast)


# -- atari_ppo.py's frame stacking on the fast path ----------------------------

# RLlib's atari_ppo.py: single 64x64 frames (wrap_atari_for_new_api_stack(..., framestack=None)'s: noop starts, frame
# skip 4, a life per episode, FIRE at reset, no sticky actions) stacked by its FrameStackingEnvToModule(num_frames=4).
ATARI_PPO_ENV = dict(
    stack_num=1,
    img_height=64,
    img_width=64,
    noop_max=30,
    episodic_life=True,
    use_fire_reset=True,
    repeat_action_probability=0.0,
)
ATARI_PPO_MODEL = {
    "vf_share_layers": True,
    "conv_filters": [[16, 4, 2], [32, 4, 2], [64, 4, 2], [128, 4, 2]],
    "conv_activation": "relu",
    "head_fcnet_hiddens": [256],
}


def _frame_stacking(env=None, spaces=None, device=None):
    from ray.rllib.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule

    return FrameStackingEnvToModule(num_frames=4)  # as RLlib's atari_ppo.py adds it


def _filter_then_frame_stacking(env=None, spaces=None, device=None):
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    return [MeanStdFilter(), _frame_stacking()]


def atari_ppo_config(num_envs: int, lookback: int, max_episode_steps: int, connector=_frame_stacking):
    from ray.rllib.algorithms.ppo import PPOConfig

    from fastvec.adapters.rllib import configure

    config = PPOConfig().framework("torch").debugging(seed=0)
    options = ATARI_PPO_ENV | {"max_episode_steps": max_episode_steps}
    configure(config, "Pong-v5", num_envs=num_envs, num_threads=1, env_runner_cls=None, **options)
    config.rl_module(model_config=ATARI_PPO_MODEL)
    return config.env_runners(num_env_runners=0, episode_lookback_horizon=lookback, env_to_module_connector=connector)


def record_module_inputs(runner) -> list:
    """Every forward pass's observations (the module's input), copied, in the runner's order."""
    seen = []
    for name in ("_forward_exploration", "_forward_inference"):
        original = getattr(runner.module, name)

        def recorded(batch, _original=original, **kwargs):
            seen.append(batch["obs"].detach().clone().numpy())
            return _original(batch, **kwargs)

        setattr(runner.module, name, recorded)
    return seen


@pytest.mark.parametrize(
    ("num_envs", "lookback", "timesteps", "max_steps", "explore", "connector"),
    [
        (2, 1, 30, 12, True, _frame_stacking),  # atari_ppo's lookback: chunks go on with 2 frames, then zeros
        (3, 2, 25, 9, True, _frame_stacking),  # steps per call not a multiple of num_envs
        (2, 4, 40, 15, False, _frame_stacking),  # a lookback as long as the stack: no zeros at chunk starts
        (2, 1, 30, 12, True, _filter_then_frame_stacking),  # filtered frames, stacked
    ],
)
def test_frame_stacking_gives_rllibs_module_inputs_and_chunks(
    torch, runner_pair, num_envs, lookback, timesteps, max_steps, explore, connector
):
    """atari_ppo.py's FrameStackingEnvToModule on the fast path: every forward pass takes the stacks RLlib's
    runner gives its module (zeros before an episode's first frame and beyond a chunk's lookback, episodes
    ending within a call and at its end), and the chunks (single frames) are RLlib's."""
    stock, fast = runner_pair(atari_ppo_config(num_envs, lookback, max_steps, connector))
    assert fast._fallback_reason is None
    assert fast.env.single_observation_space.shape == (64, 64, 1)
    seen_stock, seen_fast = record_module_inputs(stock), record_module_inputs(fast)
    ids: dict[str, str] = {}
    ended = 0
    for call, kwargs in enumerate([{}, {}, {"force_reset": True}, {}, {}]):
        a, b = sample_both(torch, stock, fast, call, num_timesteps=timesteps, explore=explore, **kwargs)
        assert_same_chunks(a, b, ids)
        assert_same_metrics(stock, fast)
        ended += sum(e.is_done for e in b)
        assert all(e.observations.data.shape[1:] == (64, 64, 1) for e in b)
    assert len(seen_stock) == len(seen_fast) > 5 * timesteps // num_envs
    for step, (x, y) in enumerate(zip(seen_stock, seen_fast, strict=True)):
        assert x.shape == (num_envs, 64, 64, 4) and x.dtype == np.float32
        np.testing.assert_array_equal(x, y, err_msg=f"forward pass {step}")
    stacks = np.stack(seen_fast)
    assert ended >= num_envs  # truncated at max_steps, some within a call
    assert (stacks[..., 0] == 0).all(axis=(2, 3)).any() and (stacks[..., 0] != 0).any(axis=(2, 3)).any()
    if connector is _filter_then_frame_stacking:
        assert_same_filter_state(stock, fast)


def _frame_stacking_then_another(env=None, spaces=None, device=None):
    return [_frame_stacking(), _user_connector()]


def test_frame_stacking_before_another_connector_falls_back(torch, runner_pair, caplog):
    """A connector after FrameStacking sees RLlib's stacked batch, which the fast path does not make: RLlib's
    loop, and the log names FrameStacking."""
    stock, fast = runner_pair(atari_ppo_config(2, 1, 12, _frame_stacking_then_another))
    assert "FrameStacking" in fast._fallback_reason
    with caplog.at_level(logging.WARNING, logger="ray.rllib"):
        a, b = sample_both(torch, stock, fast, 0, num_timesteps=20)
    assert_same_chunks(a, b, {})
    said = [r.getMessage() for r in caplog.records if "FastvecEnvRunner" in r.getMessage()]
    assert len(said) == 1 and "FrameStacking" in said[0]


@pytest.mark.parametrize(("example", "env_id"), [("atari_ppo", "Pong-v5"), ("mujoco_ppo", "Hopper-v5")])
def test_the_benchs_rllib_example_rows_sample_on_the_fast_path(torch, example, env_id):
    """fastvec bench's rllib-<example>-fastvec rows measure FastvecEnvRunner's own loop (no fallback) over the
    example's pipeline; an env of the other kind is not available to them."""
    from fastvec.bench.ray_runners import RLlibRunner
    from fastvec.bench.runners import NotAvailable

    runner = RLlibRunner(env_id, 2, "fastvec", timesteps=20, example=example)
    try:
        fast = runner._runner
        assert type(fast).__name__ == "FastvecEnvRunner" and fast._fallback_reason is None
        connector = "FrameStacking" if example == "atari_ppo" else "MeanStdFilter"
        assert type(fast._env_to_module.connectors[0]).__name__ == connector
        assert runner.run(1) >= 20
    finally:
        runner.close()
    with pytest.raises(NotAvailable):
        RLlibRunner("CartPole-v1", 2, "fastvec", timesteps=20, example=example)
