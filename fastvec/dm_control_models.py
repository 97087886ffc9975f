"""dm_control's models, read at run time from the installed dm-control package (its ``suite`` directory, with the
``common`` files they include), as gymnasium's MuJoCo models are (:mod:`fastvec.mujoco_models`): fastvec ships no
model files.

An ``xml_file`` of a dm_control env is found as :func:`fastvec.mujoco_models.model_path` finds one, but a bare
name is looked up in dm_control's suite (``"cartpole.xml"``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from fastvec import mujoco_models


def suite_dir() -> Path:
    """dm_control's suite directory, found without importing dm_control (which loads its renderer)."""
    spec = importlib.util.find_spec("dm_control")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "fastvec's dm_control envs read their models from dm-control, which is not installed: "
            "pip install dm-control==1.0.52"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "suite"


def model_path(xml_file: str | os.PathLike[str], what: str = "xml_file") -> Path:
    """The model file ``xml_file`` names: a bare name in dm_control's suite, any other as
    :func:`fastvec.mujoco_models.model_path` resolves it (FileNotFoundError or ValueError naming ``what``)."""
    name = os.fspath(xml_file)
    if name and not name.startswith((".", "/", "~")):
        name = str(suite_dir() / name)
    return mujoco_models.model_path(name, what)
