"""The dm_control family's port of scipy.ndimage.zoom (src/envs/dm_control/zoom.hpp: the cubic spline with
zoom's defaults, which dm_control's quadruped Escape smooths its terrain with) against scipy itself, bit for bit,
on random arrays of several ranks, shapes and zooms. The C++ side is tests/cpp/zoom_dump.cpp."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage
from test_rng_normal import build_dump

pytestmark = pytest.mark.versions  # scipy's spline code (stable since 1.6, but scipy's to keep)


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    return build_dump("zoom_dump", tmp_path_factory.mktemp("zoom"))


def cpp_zoom(dump, cases: list[tuple[np.ndarray, float]]) -> list[np.ndarray]:
    """zoom.hpp's zoom of each (array, zoom), run in one process."""
    records = []
    for a, z in cases:
        records += [np.array([a.ndim, *a.shape], dtype=np.uint64).tobytes(), np.float64(z).tobytes()]
        records.append(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    out = dump(stdin=b"".join(records))
    results, at = [], 0
    for a, _ in cases:
        shape = tuple(int(n) for n in np.frombuffer(out, dtype=np.int64, count=a.ndim, offset=at))
        at += 8 * a.ndim
        size = int(np.prod(shape))
        results.append(np.frombuffer(out, dtype=np.float64, count=size, offset=at).reshape(shape))
        at += 8 * size
    assert at == len(out)
    return results


def assert_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape}, scipy's {want.shape}"
    bad = np.flatnonzero(got.view(np.uint64) != want.view(np.uint64))
    if bad.size:
        i = int(bad[0])
        pytest.fail(f"{what}: {bad.size} of {want.size} differ, first at {i}: {got.flat[i]!r} != {want.flat[i]!r}")


def test_escapes_terrain(dump):
    """What Escape zooms: uniform(0.15, 1) bumps, 30 x 30, to the heightfield's 201 x 201 (zoom 201 / 30.0), over
    many RandomState seeds."""
    cases = [(np.random.RandomState(seed).uniform(0.15, 1, (30, 30)), 201 / float(30)) for seed in range(40)]
    for (a, z), got in zip(cases, cpp_zoom(dump, cases), strict=True):
        want = ndimage.zoom(a, z)
        assert want.shape == (201, 201)
        assert_bits(got, want, "30 x 30 by 201/30")


SHAPES_AND_ZOOMS = [
    ((1,), 3.0),  # a single value: no filtering
    ((2,), 2.5),
    ((3,), 0.5),
    ((5,), 1.0),  # scipy's early exit
    ((17,), 3.3),
    ((40,), 0.37),  # shrinking
    ((2, 3), 4.0),
    ((7, 4), 1.6),
    ((1, 9), 2.2),  # an axis of one value
    ((20, 20), 201 / 20.0),  # a terrain of another size (zoom 10.05)
    ((13, 6), 0.75),
    ((9, 9), 0.1),  # an output of one point along each axis
    ((4, 5, 6), 1.7),
    ((3, 2, 5), 0.8),
    ((2, 3, 2, 3), 1.5),
]


@pytest.mark.parametrize(("shape", "zoom"), SHAPES_AND_ZOOMS)
def test_random_arrays(dump, shape, zoom):
    """Random values of several scales (and integers, whose prefilter sums cancel more) in every rank up to 4."""
    rng = np.random.default_rng(sum(shape) + int(100 * zoom))
    arrays = [
        rng.standard_normal(shape),
        rng.uniform(-1e3, 1e3, shape),
        rng.integers(-3, 4, shape).astype(np.float64),
        rng.uniform(0, 1e-6, shape),
    ]
    cases = [(a, zoom) for a in arrays]
    for (a, z), got in zip(cases, cpp_zoom(dump, cases), strict=True):
        assert_bits(got, ndimage.zoom(a, z), f"{shape} by {z}")


def test_nonzero_everywhere_it_should_be(dump):
    """A guard on the comparison itself: the zoomed terrain is not all cval (constant mode's outside), and a
    changed input changes it."""
    a = np.random.RandomState(3).uniform(0.15, 1, (30, 30))
    b = a.copy()
    b[15, 15] += 0.5
    got_a, got_b = cpp_zoom(dump, [(a, 201 / 30.0), (b, 201 / 30.0)])
    assert np.all(got_a > 0)
    assert not np.array_equal(got_a, got_b)
