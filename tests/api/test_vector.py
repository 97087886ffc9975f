"""The facade over both backends: the same mistake gets the same exception and the same words from the native
pool and from the Python-env pool (their checks live with their state, so this is what keeps them one)."""

from __future__ import annotations

import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError

import fastvec

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)

BACKENDS = ("native", "python")


def pools(**kw):
    return {b: fastvec.make("CartPole-v1", 4, backend=b, seed=0, **kw) for b in BACKENDS}


def same_error(calls: dict, error: type, match: str) -> None:
    """Each backend's call raises ``error`` with the same message, which matches ``match``."""
    messages = {}
    for backend, call in calls.items():
        with pytest.raises(error, match=match) as info:
            call()
        messages[backend] = str(info.value)
    assert messages["native"] == messages["python"], messages


@pytest.fixture
def sync_pools():
    envs = pools()
    yield envs
    for env in envs.values():
        env.close()


@pytest.fixture
def async_pools():
    envs = pools(batch_size=2)
    yield envs
    for env in envs.values():
        env.close()


def test_a_step_before_the_first_reset_is_gymnasiums_reset_needed(sync_pools, async_pools):
    # The Python-env pool passes the step to the env, whose OrderEnforcing raises (gymnasium's vector envs do the
    # same); the native pool refuses it with fastvec's ResetNeeded, gymnasium's error and a RuntimeError as before.
    with pytest.raises(gym.error.ResetNeeded, match=re.escape("Cannot call env.step() before calling env.reset()")):
        sync_pools["python"].step(np.zeros(4, np.int64))
    native = sync_pools["native"]
    for call in (lambda: native.step(np.zeros(4, np.int64)), lambda: async_pools["native"].send([0, 0], [2, 3])):
        with pytest.raises(gym.error.ResetNeeded) as raised:
            call()
        assert isinstance(raised.value, RuntimeError)
    assert str(raised.value) == (
        "env 2 has not been reset: cannot call env.step() before calling env.reset(); call reset() or async_reset() "
        "first"
    )
    native.reset()  # still usable; what a reset reached may be stepped
    assert native.step(np.zeros(4, np.int64))[0].shape == (4, 4)
    env = async_pools["native"]
    env.async_reset(env_id=[0, 1])
    env.recv()
    with pytest.raises(gym.error.ResetNeeded, match="env 3 has not been reset"):
        env.send([0, 0], [0, 3])
    env.send([0, 0], [0, 1])
    with pytest.raises(RuntimeError, match="env 0 is not awaiting an action") as raised:  # not a ResetNeeded
        env.send([0], [0])
    assert not isinstance(raised.value, gym.error.ResetNeeded)
    assert env.recv()[4]["env_id"].tolist() in ([0, 1], [1, 0])


def test_the_same_state_mistakes_get_the_same_words(sync_pools, async_pools):
    s, a = sync_pools, async_pools
    same_error(
        {b: e.recv for b, e in a.items()},
        RuntimeError,
        re.escape(
            "recv() would wait forever: 0 env(s) are in flight but batch_size is 2; send actions (or async_reset) first"
        ),
    )
    same_error({b: e.recv_rest for b, e in a.items()}, RuntimeError, "recv_rest\\(\\) takes the envs in flight when")
    for env in a.values():
        env.async_reset()
        env.recv()
        env.recv()
        env.send(np.zeros(2, np.int64), [0, 1])
    same_error(
        {b: lambda e=e: e.send(np.zeros(1, np.int64), [1]) for b, e in a.items()},
        RuntimeError,
        re.escape("env 1 is not awaiting an action (it was sent one and its result has not been received)"),
    )
    same_error(
        {b: lambda e=e: e.async_reset(env_id=[0]) for b, e in a.items()},
        RuntimeError,
        re.escape("env 0 is in flight; receive its result before resetting it"),
    )
    same_error(
        {b: lambda e=e: e.step(np.zeros(4, np.int64)) for b, e in a.items()}, ValueError, "needs batch_size == num_envs"
    )
    for env in s.values():
        env.close()
    same_error(
        {b: lambda e=e: e.step(np.zeros(4, np.int64)) for b, e in s.items()},
        ClosedEnvironmentError,
        "^the pool is closed$",
    )


