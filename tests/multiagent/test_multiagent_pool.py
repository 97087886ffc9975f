"""fastvec.MultiAgentVectorEnv over the Python-env pool: parity with the same PettingZoo envs stepped directly (every
autoreset mode, sync and async), agents that die and are born, heterogeneous spaces, seeding, an AEC env, an RLlib
MultiAgentEnv, episode statistics, env calls, bad input and close."""

from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
import sys
import tempfile
import textwrap

import gymnasium as gym
import mpe2.simple_adversary_v3 as simple_adversary
import mpe2.simple_spread_v3 as simple_spread
import numpy as np
import pytest
from ma_envs import (
    AgentStepError,
    DictActions,
    Lifecycle,
    Misbehaving,
    Nested,
    Raising,
    Reference,
    Reversed,
    duo_class,
    make_duo,
)
from pettingzoo.utils.conversions import aec_to_parallel

import fastvec
from fastvec.multiagent import PyPoolRows
from fastvec.multiagent.as_one_env import AsOneEnv, Maker
from fastvec.multiagent.ids import MPE2_IDS, python_constructor
from fastvec.vector import ClosedError

MODES = ("next_step", "same_step", "disabled")

ENVS = {
    "simple_spread": functools.partial(simple_spread.parallel_env, max_cycles=7),
    "simple_adversary": functools.partial(simple_adversary.parallel_env, max_cycles=5, continuous_actions=True),
    "lifecycle": Lifecycle,
}


def sample_actions(env, rng, rows):
    """One action per agent per row, valid in the agent's space (rows of dead agents included: they are ignored)."""
    out = {}
    for a in env.possible_agents:
        space = env.action_space(a)
        if isinstance(space, gym.spaces.Discrete):
            out[a] = rng.integers(space.start, space.start + space.n, rows)
        elif isinstance(space, gym.spaces.MultiDiscrete):
            out[a] = rng.integers(0, space.nvec, (rows, *space.shape))
        else:
            out[a] = rng.uniform(space.low, space.high, (rows, *space.shape)).astype(space.dtype)
    return out


def check_row(env, got, row, expected, final=False):
    """Row ``row`` of the pool's per-agent arrays ``got`` (obs, rewards, terminations, truncations, active) equals
    the reference's ``expected`` row."""
    obs, rewards, terms, truncs, active = got
    for a in env.possible_agents:
        want = expected["obs"].get(a)
        if want is None:
            assert not np.any(obs[a][row]), (a, row)
        else:
            np.testing.assert_array_equal(obs[a][row], np.asarray(want), err_msg=f"obs of {a}, row {row}")
        assert active[a][row] == (a in expected["active"]), (a, row, final)
        if rewards is not None:
            assert rewards[a][row] == expected["rewards"].get(a, 0.0), (a, row, final)
            assert terms[a][row] == bool(expected["terminations"].get(a, False)), (a, row, final)
            assert truncs[a][row] == bool(expected["truncations"].get(a, False)), (a, row, final)


def check_step(env, result, refs, ids, mode):
    obs, rewards, terms, truncs, infos = result
    for row, e in enumerate(ids):
        expected = refs[e].last
        check_row(env, (obs, rewards, terms, truncs, infos["active"]), row, expected)
        if "final" in expected:
            assert infos["_final_obs"][row]
            check_row(env, (infos["final_obs"], None, None, None, infos["final_active"]), row, expected["final"])
        elif mode == "same_step" and "_final_obs" in infos:
            assert not infos["_final_obs"][row]


class Refs(list):
    def step(self, e, actions, row=None):
        """Env ``e``'s step with row ``row`` (default: ``e``) of ``actions``."""
        row = e if row is None else row
        self[e].last = self[e].step({a: v[row] for a, v in actions.items()})

    def reset(self, e, seed=None):
        self[e].last = self[e].reset(seed)


