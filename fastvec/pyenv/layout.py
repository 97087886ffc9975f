"""Spaces as flat lists of fixed-size leaves, and the shared-memory layout built from them.

Both the parent and every worker build the same :class:`Buffers` over one
shared mapping from the same :class:`Layout`, so an array here is the same
bytes in every process. Rows are indexed by env id (not by batch position):
a worker writes env ``e``'s results into row ``e``, and the parent copies the
rows of a batch out into fresh arrays that then belong to the caller.
"""

from __future__ import annotations

import math
import os
import select
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces.utils import is_space_dtype_shape_equiv

_ALIGN = 64

# Per-worker control words (one 64-byte line per worker in Buffers.ctrl).
REQ_HEAD = 0  #: requests appended by the parent (written by the parent only)
COMP_HEAD = 1  #: results published by the worker (written by the worker only)
SHUTDOWN = 2  #: set by the parent: the worker exits at the next env boundary

# Per-env operation codes (Buffers.op), written by the parent before a request.
OP_STEP = 1
OP_RESET = 2  #: env.reset(seed=...), no options
OP_RESET_EMPTY = 3  #: env.reset(seed=..., options={}): the user's options held only the pool's own keys
OP_RESET_OPTIONS = 4  #: env.reset(seed=..., options=...), the options from a RESET_OPTIONS message on the call pipe

# The kind of a call-pipe request that carries reset options (per target env: its id and its pickled options)
# rather than an env call; the parent writes it whole before it sends the resets, and no reply comes back.
RESET_OPTIONS = "reset_options"
# Likewise for the values of an action's dynamic leaves (per target env: its id and its pickled values), written
# whole before the steps are sent.
ACTIONS = "actions"

# Per-env result flags (Buffers.flags), written by the worker.
HAS_INFO = 1  #: a message with the env's info dict(s) is on the worker's side channel
HAS_ERROR = 2  #: the env raised (or returned what its space cannot hold); the message says what

# A side-channel message: a header (key, payload size), then the pickled payload. The key is the env id
# for an env's message, so that the parent files it by env without unpickling it; start-up messages
# (spaces, ready, init_error) and then the replies to env calls carry the key -1 - worker index. A request
# on a worker's call pipe has the same header, its key being the call's sequence number.
MESSAGE_HEADER = struct.Struct("<qQ")


@dataclass(frozen=True)
class Leaf:
    """One fixed-size array inside a (possibly nested) space."""

    path: tuple[Any, ...]  #: keys (Dict) and indices (Tuple) from the root space to this leaf
    shape: tuple[int, ...]  #: shape of one env's value
    dtype: np.dtype
    scalar: bool  #: Discrete: one env's value is a numpy integer, not an array
    #: a space of no fixed size (Text, Graph, Sequence, OneOf, a custom Space): its values are pickled over the
    #: pipes, not kept in shared memory, and batched as gymnasium's vector envs batch them, a tuple of objects
    dynamic: bool = False


def leaves(space: gym.Space, path: tuple[Any, ...] = ()) -> list[Leaf]:
    """The leaves of ``space`` in a fixed order; a TypeError for what is not a gymnasium Space."""
    if isinstance(space, gym.spaces.Box):
        return [Leaf(path, tuple(space.shape), np.dtype(space.dtype), False)]
    if isinstance(space, gym.spaces.Discrete):
        return [Leaf(path, (), np.dtype(space.dtype), True)]
    if isinstance(space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        return [Leaf(path, tuple(space.shape), np.dtype(space.dtype), False)]
    if isinstance(space, gym.spaces.Dict):
        return [leaf for key, sub in space.spaces.items() for leaf in leaves(sub, (*path, key))]
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for i, sub in enumerate(space.spaces) for leaf in leaves(sub, (*path, i))]
    if isinstance(space, gym.spaces.Space):  # as gymnasium's batch_space batches any other Space
        return [Leaf(path, (), np.dtype(object), False, True)]
    raise TypeError(f"{space!r} is a {type(space).__name__}, not a gymnasium.spaces.Space")


