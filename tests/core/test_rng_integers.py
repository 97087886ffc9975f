"""fastvec's Generator.integers(low, high) and integers(high) (Pcg64::integers, src/core/rng.hpp) against numpy's,
bit for bit: the
draws gymnasium's Box2D envs make (LunarLander's wind phases in [-9999, 9999), BipedalWalker's terrain counters
and states, of which integers(4, 5) draws nothing), mixed with 64-bit draws (random()) as those envs mix them:
numpy's 32-bit draws keep the half of a 64-bit word they leave, across the 64-bit draws in between. The C++ side
is tests/cpp/rng_integers_dump.cpp."""

from __future__ import annotations

import numpy as np
import pytest
from test_rng_normal import build_dump

pytestmark = pytest.mark.versions  # numpy's behaviour (CI's variant passes)

RANGES = [(-9999, 9999), (3, 5), (1, 3), (4, 5), (5, 10), (1, 5), (0, 2**32), (-(2**31), 2**31 - 7), (7, 8)]


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    return build_dump("rng_integers_dump", tmp_path_factory.mktemp("rng_integers"))


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**64 - 1])
def test_integers_and_random_interleaved_match_numpy(dump, seed):
    rng = np.random.default_rng(seed + 1)
    kinds = rng.integers(0, 3, 2000)  # integers(low, high), random(), integers(high): 2**32 too
    picks = rng.integers(0, len(RANGES), 2000)
    records = np.array([(k, *RANGES[p]) for k, p in zip(kinds, picks, strict=True)], np.int64)
    out = dump(seed, stdin=records.tobytes())
    ref = np.random.default_rng(seed)
    want = bytearray()
    for kind, low, high in records:
        if kind == 0:
            want += np.int64(ref.integers(int(low), int(high))).tobytes()
        elif kind == 2:
            want += np.int64(ref.integers(int(high))).tobytes()
        else:
            want += np.float64(ref.random()).tobytes()
    want += np.uint64(ref.bit_generator.random_raw()).tobytes()
    assert out == bytes(want)