def references(name, n, mode, seed):
    refs = Refs(Reference(ENVS[name](), mode) for _ in range(n))
    for e in range(n):
        refs.reset(e, seed + e)
    return refs


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(ENVS))
def test_sync_parity(name, mode):
    n, seed = 3, 11
    rng = np.random.default_rng(0)
    with fastvec.make(ENVS[name], n, seed=seed, autoreset_mode=mode, num_workers=2) as env:
        assert isinstance(env, fastvec.MultiAgentVectorEnv)
        refs = references(name, n, mode, seed)
        obs, infos = env.reset()
        check_step(env, (obs, None, None, None, infos), refs, range(n), mode)
        for _ in range(16):
            if mode == "disabled":
                ended = [e for e in range(n) if refs[e].needs_reset]
                if ended:
                    mask = np.zeros(n, bool)
                    mask[ended] = True
                    obs, infos = env.reset(options={"reset_mask": mask})
                    for e in ended:
                        refs.reset(e)
                    check_step(env, (obs, None, None, None, infos), refs, range(n), mode)
            actions = sample_actions(env, rng, n)
            result = env.step(actions)
            for e in range(n):
                refs.step(e, actions)
            check_step(env, result, refs, range(n), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["lifecycle", "simple_spread"])
def test_async_parity(name, mode):
    n, batch, seed = 4, 2, 5
    rng = np.random.default_rng(1)
    with fastvec.make(ENVS[name], n, batch_size=batch, seed=seed, autoreset_mode=mode, num_workers=2) as env:
        refs = references(name, n, mode, seed)
        env.async_reset()
        seen = 0
        for _ in range(20):
            obs, rewards, terms, truncs, infos = env.recv()
            ids = infos["env_id"].tolist()
            check_step(env, (obs, rewards, terms, truncs, infos), refs, ids, mode)
            seen += len(ids)
            ended = [e for e in ids if refs[e].needs_reset and mode == "disabled"]
            if ended:  # disabled: reset by the caller
                env.async_reset(env_id=ended)
                for e in ended:
                    refs.reset(e)
            rows = [row for row, e in enumerate(ids) if e not in ended]
            actions = sample_actions(env, rng, len(rows))
            env.send(actions, infos["env_id"][rows])
            for k, row in enumerate(rows):
                refs.step(ids[row], actions, k)
        assert seen == 20 * batch
        env.send({}, [])  # no env: nothing to check, nothing sent


def test_seeding_is_deterministic_across_workers():
    def run(seed, workers):
        rng = np.random.default_rng(3)
        out = []
        with fastvec.make([Lifecycle] * 3, seed=seed, num_workers=workers) as env:
            obs, _ = env.reset()
            out.append(obs["a"])
            for _ in range(8):
                obs, rewards, *_ = env.step(sample_actions(env, rng, 3))
                out += [obs["a"], rewards["b"]]
        return np.concatenate([np.ravel(x) for x in out])

    first = run(7, 1)
    np.testing.assert_array_equal(first, run(7, 3))
    assert not np.array_equal(first, run(8, 1))


def test_aec_env_runs_through_aec_to_parallel():
    n, seed = 2, 3
    rng = np.random.default_rng(2)
    with fastvec.make(lambda: simple_spread.env(max_cycles=4), n, seed=seed, num_workers=1) as env:
        refs = Refs(Reference(aec_to_parallel(simple_spread.env(max_cycles=4)), "next_step") for _ in range(n))
        for e in range(n):
            refs.reset(e, seed + e)
        obs, infos = env.reset()
        check_step(env, (obs, None, None, None, infos), refs, range(n), "next_step")
        for _ in range(6):
            actions = sample_actions(env, rng, n)
            result = env.step(actions)
            for e in range(n):
                refs.step(e, actions)
            check_step(env, result, refs, range(n), "next_step")


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_rllib_multiagent_env(mode):
    duo_class()  # ray imported here once; forked workers inherit it (a worker importing it takes seconds)
    with fastvec.make(make_duo, 2, autoreset_mode=mode, episode_stats=True, num_workers=1, start_method="fork") as env:
        assert env.possible_agents == ["x", "y"]
        obs, infos = env.reset(seed=0)
        assert infos["__common__"]["start"].tolist() == [1, 1]
        act = {"x": np.array([1, 2]), "y": np.array([3, 0])}
        returns = {"x": np.zeros(2), "y": np.zeros(2)}
        for t in range(1, 5):
            if t > 2:  # x has terminated: it may be left out
                act = {"y": act["y"]}
            obs, rewards, terms, truncs, infos = env.step(act)
            for a in act:
                returns[a] += rewards[a]
            np.testing.assert_array_equal(rewards["y"], 10.0 * np.array([3, 0]))
            new_episode = t == 4 and mode == "same_step"  # its observations are the new episode's
            assert infos["active"]["x"].tolist() == [t <= 2 or new_episode] * 2
            assert terms["x"].tolist() == [t == 2] * 2
            assert terms["y"].tolist() == [t == 4] * 2 and not truncs["y"].any()
            if not new_episode:
                np.testing.assert_array_equal(obs["y"][:, 0], [t, t])
        np.testing.assert_array_equal(infos["episode_agent_returns"]["x"], returns["x"])
        np.testing.assert_array_equal(infos["episode_agent_returns"]["y"], returns["y"])
        np.testing.assert_array_equal(infos["episode_return"], returns["x"] + returns["y"])
        assert infos["episode_length"].tolist() == [4, 4]
        if mode == "same_step":
            assert infos["_final_obs"].tolist() == [True, True]
            np.testing.assert_array_equal(infos["final_obs"]["y"][:, 0], [4, 4])
            np.testing.assert_array_equal(obs["y"][:, 0], [0, 0])  # the new episode's
            assert infos["final_active"]["y"].all() and not infos["final_active"]["x"].any()
            env.step({"x": np.zeros(2, int), "y": np.zeros(2, int)})
        else:
            obs, rewards, *_ = env.step({})  # every agent done: nothing needs an action
            assert not rewards["y"].any() and obs["y"][:, 0].tolist() == [0, 0]


