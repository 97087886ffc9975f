"""MuJoCo models, read at run time from the installed gymnasium (its ``envs/mujoco/assets``), as ROMs are read
from ale-py: fastvec ships no model files.

An ``xml_file`` is found as gymnasium's MuJoCo envs find theirs: a path starting with ``.`` or ``/`` as it is, one
starting with ``~`` expanded, any other name in gymnasium's assets (``"ant.xml"``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

#: gymnasium's MuJoCo v5 ids, which fastvec runs natively when built with its MuJoCo backend (the list stands here,
#: not only in the compiled module, for the benchmarks and tests that run them elsewhere too).
V5_IDS = (
    "Ant-v5",
    "HalfCheetah-v5",
    "Hopper-v5",
    "Humanoid-v5",
    "HumanoidStandup-v5",
    "InvertedDoublePendulum-v5",
    "InvertedPendulum-v5",
    "Pusher-v5",
    "Reacher-v5",
    "Swimmer-v5",
    "Walker2d-v5",
)


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
        path = Path(name).expanduser()
    else:
        path = assets_dir() / name
    if not path.exists():
        raise FileNotFoundError(f"{what}: no MuJoCo model file {path}")
    if not path.is_file():
        raise ValueError(f"{what}: {path} is not a file")
    return path