def test_the_same_argument_mistakes_get_the_same_words(sync_pools, async_pools):
    for env in [*sync_pools.values(), *async_pools.values()]:
        if env.batch_size == env.num_envs:
            env.reset()
        else:
            env.async_reset()
            env.recv()
            env.recv()
    s, a = sync_pools, async_pools
    for actions, error, match in [
        (np.zeros(3, np.int64), ValueError, r"actions must have shape \(4,\), got \(3,\)"),
        (np.zeros(4, np.float32), TypeError, r"actions for Discrete\(2\) must be integers, got dtype float32"),
    ]:
        same_error({b: lambda e=e, x=actions: e.step(x) for b, e in s.items()}, error, match)
    for env_id, match in [
        ([7], r"env_id 7 is out of range \[0, 4\)"),
        ([1, 1], "env_id 1 is listed twice"),
        ([2**32 + 3], r"env_id 4294967299 is out of range \[0, 4\)"),
    ]:
        same_error(
            {b: lambda e=e, i=env_id: e.send(np.zeros(len(i), np.int64), i) for b, e in a.items()}, ValueError, match
        )
    same_error({b: lambda e=e: e.reset(options="abc") for b, e in s.items()}, TypeError, "options must be a dict")
    # (other reset options go to a Python env's reset; native envs refuse them: tests/pyenv/test_pyenv.py)


def test_box_actions_get_the_same_words():
    envs = {b: fastvec.make("Pendulum-v1", 2, backend=b, seed=0) for b in BACKENDS}
    for env in envs.values():
        env.reset()
    for actions, error, match in [
        (np.zeros((2, 2)), ValueError, r"actions must have shape \(2, 1\), got \(2, 2\)"),
        (np.array([["a"], ["b"]]), TypeError, "actions for a Box space must be real numbers"),
    ]:
        same_error({b: lambda e=e, x=actions: e.step(x) for b, e in envs.items()}, error, match)
    for env in envs.values():
        env.close()


def test_native_envs_refuse_actions_outside_their_space():
    """A native env has no check of its own: the pool refuses, naming the action, out-of-range Discrete actions
    and NaN, infinite or float32-overflowing Box actions, and stays usable."""
    env = fastvec.make("CartPole-v1", 4, seed=0)
    env.reset()
    for actions, match in [
        (np.array([0, 1, 2, 0]), r"actions\[2\] = 2 is out of range for Discrete\(2\)"),
        (np.array([0, 2**64 - 1, 0, 0], np.uint64), r"actions\[1\] = 18446744073709551615 is out"),
    ]:
        with pytest.raises(ValueError, match=match):
            env.step(actions)
    assert env.step(np.zeros(4, np.int64))[0].shape == (4, 4)
    env.close()
    env = fastvec.make("Pendulum-v1", 2, seed=0)
    env.reset()
    for actions, match in [
        (np.array([[0.0], [np.nan]]), "actions must be finite as float32, got nan for env row 1"),
        (np.array([[0.0], [-1e300]]), r"actions must be finite as float32, got -1e\+300 for env row 1"),
    ]:
        with pytest.raises(ValueError, match=match):
            env.step(actions)
    assert env.step(np.zeros((2, 1), np.float32))[0].shape == (2, 3)
    env.close()


def test_python_envs_get_their_actions_as_gymnasiums_vector_envs_pass_them():
    """The Python-env pool passes what gymnasium's AsyncVectorEnv passes, and the env decides: gymnasium's
    CartPole raises its own AssertionError for an out-of-range action (the env then needs a reset, the pool stays
    usable), Pendulum steps a NaN torque into NaN observations, as under AsyncVectorEnv; only what its shared memory
    cannot hold (a value the space's dtype cannot represent) is refused before anything is sent."""
    reference = gym.vector.AsyncVectorEnv([lambda: gym.make("CartPole-v1", disable_env_checker=True)] * 2)
    reference.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # AsyncVectorEnv logs its worker's error as a warning
        with pytest.raises(AssertionError) as theirs:
            reference.step(np.array([0, 5]))
    reference.close()
    env = fastvec.make(lambda: gym.make("CartPole-v1", disable_env_checker=True), 2, seed=0, start_method="fork")
    env.reset()
    with pytest.raises(AssertionError) as ours:
        env.step(np.array([0, 5]))
    assert str(ours.value) == str(theirs.value) and ours.value.env_id == 1
    env.reset()  # (env 1 raised: it needs a reset)
    with pytest.raises(ValueError, match="cannot be held as int64"):
        env.step(np.array([0, 2**64 - 1], np.uint64))
    assert env.step(np.array([0, 1]))[0].shape == (2, 4)
    env.close()

    def pendulum():
        return gym.make("Pendulum-v1", disable_env_checker=True)

    actions = np.array([[0.5], [np.nan]], np.float32)
    reference = gym.vector.AsyncVectorEnv([pendulum] * 2)
    reference.reset(seed=3)
    want = reference.step(actions)
    reference.close()
    env = fastvec.make(pendulum, 2, seed=3, start_method="fork")
    env.reset()
    got = env.step(actions)
    for a, b in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(a, b)  # (NaN where NaN)
    assert np.isnan(got[0][1]).all() and np.isnan(got[1][1])
    with pytest.raises(ValueError, match=r"representable as float32, .* got -1e\+300 for env row 1"):
        env.step(np.array([[0.0], [-1e300]]))
    env.close()


