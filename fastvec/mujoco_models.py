"""MuJoCo models, read at run time from the installed gymnasium (its ``envs/mujoco/assets``), as ROMs are read
from ale-py: fastvec ships no model files.

An ``xml_file`` is found as gymnasium's MuJoCo envs find theirs: a path starting with ``.`` or ``/`` as it is, one
starting with ``~`` expanded, any other name in gymnasium's assets (``"ant.xml"``).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path


def assets_dir() -> Path:
    """gymnasium's MuJoCo model directory, found without importing gymnasium's MuJoCo envs."""
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("fastvec's MuJoCo envs read their models from gymnasium, which is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "envs" / "mujoco" / "assets"


def model_path(xml_file: str | os.PathLike[str], what: str = "xml_file") -> Path:
    """The model file ``xml_file`` names (as gymnasium resolves it); a FileNotFoundError naming the path if there is
    none, or a ValueError if it is not a file."""
    name = os.fspath(xml_file)
    if not name:
        raise ValueError(f"{what} must name a MuJoCo XML model file, got an empty string")
    if name.startswith((".", "/")):
        path = Path(name)
    elif name.startswith("~"):
        # os.path.expanduser, as gymnasium: a "~user" of no user stays as it is (Path.expanduser raises instead)
        path = Path(os.path.expanduser(name))
    else:
        path = assets_dir() / name
    if not path.exists():
        unexpanded = f" ({name.split('/', 1)[0]} is no user's home directory)" if str(path).startswith("~") else ""
        raise FileNotFoundError(f"{what}: no MuJoCo model file {path}{unexpanded}")
    if not path.is_file():
        raise ValueError(f"{what}: {path} is not a file")
    return path


# The ways numpy's dot (OpenBLAS's ddot) has been seen to sum a short float64 vector with itself: fused
# multiply-adds in order (numpy 2's OpenBLAS on AVX-512 CPUs), a multiply then an add in order (its AVX2 kernels,
# AMD Zen's too), and the squares of even and odd positions summed apart, then added (numpy 1.26's OpenBLAS 0.3.23
# on AVX-512 CPUs). fastvec's MuJoCo envs sum their norms the way numpy does in the process (_core.set_numpy_dot).
DOT_KINDS = ("fused", "separate", "two_lanes")

# Short vectors (of the lengths the envs take norms of: 2 and 3) whose dot with themselves tells the kinds apart:
# the 2-vector fused from the others (two_lanes sums 2 values as separate does), the 3-vector all three
# (tests/envs/test_mujoco.py checks that they do).
DOT_PROBES = ((0.1, 0.3), (0.1, 0.3, 0.1))


def numpy_dot_kind() -> str | None:
    """How numpy's dot sums a short float64 vector with itself in this process: the one of :data:`DOT_KINDS`
    that gives its results on every probe, or None (another BLAS). gymnasium's MuJoCo envs take
    ``np.linalg.norm`` (a dot) of 2 and 3 positions, so fastvec's envs sum as numpy does here: OpenBLAS chose its
    kernel for the CPU."""
    import numpy as np

    kinds = set(DOT_KINDS)
    for v in DOT_PROBES:
        a = np.array(v, dtype=np.float64)
        got = float(a.dot(a))
        kinds &= {kind for kind, value in self_dots(v).items() if value == got}
    return kinds.pop() if len(kinds) == 1 else None


def self_dots(v: Sequence[float]) -> dict[str, float]:
    """The dot of ``v`` with itself summed each of the :data:`DOT_KINDS` ways, from 0."""
    from fractions import Fraction

    fused = separate = 0.0
    lanes = [0.0, 0.0]
    for i, x in enumerate(v):
        fused = float(Fraction(fused) + Fraction(x) * Fraction(x))  # one rounding (float() of a Fraction does)
        separate = separate + x * x
        lanes[i % 2] = lanes[i % 2] + x * x
    return {"fused": fused, "separate": separate, "two_lanes": lanes[0] + lanes[1]}
