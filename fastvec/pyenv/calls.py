"""Env calls (``call``, ``get_attr``, ``set_attr``, the adapters' ``env_method``, ...) and reset options, as
requests on the workers' call pipes.

A request is framed as a side-channel message (see :data:`fastvec.pyenv.layout.MESSAGE_HEADER`) whose key is the
call's sequence number; a worker reads it whenever it waits for work, and answers an env call on its side pipe
under the key ``-1 - worker``, with the sequence number, so that the late answers of an interrupted call are
dropped. Reset options go the same way (key 0, no answer), written whole before the resets are sent.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from fastvec._args import SET_KINDS
from fastvec.pyenv.channel import Channel
from fastvec.pyenv.layout import ACTIONS, RESET_OPTIONS
from fastvec.pyenv.results import env_exception


def options_blob(options: dict[str, Any] | None) -> bytes | None:
    """Reset options pickled for the workers (None for no options or an empty dict, which need no message);
    a TypeError before anything is sent if they cannot be pickled."""
    if not options:
        return None
    import cloudpickle

    try:
        return cloudpickle.dumps(options, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise TypeError(
            f"the reset options cannot be pickled to be sent to the envs' worker processes: {type(exc).__name__}: {exc}"
        ) from exc


class EnvCalls:
    """The requests of one pool on its workers' call pipes (``worker_of``: each env's worker)."""

    def __init__(self, channel: Channel, worker_of: np.ndarray) -> None:
        self._channel = channel
        self._worker_of = worker_of
        self._seq = 0  # the sequence number of the last env call

    def call(self, ids: list[int], kind: str, name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        """Runs ``kind`` of attribute ``name`` on each env of ``ids`` in its worker and returns the results in that
        order, or raises the first env's exception (see :meth:`fastvec.pyenv.pool.PyEnvPool.env_call`)."""
        blobs = _call_blobs(kind, name, args, kwargs, len(ids))
        self._seq += 1
        seq = self._seq
        rows: dict[int, list[int]] = {}  # per worker, the positions in ids of its envs
        for r, e in enumerate(ids):
            rows.setdefault(int(self._worker_of[e]), []).append(r)
        for w, mine in rows.items():
            payload = pickle.dumps((kind, name, [(ids[r], blobs[r]) for r in mine]), pickle.HIGHEST_PROTOCOL)
            self._channel.queue_request(w, seq, payload)
        self._channel.write_requests(list(rows))
        replies: list[tuple] = [()] * len(ids)
        for w, mine in rows.items():
            for r, reply in zip(mine, self._await_reply(w, seq), strict=True):
                replies[r] = reply
        return [_call_result(e, kind, name, reply) for e, reply in zip(ids, replies, strict=True)]

    def send_reset_options(self, ids: np.ndarray, blob: bytes) -> None:
        """Writes the reset options ``blob`` (see :func:`options_blob`) of envs ``ids`` whole into their workers'
        call pipes: a worker reads them there when it comes to the reset."""
        owner = self._worker_of[ids]
        workers = np.unique(owner).tolist()
        for w in workers:
            targets = [(e, blob) for e in ids[owner == w].tolist()]
            payload = pickle.dumps((RESET_OPTIONS, "", targets), pickle.HIGHEST_PROTOCOL)
            self._channel.queue_request(w, 0, payload)
        self._channel.write_requests(workers)

    def send_actions(self, ids: np.ndarray, blobs: list[bytes]) -> None:
        """Writes each env's pickled dynamic action values (``blobs``, in ``ids``' order) whole into its worker's
        call pipe, before its step is requested: the worker reads them there when it comes to the step."""
        owner = self._worker_of[ids]
        targets: dict[int, list[tuple[int, bytes]]] = {}
        for e, w, blob in zip(ids.tolist(), owner.tolist(), blobs, strict=True):
            targets.setdefault(w, []).append((e, blob))
        for w, mine in targets.items():
            self._channel.queue_request(w, 0, pickle.dumps((ACTIONS, "", mine), pickle.HIGHEST_PROTOCOL))
        self._channel.write_requests(list(targets))

    def _await_reply(self, w: int, seq: int) -> list[tuple]:
        """Worker ``w``'s per-env replies to env call ``seq`` (a reply to an earlier call that an exception
        interrupted is dropped)."""
        while True:
            got, replies = pickle.loads(self._channel.take(w, -1 - w))
            if got == seq:
                return replies


def _call_blobs(kind: str, name: str, args: tuple, kwargs: dict[str, Any], n: int) -> list[bytes]:
    """Each target env's pickled ``(args, kwargs)`` (the same bytes when they are shared: each env unpickles
    its own copy); a TypeError before anything is sent if they cannot be pickled."""
    import cloudpickle

    try:
        if kind not in SET_KINDS:
            return [cloudpickle.dumps((args, kwargs), pickle.HIGHEST_PROTOCOL)] * n
        if all(v is args[0] for v in args):
            return [cloudpickle.dumps(((args[0],), {}), pickle.HIGHEST_PROTOCOL)] * n
        return [cloudpickle.dumps(((v,), {}), pickle.HIGHEST_PROTOCOL) for v in args]
    except Exception as exc:
        what = "the value" if kind in SET_KINDS else "the arguments"
        raise TypeError(
            f"{what} for {name!r} cannot be pickled to be sent to the envs' worker processes: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _call_result(e: int, kind: str, name: str, reply: tuple) -> Any:
    """Env ``e``'s result of an env call, unpickled, or its exception raised."""
    what = f"{kind} {name!r}" if kind != "is_wrapped" else "is_wrapped"
    if reply[0] == "ok":
        try:
            return pickle.loads(reply[1])
        except Exception as exc:
            raise pickle.UnpicklingError(
                f"env {e}: the result of {what} was pickled in its worker but cannot be unpickled here: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    if reply[0] == "unpicklable":
        raise pickle.PicklingError(
            f"env {e}: the result of {what} (a {reply[1]}) cannot be pickled to be sent back from its worker "
            f"process: {reply[2]}"
        )
    raise env_exception(e, what, *reply[1:])
