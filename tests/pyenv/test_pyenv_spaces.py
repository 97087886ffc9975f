"""What the Python-env pool takes of its envs' spaces, as gymnasium's vector envs take them: observation spaces
that differ in bounds under ``observation_mode="different"`` (Tianshou's envs of several sizes), Dict spaces
whose keys come in another order, and clear errors at construction for envs without spaces and for spaces
that cannot share a batch."""

from __future__ import annotations

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


DYNAMIC = [
    gym.spaces.Graph(BOX, gym.spaces.Discrete(2)),
    gym.spaces.Sequence(BOX),
    gym.spaces.Sequence(BOX, stack=True),
    gym.spaces.Text(5),
    gym.spaces.OneOf([BOX, gym.spaces.Discrete(2)]),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("space", DYNAMIC, ids=lambda s: type(s).__name__)
def test_a_dynamic_space_against_env_0s_box_is_refused_naming_both(space):
    """Text, Graph, ... are batched as tuples of objects (the tests below); an env 1 whose space is one
    of them, against env 0's Box, is refused as a difference, naming both."""
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


# -- spaces of no fixed size: pickled, batched as AsyncVectorEnv(shared_memory=False) batches them -----------------


class Word(gym.spaces.Space):
    """A custom space (no gymnasium batching rule of its own): lowercase words."""

    def __init__(self, seed=None) -> None:
        super().__init__(None, None, seed)

    def sample(self, mask=None, probability=None):
        return "".join(self.np_random.choice(list("abc"), int(self.np_random.integers(1, 4))))

    def contains(self, x):
        return isinstance(x, str) and x.isalpha()

    def __eq__(self, other):
        return isinstance(other, Word)

    __hash__ = None


class EchoEnv(gym.Env):
    """Observation and action space ``space``: reset returns a seeded sample, each step the action it was given (so
    a step shows what the env received); the episode ends after ``length`` steps; infos carry the step count."""

    def __init__(self, space, length: int = 3) -> None:
        self.observation_space = self.action_space = space
        self.length = length
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(1 << 30)))
        self.t = 0
        return self.observation_space.sample(), {"t": self.t}

    def step(self, action):
        self.t += 1
        return action, float(self.t), self.t >= self.length, False, {"t": self.t}


MIXED = [
    gym.spaces.Dict({"box": BOX, "text": gym.spaces.Text(6)}),
    gym.spaces.Tuple((gym.spaces.Graph(gym.spaces.Box(-1, 1, (2, 1)), None), gym.spaces.Discrete(2))),
    gym.spaces.Tuple((gym.spaces.Sequence(gym.spaces.Discrete(4)), BOX, gym.spaces.Text(3))),
]
ECHOED = [*DYNAMIC, Word(), *MIXED]


def _reference(fns, **kw):
    return gym.vector.AsyncVectorEnv(fns, shared_memory=False, context="fork", **kw)


def _same(a, b) -> bool:
    from gymnasium.utils.env_checker import data_equivalence

    return data_equivalence(a, b)


