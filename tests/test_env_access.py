"""Per-env access: ``call``/``get_attr``/``set_attr`` of fastvec.VectorEnv against gymnasium's vector envs,
what native envs answer, and the failure paths: an env's exception, results and arguments that cannot be
pickled, calls while envs are in flight, an interrupted call."""

from __future__ import annotations

import pickle
import signal
import threading
import time
from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest
from conftest import run_python

import fastvec
from fastvec import EnvError


class GoalError(Exception):
    """An exception type of the user's own, to be re-raised as itself."""


class BadInitError(Exception):
    """An exception that pickles but cannot be rebuilt from its args (its __init__ takes two)."""

    def __init__(self, a: int, b: int) -> None:
        super().__init__(f"{a} and {b}")


class GoalEnv(gym.Env):
    """A goal env like the ones HER samples from: ``compute_reward(achieved, desired, info)``, a plain
    attribute, methods that raise, and results that cannot be pickled."""

    metadata: ClassVar[dict] = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None, scale: float = 1.0) -> None:
        self.observation_space = gym.spaces.Box(-10, 10, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.render_mode = render_mode
        self.scale = scale
        self.difficulty = 1
        self.goal = [0.0]
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(3, self.t, np.float32), float(self.difficulty), False, False, {}

    def compute_reward(self, achieved, desired, info):
        return -self.scale * np.linalg.norm(np.asarray(achieved) - np.asarray(desired), axis=-1)

    def render(self):
        return np.full((4, 4, 3), self.t, np.uint8)

    def push_goal(self, value):
        self.goal.append(value)
        return list(self.goal)

    def fail(self, kind="goal"):
        if kind == "goal":
            raise GoalError(f"no goal at t={self.t}")
        if kind == "bad_init":
            raise BadInitError(1, 2)
        raise KeyError(kind)

    def lock(self):
        import threading

        return threading.Lock()

    def wait(self, seconds):
        time.sleep(seconds)  # an env that takes its time to answer (for the interrupted-call test)
        return seconds


def goal_env(**kw):
    return gym.wrappers.TimeLimit(GoalEnv(**kw), 50)


def pool(n=4, workers=2, **kw):
    """n GoalEnvs (under TimeLimit) in the Python-env pool, env i with scale i + 1."""
    fns = [lambda i=i: goal_env(scale=i + 1.0) for i in range(n)]
    return fastvec.make(fns, num_workers=workers, start_method="fork", **kw)


def sync_reference(n=4):
    return gym.vector.SyncVectorEnv([lambda i=i: goal_env(scale=i + 1.0) for i in range(n)])


# -- gymnasium: call, get_attr, set_attr ---------------------------------------------------------------------


def test_call_get_attr_and_set_attr_answer_as_sync_vector_env():
    """Each result as gymnasium's SyncVectorEnv gives it for the same envs (its AsyncVectorEnv has the same
    contract: tuples in env order, a non-callable attribute returned as it is, get_attr == call)."""
    ours, ref = pool(), sync_reference()
    achieved, desired = np.ones((5, 3)), np.zeros((5, 3))
    for env in (ours, ref):
        env.reset(seed=0)
    for args in [("compute_reward", achieved, desired, {}), ("scale",), ("difficulty",), ("render_mode",)]:
        got, want = ours.call(*args), ref.call(*args)
        assert isinstance(got, tuple) and len(got) == 4
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
    assert ours.call("compute_reward", achieved, desired=desired, info={})[3].tolist() == [-4.0 * np.sqrt(3)] * 5
    assert ours.get_attr("scale") == ref.get_attr("scale") == (1.0, 2.0, 3.0, 4.0)
    with pytest.raises(TypeError, match="push_goal"):
        ref.get_attr("push_goal")  # gymnasium's get_attr is call(name): it calls a method, here without its argument
    with pytest.raises(TypeError, match="push_goal"):
        ours.get_attr("push_goal")
    for env in (ours, ref):
        env.set_attr("difficulty", [1, 2, 3, 4])
        assert env.get_attr("difficulty") == (1, 2, 3, 4)
        env.set_attr("difficulty", (5, 6, 7, 8))
        assert env.get_attr("difficulty") == (5, 6, 7, 8)
        env.set_attr("difficulty", 9)  # one value for every env
        assert env.get_attr("difficulty") == (9, 9, 9, 9)
        env.set_attr("brand_new", "x")  # set_wrapper_attr creates what no layer has, on the outermost wrapper
        assert env.get_attr("brand_new") == ("x",) * 4
    # set_wrapper_attr reached the env itself under its TimeLimit: its step sees the new difficulty
    _, reward, *_ = ours.step(np.zeros(4, np.int64))
    assert reward.tolist() == [9.0] * 4
    for env in (ours, ref):
        with pytest.raises(ValueError) as info:
            env.set_attr("difficulty", [1, 2])
        assert str(info.value) == (
            "Values must be a list or tuple with length equal to the number of environments. "
            "Got `2` values for 4 environments."
        )
    ours.close()
    ref.close()


def test_ported_gymnasium_call_and_set_attr_tests():
    """gymnasium's tests/vector/test_async_vector_env.py: test_call_async_vector_env (render without pygame: an
    env that renders arrays) and test_set_attr_async_vector_env, on CartPole-v1 made as they make it."""

    def make_env(env_name, seed, **kwargs):
        def _make():
            env = gym.make(env_name, disable_env_checker=True, **kwargs)
            env.action_space.seed(seed)
            env.reset(seed=seed)
            return env

        return _make

    env = fastvec.make([make_env("CartPole-v1", i) for i in range(4)], start_method="fork", num_workers=2)
    env.reset()
    gravity = env.call("gravity")
    assert isinstance(gravity, tuple) and len(gravity) == 4
    assert all(isinstance(g, float) and g == 9.8 for g in gravity)
    env.set_attr("gravity", [9.81, 3.72, 8.87, 1.62])
    assert env.get_attr("gravity") == (9.81, 3.72, 8.87, 1.62)
    env.close()

    env = fastvec.make([lambda: goal_env(render_mode="rgb_array")] * 3, start_method="fork", num_workers=2)
    assert env.render_mode == "rgb_array"  # the envs', as AsyncVectorEnv takes it from its first env
    env.reset()
    images = env.call("render")
    assert isinstance(images, tuple) and len(images) == 3
    assert all(isinstance(i, np.ndarray) and i.shape == (4, 4, 3) for i in images)
    env.step(np.ones(3, np.int64))
    frames = env.render()  # test_render_async_vector: render() is call("render")
    assert isinstance(frames, tuple) and [f[0, 0, 0] for f in frames] == [1, 1, 1]
    env.close()
    env = fastvec.make([make_env("CartPole-v1", i) for i in range(2)], start_method="fork")
    assert env.render_mode is None and env.metadata["render_fps"] == 50
    assert env.render() is None
    env.close()
    native = fastvec.make("CartPole-v1", 2)
    assert native.render_mode is None and native.render() is None
    native.close()


def test_calls_into_the_pools_own_methods_are_refused():
    """As AsyncVectorEnv refuses them: the pool resets, steps and closes the envs (and counts their steps)."""
    env = pool()
    for name in ("reset", "step", "close"):
        with pytest.raises(ValueError, match=f"Trying to call function `{name}` with `call`"):
            env.call(name)
    env.reset()
    env.step(np.zeros(4, np.int64))
    env.close()


def test_env_call_targets_envs_in_order_and_checks_its_arguments():
    env = pool()
    assert env.env_call("get", "scale", env_ids=[3, 0, 3]) == [4.0, 1.0, 4.0]
    assert env.env_call("get", "scale", env_ids=2) == [3.0]
    assert env.env_call("get", "scale", env_ids=[]) == []
    assert env.env_call("method", "push_goal", (5,), env_ids=[1]) == [[0.0, 5]]
    assert env.env_call("is_wrapped", "TimeLimit", (gym.wrappers.TimeLimit,)) == [True] * 4
    assert env.env_call("is_wrapped", "ClipReward", (gym.wrappers.ClipReward,)) == [False] * 4
    with pytest.raises(ValueError, match="kind must be one of"):
        env.env_call("delete", "scale")
    with pytest.raises(TypeError, match="attribute name must be a str"):
        env.env_call("get", 3)
    with pytest.raises(ValueError, match="out of range"):
        env.env_call("get", "scale", env_ids=[4])
    with pytest.raises(ValueError, match="one value per env"):
        env.env_call("set", "scale", (1.0,), env_ids=[0, 1])
    with pytest.raises(TypeError, match="wrapper class"):
        env.env_call("is_wrapped", "x", ("TimeLimit",))
    with pytest.raises(TypeError, match="no keyword arguments"):
        env.env_call("get", "scale", (), {"x": 1})
    assert env.get_attr("scale") == (1.0, 2.0, 3.0, 4.0)  # nothing above reached the envs
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.get_attr("scale")


def test_each_env_gets_its_own_copy_of_values_and_arguments():
    """As from a process per env: envs that share a worker never share a value set or passed to them."""
    env = pool(workers=1)
    shared = [1.0]
    env.set_attr("goal", [shared] * 4)  # one list object, for every env
    assert env.env_call("method", "push_goal", (2.0,), env_ids=[0]) == [[1.0, 2.0]]
    assert env.get_attr("goal") == ([1.0, 2.0], [1.0], [1.0], [1.0])
    marker = [7]
    assert env.call("push_goal", marker) == ([1.0, 2.0, [7]], [1.0, [7]], [1.0, [7]], [1.0, [7]])
    results = env.get_attr("goal")
    results[1].append("changed here")
    assert env.get_attr("goal")[1] == [1.0, [7]]
    env.close()


def test_large_arguments_and_results_pass_through_full_pipes():
    """More than a pipe holds each way (a pipe buffer is 64 KiB)."""
    env = pool(workers=2)
    big = np.arange(3 * 200_000, dtype=np.float64).reshape(-1, 3)
    rewards = env.call("compute_reward", big, np.zeros_like(big), {})
    want = -np.linalg.norm(big, axis=-1)
    for i, r in enumerate(rewards):
        np.testing.assert_allclose(r, (i + 1) * want)
    env.set_attr("goal", [big + i for i in range(4)])
    for i, g in enumerate(env.get_attr("goal")):
        np.testing.assert_array_equal(g, big + i)
    env.close()


# -- failure paths -----------------------------------------------------------------------------------------


def test_an_exception_in_the_env_comes_back_with_its_type_and_the_env_named():
    env = pool()
    env.reset(seed=0)
    with pytest.raises(GoalError, match=r"no goal at t=0") as info:
        env.call("fail")
    notes = "\n".join(info.value.__notes__)
    assert "raised by env 0 in call 'fail'" in notes  # the first env, in env order
    assert "in fail" in notes and "GoalError: no goal at t=0" in notes  # the worker's traceback, from the env's frame
    assert "_call_env" not in notes
    with pytest.raises(KeyError, match="'lost'") as info:
        env.env_call("method", "fail", ("lost",), env_ids=[2, 1])
    assert "raised by env 2 in method 'fail'" in info.value.__notes__[0]
    with pytest.raises(EnvError, match=r"env 3 raised test_env_access.BadInitError: 1 and 2"):
        env.env_call("method", "fail", ("bad_init",), env_ids=[3])
    with pytest.raises(AttributeError, match="no attribute 'nothing'") as info:
        env.get_attr("nothing")  # gymnasium's own message, from get_wrapper_attr
    assert "raised by env 0" in info.value.__notes__[0]
    # every env answered; the pool goes on
    obs, reward, *_ = env.step(np.zeros(4, np.int64))
    assert obs[:, 0].tolist() == [1.0] * 4
    assert env.get_attr("scale") == (1.0, 2.0, 3.0, 4.0)
    env.close()


def test_results_and_arguments_that_cannot_be_pickled():
    env = pool()
    with pytest.raises(pickle.PicklingError, match=r"env 0: the result of call 'lock' \(a _thread.lock\) cannot"):
        env.call("lock")
    with pytest.raises(TypeError, match=r"the arguments for 'push_goal' cannot be pickled"):
        env.call("push_goal", threading.Lock())
    with pytest.raises(TypeError, match=r"the value for 'goal' cannot be pickled"):
        env.set_attr("goal", threading.Lock())
    assert env.get_attr("goal") == ([0.0],) * 4  # nothing was sent
    assert env.call("push_goal", lambda: 1)[0][1]() == 1  # cloudpickle sends what pickle cannot
    env.close()


def test_a_result_of_a_class_defined_in_the_main_script_comes_back_as_that_class():
    """The worker pickles results with pickle, and with cloudpickle what pickle cannot do: here an instance of
    a class the main script defines (sent to the worker by value)."""
    for method in ("fork", "forkserver"):
        out = run_python(
            f"""
            import gymnasium as gym, numpy as np, fastvec

            class Goal:
                def __init__(self, where):
                    self.where = where

            class Env(gym.Env):
                observation_space = gym.spaces.Box(0, 1, (1,))
                action_space = gym.spaces.Discrete(2)
                def reset(self, *, seed=None, options=None):
                    return np.zeros(1, np.float32), {{}}
                def step(self, action):
                    return np.zeros(1, np.float32), 0.0, False, False, {{}}
                def goal(self, where):
                    return Goal(where)

            env = fastvec.make(Env, 2, start_method={method!r})
            got = env.call("goal", 3)
            assert all(type(g) is Goal and g.where == 3 for g in got), got
            env.close()
            print("ok")
            """
        )
        assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_calls_while_envs_are_in_flight():
    """gymnasium's AsyncVectorEnv refuses a call while a step is pending (AlreadyPendingCallError); Tianshou refuses
    envs that are stepping. Here: an env in flight is refused; an idle env of the same worker is answered once
    the worker has stepped the others, whose results stay for recv."""
    env = pool(batch_size=2, workers=1)
    env.async_reset()
    obs, _, _, _, info = env.recv()
    first = info["env_id"].tolist()
    with pytest.raises(RuntimeError, match=r"env \d is in flight"):
        env.get_attr("scale")  # every env: some are in flight
    env.send(np.ones(2, np.int64), first)
    rest = env.recv()[4]["env_id"].tolist()  # the other two are idle now; `first` are in flight
    with pytest.raises(RuntimeError, match=f"env {first[0]} is in flight"):
        env.env_call("get", "scale", env_ids=[rest[0], first[0]])
    assert env.env_call("get", "t", env_ids=rest) == [0, 0]
    env.env_call("set", "difficulty", (5,), env_ids=[rest[0]])
    obs, reward, *_, info = env.recv()  # the step sent before the calls, untouched by them
    assert sorted(info["env_id"].tolist()) == sorted(first)
    assert obs[:, 0].tolist() == [1.0, 1.0] and reward.tolist() == [1.0, 1.0]
    env.send(np.ones(2, np.int64), rest)
    _, reward, *_, info = env.recv()
    assert dict(zip(info["env_id"].tolist(), reward.tolist(), strict=True)) == {rest[0]: 5.0, rest[1]: 1.0}
    env.close()


def test_an_interrupted_call_leaves_the_pool_usable():
    """Ctrl-C while the envs answer: the next call gets its own answers, not the late ones of the call that was
    interrupted."""
    env = pool(workers=2)
    ctrl_c = threading.Timer(0.2, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    ctrl_c.start()
    with pytest.raises(KeyboardInterrupt):
        env.call("wait", 0.5)  # each worker answers after 1 s (two envs each)
    ctrl_c.join()
    assert env.call("wait", 0.0) == (0.0,) * 4  # waits out the interrupted call's late answers and drops them
    assert env.get_attr("scale") == (1.0, 2.0, 3.0, 4.0)
    env.reset()
    assert env.step(np.zeros(4, np.int64))[0][:, 0].tolist() == [1.0] * 4
    env.close()


def test_close_is_prompt_while_a_call_waits():
    env = pool(workers=2)
    threading.Timer(0.2, env.close).start()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="closed"):
        env.call("wait", 30.0)
    assert time.monotonic() - start < 5


# -- native envs -----------------------------------------------------------------------------------------------


def test_native_envs_answer_the_attributes_they_have():
    env = fastvec.make("Pendulum-v1", 3, seed=0, g=9.81, max_episode_steps=100)
    spec = env.get_attr("spec")
    assert len(spec) == 3 and spec[0] == spec[2] and spec[0] is not spec[1]  # one copy each
    assert spec[0].id == "fastvec/Pendulum-v1" and spec[0].max_episode_steps == 100
    assert spec[0].kwargs == {"g": 9.81}
    assert env.get_attr("g") == (9.81,) * 3  # gymnasium's PendulumEnv has g too
    assert env.get_attr("render_mode") == (None,) * 3
    assert env.get_attr("metadata") == ({"render_modes": []},) * 3
    assert env.get_attr("observation_space") == (env.single_observation_space,) * 3
    assert env.call("action_space") == (env.single_action_space,) * 3
    again = gym.make_vec(spec[0], num_envs=2)  # the spec makes the same envs again
    assert again.get_attr("g") == (9.81,) * 2 and again.get_attr("spec")[0].max_episode_steps == 100
    again.close()
    with pytest.raises(AttributeError, match=r"^fastvec's native Pendulum-v1 has no attribute 'foo' \(it has: "):
        env.get_attr("foo")
    with pytest.raises(AttributeError, match="fastvec's native Pendulum-v1 has no Python env object"):
        env.set_attr("g", 1.0)
    with pytest.raises(TypeError, match="'g' is not callable"):
        env.env_call("method", "g")
    assert env.env_call("is_wrapped", "TimeLimit", (gym.wrappers.TimeLimit,)) == [False] * 3
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.get_attr("spec")


def test_native_defaults_and_async_pools():
    env = fastvec.make("CartPole-v1", 4, batch_size=2, seed=0)
    env.async_reset()
    env.recv()  # two envs are in flight: a native env's attributes are fixed, answered at any time
    assert env.get_attr("spec")[0].kwargs == {"sutton_barto_reward": False}
    assert env.get_attr("sutton_barto_reward") == (False,) * 4
    env.close()