class SpacesDiffer(ValueError, RuntimeError):
    """Envs whose spaces cannot share one batch: a ValueError, as fastvec refuses arguments that cannot work, and
    the RuntimeError gymnasium's vector envs raise for it."""


def check_spaces(obs_spaces: list[gym.Space], act_spaces: list[gym.Space], observation_mode: str) -> None:
    """Checks that every env's spaces can share the layout of env 0's, as gymnasium's vector envs check them:
    action spaces equal; observation spaces equal (``observation_mode="same"``) or of one type, shape and dtype
    (``"different"``, batched as env 0's). A TypeError for env 0's spaces the pool cannot lay out, a SpacesDiffer
    (ValueError and RuntimeError) naming the first env that differs and both spaces."""
    for kind, space in (("observation_space", obs_spaces[0]), ("action_space", act_spaces[0])):
        try:
            leaves(space)
        except TypeError as exc:
            raise TypeError(f"env 0's {kind} {space} cannot be batched: {exc}") from None
    want_obs, want_act = obs_spaces[0], act_spaces[0]
    passed = {id(want_obs), id(want_act)}  # the space objects checked already (the workers send each once)
    for e in range(1, len(obs_spaces)):
        obs, act = obs_spaces[e], act_spaces[e]
        if id(act) not in passed:
            if act != want_act:
                raise SpacesDiffer(
                    f"env {e} has action_space {act}, but env 0 has {want_act}: every env of a pool must share its "
                    "action space (as in gymnasium's vector envs, whatever their observation_mode)"
                )
            passed.add(id(act))
        if id(obs) in passed:
            continue
        if observation_mode == "same" and obs != want_obs:
            raise SpacesDiffer(
                f"env {e} has observation_space {obs}, but env 0 has {want_obs}: every env of a pool must share its "
                "spaces with observation_mode='same' (the default, as gymnasium's); observation_mode='different' "
                "takes observation spaces that differ in their bounds but share type, shape and dtype"
            )
        if observation_mode == "different" and not _same_layout(want_obs, obs):
            raise SpacesDiffer(
                f"env {e} has observation_space {obs}, but env 0 has {want_obs}: with observation_mode='different' "
                "the envs' observation spaces must still share their type, shape and dtype (and Dict keys) to be "
                "batched as env 0's"
            )
        passed.add(id(obs))


def _same_layout(a: gym.Space, b: gym.Space) -> bool:
    """gymnasium's is_space_dtype_shape_equiv, and the same leaves (it would pass a Tuple with more items)."""
    try:
        if not is_space_dtype_shape_equiv(a, b):
            return False
        return {leaf.path: leaf for leaf in leaves(a)} == {leaf.path: leaf for leaf in leaves(b)}
    except (NotImplementedError, TypeError):  # a space it has no rule for, or one the pool cannot lay out
        return False


def flatten(space: gym.Space, value: Any, out: list[Any]) -> list[Any]:
    """Appends the leaf values of ``value`` (an element of ``space``) to ``out`` in :func:`leaves` order."""
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(value, Mapping):
            raise TypeError(f"expected a dict for {space}, got {type(value).__name__}")
        for key, sub in space.spaces.items():
            flatten(sub, value[key], out)
    elif isinstance(space, gym.spaces.Tuple):
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"expected a tuple for {space}, got {type(value).__name__}")
        for sub, v in zip(space.spaces, value, strict=True):
            flatten(sub, v, out)
    else:
        out.append(value)
    return out


def unflatten(space: gym.Space, values: list[Any], start: int = 0) -> tuple[Any, int]:
    """The element of ``space`` built from leaf values ``values[start:]``, and the next index."""
    if isinstance(space, gym.spaces.Dict):
        result = {}
        for key, sub in space.spaces.items():
            result[key], start = unflatten(sub, values, start)
        return result, start
    if isinstance(space, gym.spaces.Tuple):
        items = []
        for sub in space.spaces:
            item, start = unflatten(sub, values, start)
            items.append(item)
        return tuple(items), start
    return values[start], start + 1


