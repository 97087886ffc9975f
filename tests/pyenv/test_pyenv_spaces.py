"""What the Python-env pool takes of its envs' spaces, as gymnasium's vector envs take them: observation spaces
that differ in bounds under ``observation_mode="different"`` (Tianshou's envs of several sizes), Dict spaces
whose keys come in another order, and clear errors at construction for envs without spaces and for spaces
it cannot batch (Graph, Sequence, Text, OneOf)."""

from __future__ import annotations

import multiprocessing
from collections import OrderedDict

import gymnasium as gym
import numpy as np
import pytest

import fastvec

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)


class SizeEnv(gym.Env):
    """Tianshou's MyTestEnv(size): go right ``size`` steps; obs Box(0, size - 1, (1,)), actions Discrete(2)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.observation_space = gym.spaces.Box(0, size - 1, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.index = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.index = 0
        return np.array([self.index], np.float32), {}

    def step(self, action):
        self.index = max(self.index - 1, 0) if action == 0 else self.index + 1
        done = self.index >= self.size - 1
        return np.array([self.index], np.float32), float(done), done, False, {}


class LevelEnv(gym.Env):
    """A Discrete(n) observation (its last value), as in gymnasium's own example Discrete(5) vs Discrete(10)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.observation_space = gym.spaces.Discrete(n)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.n - 1, {}

    def step(self, action):
        return self.n - 1 - int(action), 0.0, False, False, {}


class SpaceEnv(gym.Env):
    """An env with the spaces it is given, whose observations are samples of its observation space."""

    def __init__(self, obs_space=None, act_space=None) -> None:
        if obs_space is not None:
            self.observation_space = obs_space
        self.action_space = act_space if act_space is not None else gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


BOX = gym.spaces.Box(0, 1, (2,), np.float32)


def _fns(cls, params):
    return [lambda p=p: cls(*p) if isinstance(p, tuple) else cls(p) for p in params]


@pytest.mark.timeout(60)
def test_tianshou_envs_of_several_sizes_run_with_observation_mode_different():
    sizes = [2, 3, 4, 5]
    fns = _fns(SizeEnv, sizes)
    with pytest.raises(ValueError, match=r"env 1 has observation_space Box\(0.0, 2.0.* but env 0 has Box\(0.0, 1.0"):
        fastvec.make(fns, start_method="fork", num_workers=2)  # gymnasium's default, "same", refuses them too
    env = fastvec.make(fns, start_method="fork", num_workers=2, observation_mode="different")
    ref = gym.vector.SyncVectorEnv(fns, observation_mode="different")
    assert env.observation_mode == ref.observation_mode == "different"
    assert env.single_observation_space == ref.single_observation_space == SizeEnv(2).observation_space
    assert env.observation_space == ref.observation_space  # each row bounded by its env's space
    assert env.get_attr("observation_space") == tuple(SizeEnv(s).observation_space for s in sizes)
    np.testing.assert_array_equal(env.reset(seed=0)[0], ref.reset(seed=0)[0])
    rng = np.random.default_rng(0)
    for _ in range(40):
        actions = rng.integers(0, 2, 4)
        got, want = env.step(actions), ref.step(actions)
        for a, b in zip(got[:4], want[:4], strict=True):
            np.testing.assert_array_equal(a, b)
        assert env.observation_space.contains(got[0])
    env.close()
    ref.close()


