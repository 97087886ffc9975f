"""A child process that renders with mujoco.egl (MUJOCO_GL=egl), as gymnasium's and dm_control's renderers do: the
reference side of the render tests. In a child, because mujoco.egl sets PYOPENGL_PLATFORM for its whole process and
this one's environment is left alone."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any


def egl_env() -> dict[str, str]:
    """This process's environment for a child that renders with mujoco.egl."""
    return {**os.environ, "MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl"}


def run_egl_child(script: str, args: Any, tmp_path: Path, timeout: float) -> Any:
    """Runs ``script`` in a child process with MUJOCO_GL=egl, and returns its result: the script loads ``args``
    from the pickle file named by ``sys.argv[1]`` and pickles its result into ``sys.argv[2]``. From ``tmp_path``:
    the source tree, without its compiled module, would shadow an installed fastvec (as in CI)."""
    (tmp_path / "args.pkl").write_bytes(pickle.dumps(args))
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "args.pkl"), str(tmp_path / "result.pkl")],
        check=True,
        env=egl_env(),
        cwd=tmp_path,
        timeout=timeout,
    )
    return pickle.loads((tmp_path / "result.pkl").read_bytes())