def _is_leaf(space: gym.Space) -> bool:
    return not isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple))


def flattener(space: gym.Space) -> Callable[[Any, list[Any]], None]:
    """:func:`flatten` for one space, compiled once: ``f(value, out)`` appends what ``flatten(space, value, out)``
    appends and raises what it raises, without walking the space again (a worker flattens every observation)."""
    if isinstance(space, gym.spaces.Dict):
        subs = [(key, None if _is_leaf(sub) else flattener(sub)) for key, sub in space.spaces.items()]

        def flat_dict(value: Any, out: list[Any]) -> None:
            if type(value) is not dict and not isinstance(value, Mapping):
                raise TypeError(f"expected a dict for {space}, got {type(value).__name__}")
            for key, sub in subs:
                if sub is None:
                    out.append(value[key])
                else:
                    sub(value[key], out)

        return flat_dict
    if isinstance(space, gym.spaces.Tuple):
        items = [None if _is_leaf(sub) else flattener(sub) for sub in space.spaces]

        def flat_tuple(value: Any, out: list[Any]) -> None:
            if not isinstance(value, (tuple, list)):
                raise TypeError(f"expected a tuple for {space}, got {type(value).__name__}")
            for sub, v in zip(items, value, strict=True):
                if sub is None:
                    out.append(v)
                else:
                    sub(v, out)

        return flat_tuple
    return lambda value, out: out.append(value)


def unflattener(space: gym.Space) -> Callable[[Iterator[Any]], Any]:
    """:func:`unflatten` for one space, compiled once: ``f(iter(values))`` is ``unflatten(space, values)[0]``."""
    if isinstance(space, gym.spaces.Dict):
        keys = list(space.spaces)
        if all(_is_leaf(sub) for sub in space.spaces.values()):
            # zip asks keys first, so it takes no more values than there are keys
            return lambda it: dict(zip(keys, it, strict=False))
        subs = [(key, unflattener(sub)) for key, sub in space.spaces.items()]
        return lambda it: {key: sub(it) for key, sub in subs}
    if isinstance(space, gym.spaces.Tuple):
        items = [unflattener(sub) for sub in space.spaces]
        return lambda it: tuple([sub(it) for sub in items])
    return next


