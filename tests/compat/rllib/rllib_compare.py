"""What the RLlib runner tests share: sampling two runners on one torch RNG stream, and comparing their data."""

from __future__ import annotations

import numpy as np


def sample_both(torch, stock, fast, seed: int, **kwargs):
    """``sample(**kwargs)`` of RLlib's runner, then of fastvec's, each from torch seed ``seed``."""
    torch.manual_seed(seed)
    a = stock.sample(**kwargs)
    torch.manual_seed(seed)
    b = fast.sample(**kwargs)
    return a, b


def assert_same_data(x, y, where: str) -> None:
    """``x`` and ``y`` equal, nested dicts, lists and arrays alike (arrays: the same dtype and shape too)."""
    if isinstance(x, dict):
        assert isinstance(y, dict) and set(x) == set(y), (where, x, y)
        for k in x:
            assert_same_data(x[k], y[k], f"{where}.{k}")
    elif isinstance(x, list | tuple):
        assert type(x) is type(y) and len(x) == len(y), (where, len(x), len(y))
        for i, (u, v) in enumerate(zip(x, y, strict=True)):
            assert_same_data(u, v, f"{where}[{i}]")
    elif isinstance(x, np.ndarray):
        assert isinstance(y, np.ndarray), (where, type(y))
        assert (x.dtype, x.shape) == (y.dtype, y.shape), (where, x.dtype, y.dtype, x.shape, y.shape)
        np.testing.assert_array_equal(x, y, err_msg=where)
    else:
        assert type(x) is type(y) and x == y, (where, x, y)


# The metrics every runner pair must agree on (RLlib's names); each test adds its per-agent and per-module ones.
COMMON_METRICS = (
    "num_env_steps_sampled",
    "num_env_steps_sampled_lifetime",
    "num_agent_steps_sampled",
    "num_agent_steps_sampled_lifetime",
    "num_module_steps_sampled",
    "num_module_steps_sampled_lifetime",
    "num_episodes",
    "num_episodes_lifetime",
    "episode_return_mean",
    "episode_return_min",
    "episode_return_max",
    "episode_len_mean",
    "episode_len_min",
    "episode_len_max",
)


def assert_same_metrics_of(stock, fast, keys) -> tuple[dict, dict]:
    """Both runners' ``get_metrics()``: each key of ``keys`` in both or in neither, and the same there."""
    ma, mb = stock.get_metrics(), fast.get_metrics()
    for key in keys:
        assert (key in ma) == (key in mb), key
        if key in ma:
            assert str(ma[key]) == str(mb[key]), (key, ma[key], mb[key])  # str: nested per-agent dicts
    return ma, mb
