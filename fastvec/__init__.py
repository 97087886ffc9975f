"""fastvec: vectorized RL environments stepped in a C++ thread pool.

>>> import fastvec
>>> env = fastvec.make("CartPole-v1", num_envs=8, seed=0)
>>> obs, info = env.reset()
>>> obs.shape
(8, 4)
"""


def _check_compiled_module() -> None:
    """fastvec imported from its source tree (no compiled module there) says so, and what to do instead."""
    import glob
    import importlib.util
    import os

    if importlib.util.find_spec("fastvec._core") is not None:
        return
    here = os.path.dirname(__file__)
    if glob.glob(os.path.join(here, "_core*.so")):
        return  # a module is there: let its own import error speak
    raise ImportError(
        f"fastvec was imported from {here}, a directory without its compiled module (fastvec._core): most likely "
        "fastvec's source tree, which Python put ahead of the installed fastvec because it is the current "
        "directory (or, for a Ray worker, the driver's). Run from another directory, or install fastvec in "
        'editable mode in the checkout: pip install --no-build-isolation -e . (see the README, "For development")'
    )


_check_compiled_module()

try:
    from fastvec._core import EnvError
except ImportError as e:  # the MuJoCo backend links the mujoco-core wheel's library
    if "libmujoco" not in str(e):
        raise
    raise ImportError(
        f"fastvec's compiled module needs MuJoCo's library from the mujoco-core package it was built with ({e}): "
        "pip install the mujoco-core version fastvec pins (pip show fastvec), or build fastvec without its MuJoCo "
        "backend: pip install . -Ccmake.define.FASTVEC_MUJOCO=OFF"
    ) from e

from fastvec import _numpy_loops  # noqa: E402
from fastvec._gymnasium import register_gymnasium_envs  # noqa: E402
from fastvec.adapters import rllib_env, sb3_vec, tianshou_ma_venv, tianshou_venv  # noqa: E402
from fastvec.multiagent import MultiAgentVectorEnv  # noqa: E402
from fastvec.registry import list_envs  # noqa: E402
from fastvec.vector import VectorEnv, make  # noqa: E402

__all__ = [
    "EnvError",
    "MultiAgentVectorEnv",
    "VectorEnv",
    "list_envs",
    "make",
    "rllib_env",
    "sb3_vec",
    "tianshou_ma_venv",
    "tianshou_venv",
]
__version__ = "0.1.0"

register_gymnasium_envs()


def _sum_as_numpy() -> None:
    """The MuJoCo envs' norms sum as this process's numpy does (mujoco_models.numpy_dot_kind): the same
    values as gymnasium's envs on any CPU. Another BLAS than OpenBLAS's kinds keeps fused sums."""
    from fastvec import _core
    from fastvec.mujoco_models import numpy_dot_kind

    if _core.has_mujoco:
        _core.set_numpy_dot(numpy_dot_kind() or "fused")


_sum_as_numpy()
_numpy_loops.hand_over_exp()
_numpy_loops.hand_over_log1p()
_numpy_loops.hand_over_arcsinh()
_numpy_loops.hand_over_arctan2()
_numpy_loops.hand_over_tanh()
_numpy_loops.hand_over_cos()