def test_episode_stats_and_time_limit():
    with fastvec.make(Lifecycle, 2, episode_stats=True, max_episode_steps=4, seed=0, num_workers=1) as env:
        env.reset()
        rng = np.random.default_rng(4)
        totals = {a: np.zeros(2) for a in env.possible_agents}
        for t in range(1, 5):
            obs, rewards, terms, truncs, infos = env.step(sample_actions(env, rng, 2))
            for a in totals:
                totals[a] += rewards[a]
            if t < 4:
                assert "episode_return" not in infos
        # the pool's limit truncates every agent still there (a and c; b terminated at step 3)
        assert truncs["a"].all() and truncs["c"].all() and not truncs["b"].any()
        assert infos["_episode_agent_returns"].all() and infos["episode_length"].tolist() == [4, 4]
        for a in totals:
            np.testing.assert_allclose(infos["episode_agent_returns"][a], totals[a])
        np.testing.assert_allclose(infos["episode_return"], sum(totals.values()))
        assert infos["a"]["t"].tolist() == [4, 4] and infos["a"]["_t"].all()  # the agent's own info


def test_env_calls_reach_the_multiagent_env():
    with fastvec.make(Lifecycle, 2, num_workers=1) as env:
        env.reset(seed=0)
        assert env.get_attr("possible_agents") == (["a", "b", "c"],) * 2
        assert env.call("observation_space", "b") == (gym.spaces.Discrete(5),) * 2
        env.set_attr("length", [3, 9])
        assert env.get_attr("length") == (3, 9)
        env.env_call("set_outer", "marker", [1, 2])
        assert env.env_call("get", "marker", env_ids=[1]) == [2]
        assert env.env_call("get", "t") == [0, 0]


def test_make_routes_ids_and_lists():
    with fastvec.make("simple_spread_v3", 2, backend="python", N=2, max_cycles=3) as env:
        assert env.possible_agents == ["agent_0", "agent_1"]
        obs, _ = env.reset(seed=0)
        reference, _ = simple_spread.parallel_env(N=2, max_cycles=3).reset(seed=1)
        np.testing.assert_array_equal(obs["agent_1"][1], reference["agent_1"])
    with pytest.raises(ValueError, match="did you mean 'simple_spread_v3'"):
        fastvec.make("simple_sprad_v3", 2, backend="python")
    with pytest.raises(TypeError, match="single-agent"):
        fastvec.multiagent.make(lambda: gym.make("CartPole-v1"), 1)
    with pytest.raises(ValueError, match="episode_stats='gymnasium'"):
        fastvec.make(Lifecycle, 1, episode_stats="gymnasium")


@pytest.fixture(scope="module")
def pool():
    env = fastvec.make(Lifecycle, 3, num_workers=1)
    yield env
    env.close()