@pytest.mark.timeout(60)
def test_observation_mode_different_batches_discrete_spaces_as_gymnasium():
    fns = _fns(LevelEnv, [5, 10, 3])
    env = fastvec.make(fns, start_method="fork", num_workers=2, observation_mode="different")
    ref = gym.vector.SyncVectorEnv(fns, observation_mode="different")
    assert env.observation_space == ref.observation_space == gym.spaces.MultiDiscrete([5, 10, 3])
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs, ref.reset()[0])
    np.testing.assert_array_equal(obs, [4, 9, 2])
    env.close()
    # Async: a batch holds any envs, so its space is env 0's batched (the rows are still each env's own).
    env = fastvec.make(fns, batch_size=2, start_method="fork", num_workers=2, observation_mode="different")
    assert env.observation_space == gym.vector.utils.batch_space(gym.spaces.Discrete(5), 2)
    env.async_reset()
    obs, *_, info = env.recv()
    np.testing.assert_array_equal(obs, np.array([4, 9, 2])[info["env_id"]])
    env.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "other, why",
    [
        (gym.spaces.Box(0, 1, (3,), np.float32), "shape"),
        (gym.spaces.Box(0, 1, (2,), np.float64), "dtype"),
        (gym.spaces.MultiBinary(2), "type"),
        (gym.spaces.Tuple((BOX, BOX)), "type"),
    ],
)
def test_spaces_that_cannot_be_batched_as_env_0s_are_refused_naming_both(other, why):
    fns = [lambda: SpaceEnv(BOX), lambda: SpaceEnv(BOX), lambda o=other: SpaceEnv(o)]
    for mode in ("same", "different"):
        with pytest.raises(ValueError, match=rf"env 2 has observation_space {_re(other)}, but env 0 has {_re(BOX)}"):
            fastvec.make(fns, start_method="fork", num_workers=2, observation_mode=mode)


@pytest.mark.timeout(60)
def test_tuple_spaces_of_different_lengths_are_refused():
    """gymnasium's is_space_dtype_shape_equiv passes Tuple((Box,)) against Tuple((Box, Box)); the pool does not."""
    one, two = gym.spaces.Tuple((BOX,)), gym.spaces.Tuple((BOX, BOX))
    with pytest.raises(ValueError, match=r"env 1 has observation_space Tuple\(.*must still share"):
        fastvec.make([lambda: SpaceEnv(one), lambda: SpaceEnv(two)], start_method="fork", observation_mode="different")


@pytest.mark.timeout(60)
def test_action_spaces_must_be_equal_in_either_mode():
    fns = [lambda: SpaceEnv(BOX), lambda: SpaceEnv(BOX, gym.spaces.Discrete(3))]
    for mode in ("same", "different"):
        with pytest.raises(ValueError, match=r"env 1 has action_space Discrete\(3\), but env 0 has Discrete\(2\)"):
            fastvec.make(fns, start_method="fork", observation_mode=mode)
    with pytest.raises(ValueError, match="observation_mode must be 'same' or 'different'"):
        fastvec.make(fns, start_method="fork", observation_mode=(BOX, BOX))
    with pytest.raises(ValueError, match="observation_mode must be 'same' or 'different'"):
        fastvec.make("CartPole-v1", 2, observation_mode="differing")
    assert fastvec.make("CartPole-v1", 2, observation_mode="different").num_envs == 2  # one space: either holds


@pytest.mark.timeout(60)
def test_dict_spaces_with_keys_in_another_order_are_read_by_name():
    """Dict spaces compare equal whatever the order of their keys; each worker reads and writes by env 0's."""
    parts = {"a": gym.spaces.Discrete(3), "b": gym.spaces.Box(-1, 1, (2,), np.float64), "c": gym.spaces.MultiBinary(3)}
    orders = ["abc", "cba", "bca", "acb"]
    fns = [lambda o=o: SpaceEnv(gym.spaces.Dict(OrderedDict((k, parts[k]) for k in o))) for o in orders]
    env = fastvec.make(fns, start_method="fork", num_workers=4)
    ref = gym.vector.SyncVectorEnv(fns)
    got, want = env.reset(seed=3)[0], ref.reset(seed=3)[0]
    assert list(got) == list("abc")
    for key in "abc":
        np.testing.assert_array_equal(got[key], want[key])
    env.close()
    ref.close()