def _equal(a, b) -> bool:
    """Equal values of equal types, arrays of equal dtypes (data_equivalence compares string arrays with allclose)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return bool(a == b)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("space", ECHOED, ids=lambda s: type(s).__name__ + str(len(getattr(s, "spaces", ()))))
def test_dynamic_spaces_as_observations_and_actions_step_as_async_vector_env(space):
    """Text, Graph, Sequence, OneOf, a custom Space and Dict/Tuple mixing them with Box and Discrete, as
    observation and action space: the same batched spaces, observations, rewards, flags and infos as
    AsyncVectorEnv(shared_memory=False), over episodes and their autoresets; each env gets its action as given."""
    fns = [lambda: EchoEnv(space)] * 3
    env = fastvec.make(fns, start_method="fork", num_workers=2)
    ref = _reference(fns)
    assert env.single_observation_space == ref.single_observation_space
    assert env.observation_space == ref.observation_space
    assert env.action_space == ref.action_space
    got, want = env.reset(seed=5), ref.reset(seed=5)
    assert _same(got, want)
    assert got[0] in env.observation_space
    ref.action_space.seed(1)
    for _ in range(7):  # two episodes and their autoresets (next_step)
        actions = ref.action_space.sample()
        got, want = env.step(actions), ref.step(actions)
        assert _same(got, want), (got, want)
        assert got[0] in env.observation_space
    env.close()
    ref.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_a_dict_of_box_and_text_in_every_autoreset_mode_steps_as_async_vector_env(mode):
    """Shared memory (the Box) and pickled values (the Text) in one observation: final observations (same_step)
    and partial resets (disabled: the other envs' text observations as they were) as gymnasium gives them."""
    space = MIXED[0]
    fns = [lambda n=n: EchoEnv(space, length=n) for n in (2, 3, 4)]
    env = fastvec.make(fns, start_method="fork", num_workers=2, autoreset_mode=mode)
    ref = _reference(fns, autoreset_mode=gym.vector.AutoresetMode[mode.upper()])
    assert _same(env.reset(seed=1), ref.reset(seed=1))
    ref.action_space.seed(2)
    for _ in range(9):
        actions = ref.action_space.sample()
        got, want = env.step(actions), ref.step(actions)
        assert _same(got, want), (got, want)
        done = got[2] | got[3]
        if mode == "disabled" and done.any():
            options = {"reset_mask": done}
            got, want = env.reset(seed=3, options=options), ref.reset(seed=3, options=options)
            assert _same(got, want), (got, want)
    env.close()
    ref.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("space", [gym.spaces.Text(4), MIXED[1]], ids=["Text", "Tuple"])
def test_dynamic_spaces_in_async_mode_reach_the_envs_sent_to(space):
    """send/recv with batch_size: each row is its env's, and an env echoes the action sent to it."""
    env = fastvec.make([lambda: EchoEnv(space, length=5)] * 4, batch_size=2, start_method="fork", num_workers=2)
    env.action_space.seed(0)
    env.async_reset(seed=0)
    sent: dict[int, object] = {}
    seen = 0
    for _ in range(12):
        obs, _, terminated, truncated, info = env.recv()
        assert obs in env.observation_space
        for i, e in enumerate(info["env_id"].tolist()):
            row = obs[i] if isinstance(space, gym.spaces.Text) else tuple(part[i] for part in obs)
            if e in sent and info["t"][i] > 0:
                assert _same(row, sent[e])
                seen += 1
        actions = env.action_space.sample()
        for i, e in enumerate(info["env_id"].tolist()):
            sent[e] = actions[i] if isinstance(space, gym.spaces.Text) else tuple(part[i] for part in actions)
        env.send(actions, info["env_id"])
    assert seen > 10
    env.close()


class BadTextEnv(EchoEnv):
    """Returns an int where its Text space wants a string, at its second step."""

    def step(self, action):
        obs, *rest = super().step(action)
        return (7 if self.t == 2 else obs), *rest


@pytest.mark.timeout(60)
def test_an_observation_outside_its_dynamic_space_is_the_error_of_a_box_of_the_wrong_shape():
    box_env = fastvec.make([lambda: SizeEnvWrongShape()], start_method="fork")
    box_env.reset()
    with pytest.raises(fastvec.EnvError, match=r"env 0: step\(\) returned an observation of shape") as box_error:
        box_env.step(np.array([1]))
    box_env.close()
    env = fastvec.make(
        [lambda: EchoEnv(gym.spaces.Text(4)), lambda: BadTextEnv(gym.spaces.Text(4))], start_method="fork"
    )
    env.reset(seed=0)
    env.step(("ab", "cd"))
    with pytest.raises(fastvec.EnvError, match=r"env 1: step\(\) returned an observation 7 \(int\), which Text") as e:
        env.step(("ab", "cd"))
    assert type(e.value) is type(box_error.value) and e.value.env_id == box_error.value.env_id + 1
    with pytest.raises(RuntimeError, match="env 1 raised an exception earlier; reset it"):
        env.step(("ab", "cd"))
    obs, _ = env.reset(seed=0)  # the pool goes on
    assert obs in env.observation_space
    assert env.step(("x", "yz"))[0] == ("x", "yz")
    env.close()


class SizeEnvWrongShape(SizeEnv):
    def __init__(self) -> None:
        super().__init__(3)

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


@pytest.mark.timeout(60)
def test_bad_dynamic_actions_are_refused_before_anything_is_sent():
    space = gym.spaces.Dict({"box": BOX, "text": gym.spaces.Text(6)})
    env = fastvec.make([lambda: EchoEnv(space)] * 2, start_method="fork")
    env.reset(seed=0)
    box = np.zeros((2, 2), np.float32)
    with pytest.raises(TypeError, match=r"actions for Text\(.*must be a tuple of 2 per-env values.*got a str"):
        env.step({"box": box, "text": "ab"})
    with pytest.raises(ValueError, match=r"actions for Text\(.*must hold 2 per-env values, got 3"):
        env.step({"box": box, "text": ("a", "b", "c")})
    with pytest.raises(TypeError, match=r"cannot be pickled to be sent to the envs' worker processes"):
        env.step({"box": box, "text": ("a", lambda: 0)})
    obs, *_ = env.step({"box": box + 0.5, "text": ("a", "b")})  # the pool goes on
    assert obs["text"] == ("a", "b")
    np.testing.assert_array_equal(obs["box"], box + 0.5)
    env.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("space", [gym.spaces.Text(5), MIXED[0], MIXED[2]], ids=["Text", "Dict", "Tuple"])
def test_sb3_vec_gives_dynamic_observations_as_subproc_vec_env(space):
    """SB3's VecEnv: fields of no fixed size stacked as SubprocVecEnv stacks them (strings as a string array);
    terminal observations as the env returned them; actions as SB3 passes them (env i gets actions[i])."""
    from stable_baselines3.common.vec_env import SubprocVecEnv

    if isinstance(space, gym.spaces.Tuple):  # (np.stack refuses a Sequence's ragged rows, in both)
        space = gym.spaces.Tuple((BOX, gym.spaces.Text(3)))
    fns = [lambda n=n: EchoEnv(space, length=n) for n in (2, 3)]
    env = fastvec.sb3_vec(fns, start_method="fork")
    ref = SubprocVecEnv(fns, start_method="fork")
    assert env.observation_space == ref.observation_space
    env.seed(4)
    ref.seed(4)
    assert _equal(env.reset(), ref.reset())
    sampler = gym.vector.utils.batch_space(space, 2)
    sampler.seed(0)
    for _ in range(5):
        batch = sampler.sample()
        actions = list(gym.vector.utils.iterate(sampler, batch))
        if isinstance(space, gym.spaces.Text):
            actions = np.array(actions)  # a policy's batch: env i gets actions[i], a numpy string
        got, want = env.step(actions), ref.step(actions)
        assert _equal(got[:3], want[:3]), (got, want)
        for a, b in zip(got[3], want[3], strict=True):
            assert _equal(a.get("terminal_observation"), b.get("terminal_observation"))
    obs = got[0] if isinstance(space, gym.spaces.Text) else got[0][1] if isinstance(got[0], tuple) else got[0]["text"]
    assert isinstance(obs, np.ndarray) and obs.dtype.kind == "U"
    env.close()
    ref.close()


@pytest.mark.timeout(120)
def test_tianshou_venv_gives_text_observations_as_an_object_array_of_each_envs():
    """Tianshou's venvs np.stack observations (text: a string array); fastvec's adapter gives an object array of each
    env's value, as it gives Dict observations (README), with final observations in place of the new episode's."""
    fns = [lambda n=n: EchoEnv(gym.spaces.Text(5), length=n) for n in (2, 3)]
    venv = fastvec.tianshou_venv(fns, start_method="fork")
    obs, _ = venv.reset(seed=0)
    assert obs.dtype == object and obs.shape == (2,) and all(isinstance(o, str) for o in obs)
    obs, _, terminated, _, _ = venv.step(np.array(["a", "bb"], dtype=object))
    assert obs.tolist() == ["a", "bb"] and not terminated.any()
    obs, _, terminated, _, _ = venv.step(np.array(["ccccc", "d"], dtype=object))
    assert obs.tolist() == ["ccccc", "d"] and terminated.tolist() == [True, False]
    obs, _ = venv.reset(0)
    assert isinstance(obs[0], str) and obs[0] in gym.spaces.Text(5)
    venv.close()