def steps_fine(env):
    env.reset(seed=0)
    obs, rewards, *_ = env.step(sample_actions(env, np.random.default_rng(0), 3))
    return rewards["a"].shape == (3,)


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        (lambda a: {**a, "zed": a["a"]}, KeyError, "'zed' is not one of possible_agents"),
        (lambda a: {k: v for k, v in a.items() if k != "b"}, KeyError, "agent 'b' is alive in env.s. \\[0, 1, 2\\]"),
        (lambda a: {**a, "a": a["a"][:2]}, ValueError, r"actions\['a'\] must have shape \(3,\)"),
        (lambda a: {**a, "a": a["a"].astype(np.float32)}, TypeError, r"actions\['a'\] .* must be integers"),
        (lambda a: {**a, "a": np.array([0, 3, 1])}, ValueError, r"actions\['a'\] = 3 for env 1 is out of range"),
        (lambda a: {**a, "b": np.full((3, 2), np.nan, np.float32)}, ValueError, r"actions\['b'\] must be finite"),
        (lambda a: [a["a"]], TypeError, "must be a dict agent -> array"),
    ],
)
def test_bad_actions_are_refused_and_the_pool_stays_usable(pool, change, error, words):
    pool.reset(seed=0)
    good = sample_actions(pool, np.random.default_rng(0), 3)
    with pytest.raises(error, match=words):
        pool.step(change(good))
    pool.step(good)
    assert steps_fine(pool)


def test_rows_of_dead_agents_are_ignored(pool):
    pool.reset(seed=0)
    actions = sample_actions(pool, np.random.default_rng(0), 3)
    actions["c"][:] = 99  # c is not born yet: its rows are ignored, out of range or not
    obs, rewards, *_ = pool.step(actions)
    assert not rewards["c"].any()


@pytest.mark.parametrize(
    ("how", "words"),
    [
        ("stranger", "agent 'zed' .* is not one of possible_agents"),
        ("spaces", "agent 'a''s observation space changed"),
        ("hidden", "agent 'a' is in env.agents but had no observation"),
    ],
)
def test_env_breaking_the_api_names_env_and_agent(how, words):
    with fastvec.make([Lifecycle, functools.partial(Misbehaving, how)], num_workers=1) as env:
        rng = np.random.default_rng(0)
        env.reset(seed=0)
        with pytest.raises(ValueError, match=words) as info:
            for _ in range(10):
                env.step(sample_actions(env, rng, 2))
                if how == "spaces":
                    env.reset()
        assert info.value.env_id == 1 and "Misbehaving" in str(info.value)
        assert any("env 1" in note for note in info.value.__notes__)
        env.reset(options={"env_id": [0]})  # env 0 is unharmed


def test_disabled_mode_refuses_an_ended_env_until_reset():
    with fastvec.make(Lifecycle, 2, autoreset_mode="disabled", max_episode_steps=2, num_workers=1) as env:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        for _ in range(2):
            *_, infos = env.step(sample_actions(env, rng, 2))
        with pytest.raises(RuntimeError, match="finished its episode"):
            env.step(sample_actions(env, rng, 2))
        obs, infos = env.reset(options={"env_id": [1]})
        assert infos["active"]["a"].tolist() == [True]


def test_close():
    env = fastvec.make(Lifecycle, 2, num_workers=1)
    env.reset(seed=0)
    env.close()
    env.close()
    assert env.closed
    with pytest.raises(ClosedError):
        env.step(sample_actions(env, np.random.default_rng(0), 2))
    with pytest.raises(ClosedError):
        env.reset()


def test_partial_reset_in_any_order_keeps_track_of_who_is_alive():
    with fastvec.make(Lifecycle, 3, seed=0, num_workers=1) as env:
        env.reset()
        rng = np.random.default_rng(0)
        for _ in range(3):  # c born (step 2), b terminated (step 3) everywhere
            env.step(sample_actions(env, rng, 3))
        obs, infos = env.reset(options={"env_id": [2, 0]})
        assert infos["active"]["b"].tolist() == [True, True] and not infos["active"]["c"].any()
        actions = sample_actions(env, rng, 3)
        with pytest.raises(KeyError, match=r"agent 'c' is alive in env\(s\) \[1\]"):
            env.step({a: v for a, v in actions.items() if a != "c"})
        with pytest.raises(KeyError, match=r"agent 'b' is alive in env\(s\) \[0, 2\]"):
            env.step({a: v for a, v in actions.items() if a != "b"})
        obs, rewards, *_ = env.step(actions)
        assert (rewards["b"] != 0).tolist() == [True, False, True] and (rewards["c"] != 0).tolist()[1]


def test_dict_and_tuple_observations_of_an_agent():
    with fastvec.make(Nested, 2, autoreset_mode="same_step", num_workers=1) as env:
        obs, _ = env.reset(seed=0)
        assert obs["p"]["pos"].shape == (2, 2) and obs["q"][1].dtype == np.float64
        env.step({"p": np.array([0, 1]), "q": np.array([1, 1])})
        obs, rewards, terms, _, infos = env.step({"p": np.array([1, 1]), "q": np.array([0, 1])})
        assert terms["p"].all() and rewards["q"].tolist() == [0.0, 1.0]
        np.testing.assert_array_equal(infos["final_obs"]["p"]["pos"], [[2, -2], [2, -2]])
        np.testing.assert_array_equal(infos["final_obs"]["q"][0], [2, 2])
        np.testing.assert_array_equal(obs["p"]["pos"], np.zeros((2, 2)))  # the new episode's


