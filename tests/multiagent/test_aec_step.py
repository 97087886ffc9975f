"""fastvec.multiagent.aec_step: PettingZoo's aec_to_parallel step, done faster, with the same results and effects."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.classic.rps import rps as rps_v2  # (rps_v2 itself warns that its import path is deprecated)
from pettingzoo.utils.conversions import aec_to_parallel
from pettingzoo.utils.wrappers import ClipOutOfBoundsWrapper, OrderEnforcingWrapper

from fastvec.multiagent.aec_step import parallel_stepper


def _mpe(name):
    import importlib

    return importlib.import_module(f"mpe2.{name}").parallel_env


CONSTRUCTORS = {
    "rps_v2": lambda: rps_v2.parallel_env(max_cycles=4),
    "simple_spread_v3": lambda: _mpe("simple_spread_v3")(max_cycles=4),
    "simple_tag_v3": lambda: _mpe("simple_tag_v3")(max_cycles=4),
    "simple_world_comm_v3": lambda: _mpe("simple_world_comm_v3")(max_cycles=4),
}


def assert_same(a, b, where):
    assert type(a) is type(b), where
    if isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            assert_same(a[k], b[k], (*where, k))
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, (*where, i))
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=str(where))
    else:
        assert a == b, where


@pytest.mark.parametrize("name", list(CONSTRUCTORS))
def test_same_results_and_state_as_pettingzoo(name):
    ours, theirs = CONSTRUCTORS[name](), CONSTRUCTORS[name]()
    step = parallel_stepper(ours)
    assert step is not None
    rng = np.random.default_rng(0)
    for episode in range(3):
        assert_same(ours.reset(seed=episode), theirs.reset(seed=episode), ("reset", episode))
        t = 0
        while theirs.agents:
            actions = {}
            for a in theirs.agents:
                space = theirs.action_space(a)
                space.seed(int(rng.integers(1 << 30)))
                actions[a] = space.sample()
            got, want = step(actions), theirs.step(actions)
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                assert_same(dict(g), dict(w), (episode, t, i))
            assert type(got[1]) is type(want[1])  # (a defaultdict, as PettingZoo's)
            assert ours.agents == theirs.agents
            assert ours.aec_env._has_updated == theirs.aec_env._has_updated
            t += 1
        assert t == 4


def test_out_of_space_action_raises_as_pettingzoo():
    env = rps_v2.parallel_env()
    step = parallel_stepper(env)
    env.reset(seed=0)
    with pytest.raises(AssertionError, match=r"^action is not in action space$"):
        step({"player_0": 7, "player_1": 0})


def test_step_before_reset_raises_as_pettingzoo():
    env = rps_v2.parallel_env()
    step = parallel_stepper(env)
    with pytest.raises(AttributeError, match="agents cannot be accessed before reset"):
        step({"player_0": 0, "player_1": 0})


def test_other_envs_get_no_stepper():
    from mpe2 import simple_spread_v3

    assert parallel_stepper(rps_v2.env()) is None  # an AEC env
    assert parallel_stepper(simple_spread_v3.parallel_env().unwrapped) is None
    # another wrapper in the chain: its step may do anything
    clipped = ClipOutOfBoundsWrapper(simple_spread_v3.raw_env(continuous_actions=True))
    assert parallel_stepper(aec_to_parallel(clipped)) is None
    assert parallel_stepper(aec_to_parallel(simple_spread_v3.raw_env())) is None  # no wrapper: nothing to save
    shadowed = rps_v2.parallel_env()
    layer = shadowed.aec_env
    assert isinstance(layer, OrderEnforcingWrapper)
    layer.env.rewards = {}  # an attribute on a wrapper hides the env's
    assert parallel_stepper(shadowed) is None
    patched = rps_v2.parallel_env()
    patched.step = lambda actions: None
    assert parallel_stepper(patched) is None


def test_a_pettingzoo_whose_code_differs_gets_no_stepper(monkeypatch):
    from fastvec.multiagent import aec_step

    assert aec_step._mirrored() == aec_step._MIRRORED_SHA256  # the installed PettingZoo is the one copied
    monkeypatch.setattr(aec_step, "_MIRRORED_SHA256", "0" * 64)
    assert parallel_stepper(rps_v2.parallel_env()) is None