@dataclass(frozen=True)
class Layout:
    """Sizes of everything in the shared mapping; picklable, sent to every worker."""

    num_envs: int
    num_workers: int
    ring: int  #: capacity of each worker's request and result rings (its number of envs)
    obs: tuple[Leaf, ...]
    act: tuple[Leaf, ...]
    final_obs: bool  #: same_step autoreset keeps the finished episode's last observation

    def arrays(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        n, w = self.num_envs, self.num_workers
        out: list[tuple[str, tuple[int, ...], np.dtype]] = [
            ("ctrl", (w, _ALIGN // 8), np.dtype(np.int64)),
            ("req_ring", (w, self.ring), np.dtype(np.int32)),
            ("comp_ring", (w, self.ring), np.dtype(np.int32)),
            ("op", (n,), np.dtype(np.uint8)),
            ("seed", (n,), np.dtype(np.uint64)),
            ("seeded", (n,), np.dtype(np.bool_)),
            ("flags", (n,), np.dtype(np.uint8)),
            ("reward", (n,), np.dtype(np.float64)),  # as the env returned it (gymnasium's vector envs: float64)
            ("terminated", (n,), np.dtype(np.bool_)),
            ("truncated", (n,), np.dtype(np.bool_)),
            ("ended", (n,), np.dtype(np.bool_)),
            ("episode_return", (n,), np.dtype(np.float64)),
            ("episode_length", (n,), np.dtype(np.int32)),
        ]
        # (dynamic leaves have no array: Buffers.obs, act and final_obs hold the fixed leaves' only)
        out += [(f"obs{i}", (n, *leaf.shape), leaf.dtype) for i, leaf in enumerate(self.obs) if not leaf.dynamic]
        out += [(f"act{i}", (n, *leaf.shape), leaf.dtype) for i, leaf in enumerate(self.act) if not leaf.dynamic]
        if self.final_obs:
            out += [
                (f"final_obs{i}", (n, *leaf.shape), leaf.dtype) for i, leaf in enumerate(self.obs) if not leaf.dynamic
            ]
        return out

    @property
    def size(self) -> int:
        offset = 0
        for _, shape, dtype in self.arrays():
            offset = _aligned(offset) + math.prod(shape) * dtype.itemsize
        return max(_aligned(offset), _ALIGN)


class Buffers:
    """Numpy views of the shared mapping, by name (``ctrl``, ``obs0``, ``reward``, ...)."""

    # The views that Layout.arrays() names, set by __init__ (obs0, act0, ... are also listed in obs, act, final_obs).
    ctrl: np.ndarray
    req_ring: np.ndarray
    comp_ring: np.ndarray
    op: np.ndarray
    seed: np.ndarray
    seeded: np.ndarray
    flags: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    ended: np.ndarray
    episode_return: np.ndarray
    episode_length: np.ndarray

    def __init__(self, layout: Layout, buffer: Any) -> None:
        offset = 0
        self.obs: list[np.ndarray] = []
        self.act: list[np.ndarray] = []
        self.final_obs: list[np.ndarray] = []
        for name, shape, dtype in layout.arrays():
            offset = _aligned(offset)
            count = math.prod(shape)
            view = np.frombuffer(buffer, dtype=dtype, count=count, offset=offset).reshape(shape)
            offset += count * dtype.itemsize
            setattr(self, name, view)
            for prefix in ("final_obs", "obs", "act"):
                if name.startswith(prefix) and name[len(prefix) :].isdigit():
                    getattr(self, prefix).append(view)
                    break

    def release(self) -> None:
        """Drops every view, so that the mapping can be closed."""
        self.__dict__.clear()


def leaf_spaces(space: gym.Space) -> list[gym.Space]:
    """The leaf spaces of ``space`` in :func:`leaves` order."""
    if isinstance(space, gym.spaces.Dict):
        return [leaf for sub in space.spaces.values() for leaf in leaf_spaces(sub)]
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for sub in space.spaces for leaf in leaf_spaces(sub)]
    return [space]


def send_message(fd: int, key: int, payload: bytes) -> None:
    """Writes one side-channel message to the (blocking) pipe ``fd``; returns once all of it is in the pipe."""
    view = memoryview(MESSAGE_HEADER.pack(key, len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


def _aligned(offset: int) -> int:
    return (offset + _ALIGN - 1) // _ALIGN * _ALIGN


def wait_readable(fds: list[int], timeout: float) -> set[int]:
    """The fds among ``fds`` that are readable (or hung up) within ``timeout`` seconds.

    poll, not select: select.select refuses file descriptors numbered 1024 or more, which a
    process that also runs other pools (or many subprocesses) reaches.
    """
    return wait_ready(fds, [], timeout)


def wait_ready(readable: list[int], writable: list[int], timeout: float) -> set[int]:
    """The fds among ``readable`` that are readable and among ``writable`` that have room (either: or hung
    up) within ``timeout`` seconds. An fd in both lists counts as ready for either."""
    poller = select.poll()
    events: dict[int, int] = {}
    for fd in readable:
        events[fd] = events.get(fd, 0) | select.POLLIN | select.POLLHUP | select.POLLERR
    for fd in writable:
        events[fd] = events.get(fd, 0) | select.POLLOUT | select.POLLHUP | select.POLLERR
    for fd, mask in events.items():
        poller.register(fd, mask)
    return {fd for fd, _ in poller.poll(max(0, int(timeout * 1000)))}