def test_constructors_returning_one_instance_are_refused():
    shared = Lifecycle()
    with pytest.raises(ValueError, match="same instance"):
        fastvec.make(lambda: shared, 2, num_workers=1)


def test_env_state_through_call():
    with fastvec.make(functools.partial(simple_spread.parallel_env, N=2), 2, seed=0, num_workers=1) as env:
        env.reset()
        states = env.call("state")
        direct = simple_spread.parallel_env(N=2)
        direct.reset(seed=1)
        np.testing.assert_array_equal(states[1], direct.state())


def test_pettingzoo_users_never_import_ray():
    script = textwrap.dedent(
        """
        import sys
        import fastvec
        from ma_envs import Lifecycle
        if __name__ == "__main__":
            with fastvec.make(Lifecycle, 2, num_workers=1) as env:
                env.reset(seed=0)
                env.step({"a": [0, 1], "b": [[0, 0], [0, 0]]})
            assert not any(m == "ray" or m.startswith("ray.") for m in sys.modules), "ray was imported"
        """
    )
    # ma_envs from this folder; fastvec as the tests import it (installed, or PYTHONPATH's), never the source tree
    # by accident (a checkout without the compiled module: CI installs fastvec).
    path = os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    assert done.returncode == 0, done.stderr


class NoReturns(PyPoolRows):
    """A translator for a backend that keeps no per-agent returns (as a native one may): the façade sums them."""

    def split(self, obs, info):
        return dataclasses.replace(super().split(obs, info), returns=None)

    def split_final(self, final_obs, final_info, ended):
        return dataclasses.replace(super().split_final(final_obs, final_info, ended), returns=None)


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
@pytest.mark.parametrize("rows", [PyPoolRows, NoReturns])
def test_episode_agent_returns(rows, mode):
    made = fastvec.make(Lifecycle, 2, episode_stats=True, autoreset_mode=mode, seed=0, num_workers=1)
    backend = made.backend
    env = fastvec.MultiAgentVectorEnv(
        backend,
        rows(made.possible_agents, backend.single_observation_space, backend.single_action_space),
        episode_stats=True,
    )
    with env:
        env.reset()
        rng = np.random.default_rng(5)
        for _episode in range(2):
            totals = {a: np.zeros(2) for a in env.possible_agents}
            for t in range(1, 7):
                obs, rewards, terms, truncs, infos = env.step(sample_actions(env, rng, 2))
                for a in totals:
                    totals[a] += rewards[a]
                assert ("episode_agent_returns" in infos) == (t == 6)
            assert infos["_episode_agent_returns"].all()
            for a in totals:
                np.testing.assert_allclose(infos["episode_agent_returns"][a], totals[a])
            if mode == "next_step":
                env.step({})  # the autoreset step: no agent is alive


def test_envs_listing_their_agents_in_different_orders():
    rng = np.random.default_rng(6)
    with fastvec.make([Lifecycle, Reversed], seed=0, num_workers=1) as env:
        assert env.possible_agents == ["a", "b", "c"]  # env 0's order
        refs = Refs([Reference(Lifecycle(), "next_step"), Reference(Reversed(), "next_step")])
        refs.reset(0, 0)
        refs.reset(1, 1)
        env.reset()
        for _ in range(7):
            actions = sample_actions(env, rng, 2)
            result = env.step(actions)
            for e in range(2):
                refs.step(e, actions)
            check_step(env, result, refs, range(2), "next_step")


@pytest.mark.parametrize("env_id", MPE2_IDS)
def test_every_mpe2_id_as_one_env(env_id):
    """Each id's constructor, wrapped as the workers wrap it (here, in this process): its observations fit the one
    env's space, its reward is the sum over the agents, and truncation at max_cycles ends the episode."""
    env = Maker(python_constructor(env_id, {"max_cycles": 3}))()
    assert isinstance(env, AsOneEnv)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    env.action_space.seed(0)
    for t in range(1, 4):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and obs["active"].all()
        assert reward == pytest.approx(obs["rewards"].sum()) and truncated == (t == 3) and not terminated
    assert obs["truncations"].all()


