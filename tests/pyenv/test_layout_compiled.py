"""The compiled flattener and unflattener of a space (what the workers and the parent run every step) do what
fastvec.pyenv.layout's flatten and unflatten do: the same leaves in the same order, the same errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from fastvec.pyenv.layout import flatten, flattener, unflatten, unflattener

B = gym.spaces.Box(-1, 1, (2,), np.float32)
SPACES = [
    B,
    gym.spaces.Discrete(3),
    gym.spaces.Dict({"a": B, "b": gym.spaces.Discrete(4)}),
    gym.spaces.Tuple((B, gym.spaces.MultiBinary(3))),
    gym.spaces.Dict(
        {
            "obs": gym.spaces.Dict({"x": B, "y": gym.spaces.Tuple((gym.spaces.Discrete(2), B))}),
            "flags": gym.spaces.MultiBinary(2),
            "t": gym.spaces.Tuple((gym.spaces.Dict({"z": B}), gym.spaces.Discrete(5))),
        }
    ),
]


def _same(a, b):
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    else:
        assert a is b


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_same_leaves_and_elements_as_flatten_and_unflatten(space):
    space.seed(0)
    flat, unflat = flattener(space), unflattener(space)
    for _ in range(5):
        value = space.sample()
        want = flatten(space, value, [])
        got: list = []
        flat(value, got)
        assert len(got) == len(want) and all(g is w for g, w in zip(got, want, strict=True))
        _same(unflat(iter(want)), unflatten(space, want)[0])


def test_same_errors_as_flatten():
    space = SPACES[-1]
    flat = flattener(space)
    good = space.sample()
    bad = [
        [1, 2],  # not a dict
        {**good, "obs": {"x": good["obs"]["x"]}},  # a key missing
        {**good, "t": (good["t"][0],)},  # a tuple too short
        {**good, "t": 3},  # not a tuple
    ]
    for value in bad:
        with pytest.raises((TypeError, KeyError, ValueError)) as want:
            flatten(space, value, [])
        with pytest.raises(type(want.value)) as got:
            flat(value, [])
        assert str(got.value) == str(want.value)