# -- the result type across the boundary ----------------------------------------

FIELDS = "obs reward terminated truncated env_id ended episode_return episode_length final_obs info final_info".split()


@pytest.mark.parametrize("backend", BACKENDS)
def test_both_backends_return_one_named_result_type(backend):
    import gc
    import sys

    from fastvec import _core

    env = fastvec.make("CartPole-v1", 4, backend=backend, seed=0)
    try:
        env.reset()
        r = env._pool.step(np.zeros(4, np.int64))
        assert type(r) is _core.Result
        assert r.obs.shape == (4, 4) and r.env_id.tolist() == [0, 1, 2, 3] and r.ended is None
        assert not r.info  # CartPole has no info values of its own
        with pytest.raises(AttributeError):
            r.obs = None
        obs = r.obs
        refs = sys.getrefcount(obs)
        del r
        gc.collect()
        assert sys.getrefcount(obs) == refs - 1  # the result held one reference to each field, now released
    finally:
        env.close()


def test_result_is_made_from_its_fields_in_order():
    from fastvec import _core

    r = _core.Result(range(len(FIELDS)))
    assert [getattr(r, name) for name in FIELDS] == list(range(len(FIELDS)))
    assert repr(r).startswith("Result(obs=0, reward=1,") and repr(r).endswith("final_info=10)")
    with pytest.raises(ValueError, match="Result\\(fields\\) takes 11 fields"):
        _core.Result((1, 2))
    with pytest.raises(TypeError, match="fields must be a sequence"):
        _core.Result(3)


def test_result_is_made_by_field_names_from_the_one_table():
    from fastvec import _core

    assert list(_core.Result._fields) == FIELDS
    r = _core.Result(**{name: i for i, name in enumerate(FIELDS)})
    assert [getattr(r, name) for name in FIELDS] == list(range(len(FIELDS)))
    with pytest.raises(TypeError, match="missing field 'reward'"):
        _core.Result(obs=1)
    with pytest.raises(TypeError, match="unexpected field 'bogus'"):
        _core.Result(**{name: 0 for name in FIELDS}, bogus=1)


def test_a_bad_timeout_gets_the_same_words_and_the_pool_goes_on(async_pools):
    for env in async_pools.values():
        env.async_reset()
    for timeout, error, match in [
        ("1", TypeError, r"timeout must be None or a number of seconds, got str '1'"),
        (-1.0, ValueError, r"timeout must be None or a finite number of seconds >= 0, got -1.0"),
    ]:
        same_error({b: lambda e=e, t=timeout: e.recv(timeout=t) for b, e in async_pools.items()}, error, match)
    for env in async_pools.values():
        assert len(env.recv(timeout=10)[1]) == 2


@pytest.mark.parametrize("backend", ["native", "python"])
def test_gymnasium_episode_statistics(backend):
    """episode_stats="gymnasium": info["episode"] (r, l, t) and info["_episode"] at the steps, and with the values,
    gymnasium's RecordEpisodeStatistics gives over gymnasium's own envs from the same seeds; none of fastvec's
    episode_return keys; a bad value is a TypeError naming episode_stats."""
    env = fastvec.make("CartPole-v1", num_envs=4, seed=0, episode_stats="gymnasium", backend=backend)
    ref = gym.wrappers.vector.RecordEpisodeStatistics(gym.make_vec("CartPole-v1", 4, vectorization_mode="sync"))
    env.reset()
    ref.reset(seed=0)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(300):
        a = rng.integers(0, 2, 4)
        *_, info = env.step(a)
        *_, want = ref.step(a)
        assert ("episode" in info) == ("episode" in want)
        assert "episode_return" not in info
        if "episode" in info:
            np.testing.assert_array_equal(info["_episode"], want["_episode"])
            np.testing.assert_array_equal(info["episode"]["r"], want["episode"]["r"])
            np.testing.assert_array_equal(info["episode"]["l"], want["episode"]["l"])
            t = info["episode"]["t"]
            assert (t[info["_episode"]] > 0).all() and (t[~info["_episode"]] == 0).all()
            ended += int(info["_episode"].sum())
    assert ended > 20
    assert env.episode_stats == "gymnasium"
    env.close()
    ref.close()
    with pytest.raises(TypeError, match="episode_stats must be a bool or 'gymnasium'"):
        fastvec.make("CartPole-v1", num_envs=2, episode_stats="monitor")
