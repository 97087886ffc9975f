"""``xla()``: a native pool's ``send``, ``recv`` and ``step`` as XLA custom calls, for jitted JAX code
(``jax.jit``, ``jax.lax.scan``), as EnvPool's ``envs.xla()`` gives them (CleanRL's ``*_envpool_xla_jax*.py``).

The calls are the C++ handlers of ``fastvec._core`` (src/bindings/xla_ffi.cpp), registered with
``jax.ffi.register_ffi_target`` on first use. Each takes and returns a handle, an ``(8,)`` uint8 array that
threads the order of the calls through the computation (each call's handle is the previous call's result) and
that the pool checks: the handle of a closed pool, of another pool, or one already used is an error. The pool
steps in its own threads while XLA waits. JAX's CPU backend only, for now.

A front (``fastvec.VectorEnv``, ``fastvec.envpool``'s pools) gives :func:`make` a function that lays a batch
out as its Python ``recv`` does: ``(obs, reward, terminated, truncated, info)`` to what it returns.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import fastvec._core as _core

if TYPE_CHECKING:
    from fastvec.native import NativePool

XlaFunctions = namedtuple("XlaFunctions", ["handle", "recv", "send", "step"])
XlaFunctions.__doc__ = "What ``xla()`` returns, as EnvPool's: the first handle, then the three jittable calls."

_registered = False


def _jax() -> Any:
    try:
        import jax
    except ImportError:
        raise ImportError("xla() needs jax (CPU): pip install 'fastvec[xla]' (or pip install jax)") from None
    if not _core.has_xla:
        raise ImportError(
            "this build of fastvec has no xla(): jaxlib (which ships XLA FFI's header) was not installed where it "
            "was built; rebuild it with jaxlib installed (pip install jaxlib, then reinstall fastvec)"
        )
    backend = jax.default_backend()
    if backend != "cpu":
        raise RuntimeError(
            f"fastvec's xla() runs on JAX's CPU backend only for now; JAX's default backend here is {backend!r}. "
            "Run JAX on the CPU (JAX_PLATFORMS=cpu, or jax.config.update('jax_platforms', 'cpu') before any "
            "computation), or step the pool from Python"
        )
    global _registered
    if not _registered:
        for name, capsule in _core.xla_handlers().items():
            jax.ffi.register_ffi_target(f"fastvec_xla_{name}", capsule, platform="cpu", api_version=1)
        _registered = True
    return jax


def make(
    pool: NativePool,
    label: str,
    finish: Callable[[Any, Any, Any, Any, dict[str, Any]], Any],
    info_dtypes: dict[str, Any] | None = None,
) -> XlaFunctions:
    """The xla() of ``pool`` (:class:`fastvec.native.NativePool`; ``label`` names its front in messages):
    ``recv(handle) -> (handle, finish(obs, reward, terminated, truncated, info))``, ``send(handle, actions,
    env_id=None) -> handle`` and ``step(handle, actions, env_id=None)`` (send, then recv). ``info`` holds
    ``env_id``, the env's info fields and, when the env's info has masks, ``_name`` for each; ``info_dtypes``
    overrides a field's dtype. Arguments are checked when traced: a ValueError or TypeError naming them."""
    jax = _jax()
    jnp = jax.numpy
    pool_spec = pool.spec()
    if pool.closed:
        raise RuntimeError("the pool is closed")
    serial, calls = pool.xla_handle()
    num_envs, batch_size = pool.num_envs, pool.batch_size
    sync = num_envs == batch_size

    def struct(shape: tuple[int, ...], dtype: Any) -> Any:
        return jax.ShapeDtypeStruct(shape, jax.dtypes.canonicalize_dtype(np.dtype(dtype)))

    handle_struct = struct((8,), np.uint8)
    fields = pool_spec["info"]
    names = ["env_id"] + [f["name"] for f in fields]
    results = [
        handle_struct,
        struct((batch_size, *pool_spec["obs_shape"]), pool_spec["obs_dtype"]),
        struct((batch_size,), pool_spec["reward_dtype"]),
        struct((batch_size,), np.bool_),
        struct((batch_size,), np.bool_),
        struct((batch_size,), np.int32),
    ]
    for f in fields:
        shape = (batch_size,) if f["size"] == 1 else (batch_size, f["size"])
        results.append(struct(shape, (info_dtypes or {}).get(f["name"], f["dtype"])))
    if pool_spec["info_masks"]:
        names += [f"_{f['name']}" for f in fields]
        results += [struct((batch_size,), np.bool_) for _ in fields]
    attrs = {"pool": np.int64(serial)}
    aliases = {0: 0}  # the handle's buffer is reused for the next handle
    send_call = jax.ffi.ffi_call("fastvec_xla_send", handle_struct, has_side_effect=True, input_output_aliases=aliases)
    recv_call = jax.ffi.ffi_call("fastvec_xla_recv", results, has_side_effect=True, input_output_aliases=aliases)
    step_call = jax.ffi.ffi_call("fastvec_xla_step", results, has_side_effect=True, input_output_aliases=aliases)

    discrete = pool_spec["num_actions"] > 0
    action_shape = () if discrete else tuple(pool_spec["action_shape"])
    action_dtype = jax.dtypes.canonicalize_dtype(np.dtype(np.int64 if discrete else pool_spec["action_dtype"]))

    def check_handle(handle: Any) -> Any:
        handle = jnp.asarray(handle)
        if handle.shape != (8,) or handle.dtype != jnp.uint8:
            raise TypeError(
                f"handle must be the (8,) uint8 handle of {label}'s xla() (or the last call's), got "
                f"{handle.dtype}{list(handle.shape)}"
            )
        return handle

    def check_actions(actions: Any, env_id: Any) -> tuple[Any, Any]:
        actions = jnp.asarray(actions)
        rows = batch_size
        if env_id is None:
            if not sync:
                raise ValueError(
                    f"send(handle, actions) without env_id: {label} is async (batch_size {batch_size} < num_envs "
                    f"{num_envs}); pass the env_id of the rows the last recv returned"
                )
            ids = jnp.zeros((0,), jnp.int32)  # (no ids: every env, in env order)
        else:
            ids = jnp.asarray(env_id)
            if ids.ndim == 0:
                ids = ids.reshape(1)
            if ids.ndim != 1 or not jnp.issubdtype(ids.dtype, jnp.integer):
                raise TypeError(f"env_id must be a 1-D array of integers, got {ids.dtype}{list(ids.shape)}")
            if ids.shape[0] != batch_size:
                raise ValueError(f"env_id must name batch_size ({batch_size}) envs, got {ids.shape[0]}")
            ids = ids.astype(jnp.int32)
        expected = (rows, *action_shape)
        kind = "integers" if discrete else "real numbers"
        if discrete and not jnp.issubdtype(actions.dtype, jnp.integer):
            raise TypeError(
                f"actions for Discrete({pool_spec['num_actions']}) must be {kind}, got dtype {actions.dtype}"
            )
        if not discrete and not (
            jnp.issubdtype(actions.dtype, jnp.floating) or jnp.issubdtype(actions.dtype, jnp.integer)
        ):
            raise TypeError(f"actions for a Box space must be {kind}, got dtype {actions.dtype}")
        flat_1d = not discrete and int(np.prod(action_shape)) == 1 and actions.shape == (rows,)
        if actions.shape != expected and not flat_1d:
            raise ValueError(f"actions must have shape {expected}, got {tuple(actions.shape)}")
        return actions.astype(action_dtype), ids

    def unpack(out: Any) -> Any:
        handle, obs, reward, terminated, truncated, *info_values = out
        info = dict(zip(names, info_values, strict=True))
        return handle, finish(obs, reward, terminated, truncated, info)

    def recv(handle: Any) -> Any:
        """``(handle, batch)``: the next ``batch_size`` envs to finish, as the front's ``recv`` lays them out."""
        return unpack(recv_call(check_handle(handle), **attrs))

    def send(handle: Any, actions: Any, env_id: Any = None) -> Any:
        """Queues one step of the envs of ``env_id`` (a sync pool: every env if None); returns the next handle."""
        handle = check_handle(handle)
        actions, ids = check_actions(actions, env_id)
        return send_call(handle, actions, ids, **attrs)

    def step(handle: Any, actions: Any, env_id: Any = None) -> Any:
        """``recv(send(handle, actions, env_id))``, in one call."""
        handle = check_handle(handle)
        actions, ids = check_actions(actions, env_id)
        return unpack(step_call(handle, actions, ids, **attrs))

    first = np.frombuffer(np.array([serial, calls], dtype="<u4").tobytes(), dtype=np.uint8).copy()
    return XlaFunctions(first, recv, send, step)