@pytest.mark.filterwarnings("ignore:The old environment creation API:DeprecationWarning")
def test_turn_based_aec_env_is_refused_clearly():
    from pettingzoo.classic import tictactoe_v3

    with pytest.raises(ValueError, match="raw_env is an AEC env whose metadata does not say is_parallelizable"):
        fastvec.make(tictactoe_v3.env, 1, num_workers=1)


def test_after_an_env_raised_the_others_agents_are_known():
    """A sync step where one env raised drops the batch: env 0 stepped (c was born) and must now get c's action."""
    rng = np.random.default_rng(0)
    with fastvec.make([Lifecycle, functools.partial(Misbehaving, "stranger", at=2)], num_workers=1) as env:
        env.reset(seed=0)
        env.step(sample_actions(env, rng, 2))
        with pytest.raises(ValueError, match="zed"):
            env.step(sample_actions(env, rng, 2))
        env.reset(options={"env_id": [1]})
        actions = sample_actions(env, rng, 2)
        with pytest.raises(KeyError, match=r"agent 'c' is alive in env\(s\) \[0\]"):
            env.step({a: v for a, v in actions.items() if a != "c"})
        obs, rewards, *_ = env.step(actions)
        assert rewards["c"][0] != 0 and obs["a"][0][0] == 3  # env 0's third step


def test_dict_action_space_is_refused():
    with pytest.raises(TypeError, match=r"agent 'q' has action space Dict\('move'"):
        fastvec.make(DictActions, 1, num_workers=1)


def test_sync_pool_send_of_some_envs_then_recv_rest():
    """A sync pool takes a send of some envs (EnvPool's step of some envs) and recv_rest returns their rows in env
    order, without env_id: the façade must know which envs they are (it took them for every env's: a shape error,
    found by the multi-agent fuzzer), to know who is alive where."""
    rng = np.random.default_rng(0)
    with fastvec.make(Lifecycle, 3, seed=0, num_workers=1) as env:
        env.reset()
        for _ in range(2):  # envs 2 and 0 reach step 2, where c is born; env 1 stays at its reset
            actions = sample_actions(env, rng, 2)
            env.send(actions, [2, 0])
            obs, rewards, *_, infos = env.recv_rest()
            assert "env_id" not in infos and obs["a"][:, 0].tolist() == [obs["a"][0, 0]] * 2
        assert infos["active"]["c"].tolist() == [True, True]
        actions = sample_actions(env, rng, 3)
        with pytest.raises(KeyError, match=r"agent 'c' is alive in env\(s\) \[0, 2\]"):
            env.step({a: v for a, v in actions.items() if a != "c"})
        obs, rewards, *_ = env.step(actions)
        assert obs["a"][:, 0].tolist() == [3, 1, 3]
    with fastvec.make("simple_spread_v3", 3, N=2, seed=0) as native:
        native.reset()
        native.send({a: np.zeros(1, np.int64) for a in native.possible_agents}, [1])
        obs, rewards, *_ = native.recv_rest()
        assert obs["agent_0"].shape == (1, 12) and rewards["agent_1"].shape == (1,)
        native.step({a: np.zeros(3, np.int64) for a in native.possible_agents})


def test_after_an_env_raised_an_env_the_time_limit_ended_has_no_agents():
    """A sync step where env 1 raised drops the batch; env 0 stepped to the pool's time limit there, so its next step
    is its autoreset and no agent needs an action in it. The envs' own answer (their acting agents) does not know
    the pool's limit: the façade asked for c's action in env 0 (found by the multi-agent fuzzer)."""
    rng = np.random.default_rng(0)
    with fastvec.make(Raising, 2, max_episode_steps=3, seed=0, num_workers=1) as env:
        env.reset()
        for _ in range(2):  # c born at step 2
            env.step(sample_actions(env, rng, 2))
        actions = sample_actions(env, rng, 2)
        actions["c"][1] = Raising.THROW
        with pytest.raises(AgentStepError, match="agent 'c'") as info:
            env.step(actions)
        assert info.value.env_id == 1
        env.reset(options={"env_id": [1]})
        actions = sample_actions(env, rng, 2)
        obs, rewards, *_, infos = env.step({a: actions[a] for a in ("a", "b")})  # c is alive nowhere
        assert infos["active"]["a"].all() and not rewards["a"][0]  # env 0's autoreset row
        assert obs["a"][:, 0].tolist() == [0, 1]
