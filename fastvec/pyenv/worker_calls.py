"""The worker's side of env calls, and how a worker reports an env's exception.

Env calls (``VectorEnv.call``, ``get_attr``, ``set_attr``, the adapters' ``env_method``, ...): each kind of
:data:`fastvec._args.ENV_CALL_KINDS` run on one env as the upstream vector env it stands for runs it, and the
reply the worker sends back (:func:`call_env`). The parent's side, the framed requests and the matching of
replies, is :mod:`fastvec.pyenv.calls`.

An env's exception, in an env call or in a step or reset (:func:`error_report`): pickled when it can travel, so
that the parent raises it with its own type, with its type name, message and the traceback from the env's
frames on; :func:`fastvec.pyenv.results.env_exception` rebuilds it in the parent.
"""

from __future__ import annotations

import pickle
import traceback
from collections.abc import Callable
from typing import Any


def _get(env: Any, name: str) -> Any:
    """``env.get_wrapper_attr(name)``: the attribute of the outermost wrapper that has it (plain getattr for an
    env that is not a gymnasium.Env)."""
    get = getattr(env, "get_wrapper_attr", None)
    return get(name) if get is not None else getattr(env, name)


def _call(env: Any, name: str, args: tuple, kwargs: dict) -> Any:
    attr = _get(env, name)
    return attr(*args, **kwargs) if callable(attr) else attr


def _set(env: Any, name: str, args: tuple, kwargs: dict) -> None:
    setter = getattr(env, "set_wrapper_attr", None)
    if setter is not None:
        setter(name, args[0])
    else:
        setattr(env, name, args[0])


def _is_wrapped(env: Any, name: str, args: tuple, kwargs: dict) -> bool:
    """SB3's ``env_util.is_wrapped``: whether a gymnasium.Wrapper of class ``args[0]`` is in the env's chain."""
    import gymnasium as gym

    while isinstance(env, gym.Wrapper):
        if isinstance(env, args[0]):
            return True
        env = env.env
    return False


# The kinds of fastvec._args.ENV_CALL_KINDS, each as the upstream vector env it stands for runs it.
_ENV_CALLS: dict[str, Callable[[Any, str, tuple, dict], Any]] = {
    "get": lambda env, name, args, kwargs: _get(env, name),
    "call": _call,
    "method": lambda env, name, args, kwargs: _get(env, name)(*args, **kwargs),
    "set": _set,
    "set_outer": lambda env, name, args, kwargs: setattr(env, name, args[0]),
    "set_unwrapped": lambda env, name, args, kwargs: setattr(env.unwrapped, name, args[0]),
    "is_wrapped": _is_wrapped,
}


def call_env(env: Any, kind: str, name: str, blob: bytes) -> tuple:
    """Runs one env call; its reply: ``("ok", pickled result)``, ``("error", pickled exception or None, type name,
    message, traceback)`` or ``("unpicklable", type name of the result, why)``."""
    try:
        args, kwargs = pickle.loads(blob)  # per env: each env gets its own copy of the arguments
        value = _ENV_CALLS[kind](env, name, args, kwargs)
    except Exception as exc:
        return ("error", *error_report(exc, __file__))
    try:
        return ("ok", _dumps(value))
    except Exception as exc:
        return ("unpicklable", _type_name(type(value)), f"{type(exc).__name__}: {exc}")


def error_report(exc: BaseException, caught_in: str) -> tuple[bytes | None, str, str, str]:
    """What the parent needs to raise ``exc`` again (:func:`fastvec.pyenv.results.env_exception`): the exception
    pickled (None when it cannot travel), its type name, its message and its traceback from the env's frames on,
    leaving out the frames of ``caught_in``, the ``__file__`` of the module that caught it."""
    try:
        exc_blob: bytes | None = _dumps(exc)
    except Exception:
        exc_blob = None
    return exc_blob, _type_name(type(exc)), _text(exc), _trace(exc, caught_in)


def _trace(exc: BaseException, caught_in: str) -> str:
    """The traceback of ``exc`` from the env's frames on (all of it if it has none). A function of its own: a
    local that holds a traceback in the frame that caught it would keep that frame, and the frames above it
    (the loop's, with its views of the shared mapping), alive in a reference cycle."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == caught_in:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


def _dumps(value: Any) -> bytes:
    """``value`` pickled for the parent: by pickle (the faster), or by cloudpickle what pickle cannot
    do (a lambda; an instance of a class defined in the main script, which cloudpickle sent by value)."""
    try:
        return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    except Exception:
        import cloudpickle

        return cloudpickle.dumps(value, pickle.HIGHEST_PROTOCOL)


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return "<its str() failed>"


def _type_name(cls: type) -> str:
    module = getattr(cls, "__module__", "")
    return cls.__qualname__ if module in ("builtins", "") else f"{module}.{cls.__qualname__}"