class ActionDictEnv(gym.Env):
    """Dict actions whose keys come in the order given; the observation is the action's "x" and "y"."""

    def __init__(self, order: str) -> None:
        parts = {"x": gym.spaces.Discrete(5), "y": gym.spaces.Box(-1, 1, (2,), np.float32)}
        self.action_space = gym.spaces.Dict(OrderedDict((k, parts[k]) for k in order))
        self.observation_space = gym.spaces.Box(-10, 10, (3,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3, np.float32), {}

    def step(self, action):
        return np.array([action["x"], *action["y"]], np.float32), 0.0, False, False, {}


@pytest.mark.timeout(60)
def test_dict_actions_with_keys_in_another_order_reach_each_env_by_name():
    env = fastvec.make([lambda: ActionDictEnv("xy"), lambda: ActionDictEnv("yx")], start_method="fork", num_workers=2)
    env.reset()
    obs, *_ = env.step({"x": np.array([3, 4]), "y": np.array([[0.5, -0.5], [0.25, -0.25]], np.float32)})
    np.testing.assert_array_equal(obs, [[3, 0.5, -0.5], [4, 0.25, -0.25]])
    env.close()


class NoSpaces(gym.Env):
    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


@pytest.mark.timeout(60)
def test_envs_without_declared_spaces_are_named():
    """gymnasium's vector envs need both spaces too (an AttributeError there); fastvec names the env."""
    fns = [lambda: SpaceEnv(BOX), NoSpaces]
    with pytest.raises(AttributeError, match=r"env 1 \(NoSpaces\) has no observation_space .*set them in its __init__"):
        fastvec.make(fns, start_method="fork", num_workers=2)
    with pytest.raises(TypeError, match=r"env 0 \(SpaceEnv\) has observation_space \(0, 1\), a tuple: it must be a "):
        fastvec.make([lambda: SpaceEnv((0, 1))], start_method="fork")


UNBATCHABLE = [
    gym.spaces.Graph(BOX, gym.spaces.Discrete(2)),
    gym.spaces.Sequence(BOX),
    gym.spaces.Sequence(BOX, stack=True),
    gym.spaces.Text(5),
    gym.spaces.OneOf([BOX, gym.spaces.Discrete(2)]),
]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("space", UNBATCHABLE, ids=lambda s: type(s).__name__)
def test_graph_sequence_text_and_oneof_spaces_are_a_type_error_at_construction(space):
    """gymnasium batches these only as tuples of Python objects, without shared memory: the pool says so at once,
    naming the space, for observations, actions and a space nested in a Dict, and leaves no worker behind."""
    before = {p.pid for p in multiprocessing.active_children()}
    for obs, act, kind, named in [
        (space, None, "observation_space", space),
        (gym.spaces.Dict({"ok": BOX, "odd": space}), None, "observation_space", space),
        (BOX, space, "action_space", space),
    ]:
        with pytest.raises(TypeError, match=rf"env 0's {kind} .*cannot be batched: .*; {_re(named)} is a "):
            fastvec.make([lambda o=obs, a=act: SpaceEnv(o, a)] * 2, start_method="fork", num_workers=2)
    assert {p.pid for p in multiprocessing.active_children()} <= before  # the workers were reaped
    # An env 1 whose space is one of them, against env 0's Box: refused as a difference, naming both.
    with pytest.raises(ValueError, match=rf"env 1 has observation_space {_re(space)}, but env 0 has"):
        fastvec.make(
            [lambda: SpaceEnv(BOX), lambda s=space: SpaceEnv(s)], start_method="fork", observation_mode="different"
        )


def _re(space) -> str:
    import re

    return re.escape(str(space))


class SeededSpaceEnv(SpaceEnv):
    def __init__(self, seed: int) -> None:
        super().__init__(gym.spaces.Box(0, 1, (2,), np.float32))
        self.observation_space.seed(seed)  # equal spaces, pickled differently (their samplers' states)


@pytest.mark.timeout(60)
def test_equal_spaces_with_seeded_samplers_are_equal():
    env = fastvec.make(_fns(SeededSpaceEnv, [1, 2, 3]), start_method="fork")
    assert env.single_observation_space == BOX
    env.close()


@pytest.mark.timeout(60)
def test_a_space_class_defined_in_a_function_reaches_every_worker():
    class LocalBox(gym.spaces.Box):  # pickle cannot send it by name; cloudpickle sends it by value
        pass

    space = LocalBox(0, 1, (2,), np.float32)
    env = fastvec.make([lambda: SpaceEnv(space)] * 3, start_method="spawn", num_workers=2)
    assert env.reset(seed=0)[0].shape == (3, 2)
    assert type(env.single_observation_space).__name__ == "LocalBox"
    env.close()
