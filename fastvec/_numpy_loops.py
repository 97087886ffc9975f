"""numpy's own float64 ``exp``, ``log1p``, ``arcsinh``, ``tanh`` and ``cos`` loops, handed to the compiled module so
that the native envs compute ``np.exp`` (MPE, dm_control's rewards), ``np.log1p`` (dm_control's hopper),
``np.arcsinh``, ``np.tanh`` and ``np.cos`` (dm_control's quadruped) as numpy does in this process: numpy picks its
kernel by CPU (SVML's on AVX-512 CPUs), which differs from libm's in the last bit for about 5% of arguments.

The loop is read from the ``np.exp`` ufunc object (``PyUFuncObject``'s ``functions``, ``data``, ``ntypes`` and
``types``, whose layout numpy has kept since 1.x) and checked against ``np.exp`` before it is handed over;
if it cannot be found or disagrees, the envs keep libm's."""

from __future__ import annotations

import ctypes

import numpy as np

from fastvec import _core


class _UFunc(ctypes.Structure):
    _fields_ = [
        ("ob_refcnt", ctypes.c_ssize_t),
        ("ob_type", ctypes.c_void_p),
        ("nin", ctypes.c_int),
        ("nout", ctypes.c_int),
        ("nargs", ctypes.c_int),
        ("identity", ctypes.c_int),
        ("functions", ctypes.POINTER(ctypes.c_void_p)),
        ("data", ctypes.POINTER(ctypes.c_void_p)),
        ("ntypes", ctypes.c_int),
        ("reserved1", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("types", ctypes.POINTER(ctypes.c_char)),
    ]


_Loop = ctypes.CFUNCTYPE(
    None,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.POINTER(ctypes.c_ssize_t),
    ctypes.POINTER(ctypes.c_ssize_t),
    ctypes.c_void_p,
)


def float64_loop(ufunc: np.ufunc, nin: int = 1) -> tuple[int, int] | None:
    """The address and data of ``ufunc``'s loop of ``nin`` float64s -> float64, or None if it has none."""
    u = _UFunc.from_address(id(ufunc))
    if u.nin != nin or u.nout != 1 or u.name != ufunc.__name__.encode():
        return None
    double = np.dtype(np.float64).num
    for k in range(u.ntypes):
        if all(ord(u.types[(nin + 1) * k + j]) == double for j in range(nin + 1)):
            return u.functions[k], u.data[k] or 0
    return None


def call(loop: tuple[int, int], *x: float) -> float:
    """One float64 (or one of each argument) through ``loop``, as the compiled module calls it."""
    arrays = [np.array([v], dtype=np.float64) for v in x] + [np.empty(1, dtype=np.float64)]
    args = (ctypes.c_void_p * len(arrays))(*(a.ctypes.data for a in arrays))
    dims = (ctypes.c_ssize_t * 1)(1)
    steps = (ctypes.c_ssize_t * len(arrays))(*([8] * len(arrays)))
    _Loop(loop[0])(args, dims, steps, loop[1])
    return float(arrays[-1][0])


def hand_over_exp() -> None:
    loop = float64_loop(np.exp)
    probes = np.linspace(-3.0, 3.0, 257)
    if loop is not None and all(call(loop, x) == np.exp(x) for x in probes):
        _core.set_numpy_exp(*loop)


def hand_over_log1p() -> None:
    """np.log1p's loop to the dm_control envs (hopper's touch sensors), checked as :func:`hand_over_exp`'s."""
    loop = float64_loop(np.log1p)
    probes = np.linspace(0.0, 50.0, 257)
    if loop is not None and all(call(loop, x) == np.log1p(x) for x in probes):
        _core.set_numpy_log1p(*loop)


def hand_over_arcsinh() -> None:
    """np.arcsinh's loop to the dm_control envs (quadruped's force and torque sensors), checked likewise."""
    loop = float64_loop(np.arcsinh)
    probes = np.linspace(-50.0, 50.0, 257)
    if loop is not None and all(call(loop, x) == np.arcsinh(x) for x in probes):
        _core.set_numpy_arcsinh(*loop)


def hand_over_arctan2() -> None:
    """np.arctan2's loop to the dm_control envs (manipulator's object in hand), checked as :func:`hand_over_exp`'s."""
    loop = float64_loop(np.arctan2, nin=2)
    probes = np.linspace(-3.0, 3.0, 65)
    if loop is not None and all(call(loop, y, x) == np.arctan2(y, x) for y in probes for x in probes):
        _core.set_numpy_arctan2(*loop)


def hand_over_tanh() -> None:
    """np.tanh's loop to the dm_control envs (quadruped escape's rangefinders), checked as :func:`hand_over_exp`'s."""
    loop = float64_loop(np.tanh)
    probes = np.linspace(-5.0, 5.0, 257)
    if loop is not None and all(call(loop, x) == np.tanh(x) for x in probes):
        _core.set_numpy_tanh(*loop)


def hand_over_cos() -> None:
    """np.cos's loop to the dm_control envs (quadruped escape's terrain and upright reward), checked likewise."""
    loop = float64_loop(np.cos)
    probes = np.linspace(0.0, 7.0, 257)
    if loop is not None and all(call(loop, x) == np.cos(x) for x in probes):
        _core.set_numpy_cos(*loop)
