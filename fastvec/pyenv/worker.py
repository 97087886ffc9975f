"""The worker process: owns envs ``lo..hi-1``, steps those the parent requests.

Start-up: the worker makes its envs and sends their spaces, and the first one's metadata, spec and render mode,
to the parent over its side channel (so that no env constructor ever runs in the parent: one that crashes takes
only its worker down). The parent checks every env's spaces against env 0's, sizes the shared mapping and sends
the :class:`Layout` and the pool's spaces over the wake pipe; the worker maps it and says "ready". Every worker
reads and writes its envs' values by the pool's spaces (env 0's), so that spaces that compare equal but list
their Dict keys in another order, or that differ in bounds (``observation_mode="different"``), share one layout.

Protocol (in shared memory, see :mod:`fastvec.pyenv.layout`, but for dynamic leaves): the parent
writes an env's action row and op code, appends the env id to this worker's
request ring and advances ``REQ_HEAD``, then writes one byte to the wake
pipe. The worker steps the env, writes its result row, appends the env id to
its result ring, advances ``COMP_HEAD`` and writes one byte to the shared
results pipe. Both sides spin briefly on the counters before they block on the
pipe, and recheck the counters after every wake-up, so a byte is a hint and
never the only record of work. Info dicts and errors (rare) go over the
side channel, keyed by env id, and are entirely in the pipe before the result is published.

Dynamic leaves (Text, Graph, Sequence, OneOf, custom spaces: no fixed size) take the pipes instead of shared
memory, as gymnasium's AsyncVectorEnv(shared_memory=False) sends them: an observation's values travel in the
env's side-channel message (then every result has one), an action's in an ACTIONS request on the call pipe,
written whole before the step is requested. A pool without dynamic leaves never does either.

Env calls (``VectorEnv.call``, ``get_attr``, ``set_attr`` and the adapters' ``env_method``, ...): the parent
writes a framed request to this worker's call pipe (header: the call's sequence number and size; payload:
the kind, the attribute name, and per target env its id and its pickled arguments); the worker reads it
whenever it waits for requests (so after the steps already asked of it) and without blocking (a request
in pieces waits for the rest), runs it on each target env in order (:mod:`fastvec.pyenv.worker_calls`) and
answers with one side-channel message keyed ``-1 - index``: the sequence number and, per env, its pickled result
or its exception.

Each side writes its data before the counter that publishes it and reads the
counter before the data; that is enough on x86 (stores are seen in program
order). A weakly ordered CPU (ARM) would need a fence between the two when a
side found the counter by spinning rather than after a blocking syscall.
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import time
import traceback
from multiprocessing import parent_process, reduction
from typing import Any

import gymnasium as gym
import numpy as np

from fastvec.pyenv.layout import (
    ACTIONS,
    COMP_HEAD,
    HAS_ERROR,
    HAS_INFO,
    MESSAGE_HEADER,
    OP_RESET,
    OP_RESET_EMPTY,
    OP_STEP,
    REQ_HEAD,
    RESET_OPTIONS,
    SHUTDOWN,
    Buffers,
    Layout,
    Leaf,
    flattener,
    leaf_spaces,
    send_message,
    unflattener,
    wait_readable,
)
from fastvec.pyenv.worker_calls import call_env, error_report

SPIN_SECONDS = 50e-6  # how long a worker polls for the next request before it blocks


class SharedFd:
    """A file descriptor that survives the spawn and forkserver start methods (sent with the
    process arguments as multiprocessing sends a Connection's); under fork it is inherited."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self):
        return _rebuild_fd, (reduction.DupFd(self.fd),)


def _rebuild_fd(dup: Any) -> SharedFd:
    return SharedFd(dup.detach())


class BadObservation(ValueError):
    """An env returned an observation its observation_space cannot hold; the message says what and where."""


# The dynamic spaces whose contains() the worker asks (see _Worker._check_object).
_CHECKED_SPACES = (gym.spaces.Text, gym.spaces.Graph, gym.spaces.Sequence, gym.spaces.OneOf)


def _loads(blob: bytes) -> Any:
    import cloudpickle

    return cloudpickle.loads(blob)


def _spaces_message(envs: list, lo: int) -> bytes:
    """What the parent needs of the envs: each env's spaces (per kind, the distinct spaces and the index of each
    env's among them: a thousand envs of one image space send it once), and the first one's metadata, spec and
    render mode (cloudpickled: a spec's entry point may be a lambda; a spec that cannot be pickled at all is left
    out)."""
    import cloudpickle

    spaces = {kind: _distinct([_declared_space(env, lo + k, kind) for k, env in enumerate(envs)]) for kind in _KINDS}
    env = envs[0]
    metadata = dict(getattr(env, "metadata", None) or {})
    spec = getattr(env, "spec", None)
    render_mode = getattr(env, "render_mode", None)
    obs, act = spaces["observation_space"], spaces["action_space"]
    try:
        return cloudpickle.dumps(("spaces", obs, act, metadata, spec, render_mode))
    except Exception:
        return cloudpickle.dumps(("spaces", obs, act, metadata, None, render_mode))


_KINDS = ("observation_space", "action_space")


def _distinct(spaces: list) -> tuple[list, list[int]]:
    """The distinct spaces among ``spaces`` and, per space, the index of its own among them. Spaces are told apart
    by their pickled bytes (== compares a Box's bounds with np.allclose: slow for images); two equal spaces that
    pickle differently (one's sampler seeded) are both sent, and the parent compares them."""
    distinct: list = []
    index: list[int] = []
    by_bytes: dict[bytes, int] = {}
    for space in spaces:
        try:
            key: bytes | None = pickle.dumps(space, pickle.HIGHEST_PROTOCOL)
        except Exception:  # (cloudpickle sends it)
            key = None
        i = by_bytes.get(key) if key is not None else None
        if i is None:
            i = len(distinct)
            distinct.append(space)
            if key is not None:
                by_bytes[key] = i
        index.append(i)
    return distinct, index


def _declared_space(env: Any, e: int, kind: str) -> Any:
    """Env ``e``'s ``kind`` (observation_space or action_space), which the pool needs to lay out its shared memory
    (gymnasium's vector envs need both too); an AttributeError or TypeError naming the env otherwise."""
    try:
        space = getattr(env, kind)
    except AttributeError as exc:
        raise AttributeError(
            f"env {e} ({type(env).__name__}) has no {kind} ({exc}): the Python-env pool needs each env's "
            "observation_space and action_space, as gymnasium's vector envs do; set them in its __init__"
        ) from None
    if not isinstance(space, gym.spaces.Space):
        raise TypeError(
            f"env {e} ({type(env).__name__}) has {kind} {space!r}, a {type(space).__name__}: it must be a "
            "gymnasium.spaces.Space"
        )
    return space


def run(
    index: int,
    lo: int,
    hi: int,
    env_fns_blob: bytes,
    memfd: SharedFd,
    wake_r: Any,
    results_w: Any,
    side_w: Any,
    call_r: Any,
    config: dict[str, Any],
) -> None:
    """Entry point of worker ``index`` (the target of its multiprocessing.Process)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it closes us
    side_fd = side_w.fileno()
    key = -1 - index  # the key of this worker's start-up messages
    envs: list = []
    try:
        env_fns = _loads(env_fns_blob)
        envs = [fn() for fn in env_fns]
        _refuse_shared_instances(envs, lo)
        send_message(side_fd, key, _spaces_message(envs, lo))
        received = _receive_layout(wake_r)
        if received is None:  # the parent gave up (another worker failed, or Ctrl-C): nothing to do
            _close_envs(envs)
            return
        layout, (obs_space, act_space) = received[0], _loads(received[1])
        mm = mmap.mmap(memfd.fd, layout.size)
        os.close(memfd.fd)
    except BaseException as exc:  # every failure is reported to the parent
        try:
            send_message(
                side_fd, key, pickle.dumps(("init_error", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
            )
        except OSError:  # the parent gave up on the pool already (another worker failed first)
            pass
        _close_envs(envs)
        return
    buffers = Buffers(layout, mm)
    try:
        send_message(side_fd, key, pickle.dumps(("ready", os.getpid())))
        spaces = (obs_space, act_space)
        _Worker(index, lo, envs, spaces, buffers, layout, wake_r, results_w, side_fd, call_r, config).loop()
    except (BrokenPipeError, ConnectionResetError):
        # The parent closed its ends of the pipes: it is closing the pool (close() with envs in flight) or it
        # died. Nobody is left to tell, and a traceback on the user's terminal would be noise: exit quietly.
        pass
    finally:
        _close_envs(envs)
        buffers.release()  # (the loop's views went with its frame, unless a traceback still holds them:
        try:  # then the mapping goes when the process exits, a moment later)
            mm.close()
        except BufferError:
            pass


def _refuse_shared_instances(envs: list, lo: int) -> None:
    """SB3's DummyVecEnv check: constructors that return one instance would step one env as several."""
    first: dict[int, int] = {}
    for k, env in enumerate(envs):
        k0 = first.setdefault(id(getattr(env, "unwrapped", env)), k)
        if k0 != k:
            raise ValueError(
                f"envs {lo + k0} and {lo + k} are the same instance: you tried to create multiple environments, but "
                "the function to create them returned the same instance instead of creating different objects. You "
                "are probably using `fastvec.make(lambda: env, n)` or `fastvec.make([lambda: env] * n)`. Replace "
                "`lambda: env` by a function that creates a new instance of the environment at every call (using "
                "`gym.make()` for instance)"
            )


def _receive_layout(wake_r: Any) -> tuple[Layout, bytes] | None:
    """The layout and the pool's observation and action spaces (cloudpickled), which the parent sends over the wake
    pipe once every worker has made its envs; None if the parent closed the pipe or died instead."""
    parent = parent_process()
    fds = [wake_r.fileno()] if parent is None else [wake_r.fileno(), parent.sentinel]
    while True:
        ready = wait_readable(fds, 1.0)
        if parent is not None and parent.sentinel in ready:
            return None
        if ready:
            try:
                return wake_r.recv()
            except EOFError:
                return None


def _close_envs(envs: list) -> None:
    for env in envs:
        try:
            env.close()
        except Exception:
            pass


class _Worker:
    def __init__(
        self,
        index: int,
        lo: int,
        envs: list,
        spaces: tuple[Any, Any],
        b: Buffers,
        layout: Layout,
        wake_r: Any,
        results_w: Any,
        side_fd: int,
        call_r: Any,
        config: dict[str, Any],
    ) -> None:
        self.index, self.lo, self.envs, self.b = index, lo, envs, b
        self.ring = layout.ring
        self.wake_fd = wake_r.fileno()
        self.results_fd = results_w.fileno()
        os.set_blocking(self.results_fd, False)
        self.side_fd = side_fd
        self.call_fd = call_r.fileno()
        os.set_blocking(self.call_fd, False)
        self.call_buf = bytearray()  # what the call pipe held of requests not yet whole
        self.reset_options: dict[int, bytes] = {}  # by env id: the pickled options of its next reset
        self.actions: dict[int, bytes] = {}  # by env id: its next action's dynamic leaves, pickled
        self.keep = (wake_r, results_w, call_r)  # keeps the fds open
        self.mode = config["autoreset_mode"]
        self.spin = config["spin_seconds"]
        self.max_steps = config["max_episode_steps"] or 0
        self.obs_space, self.act_space = spaces  # the pool's (env 0's): its layout's
        self.obs_leaves = list(zip(layout.obs, leaf_spaces(self.obs_space), strict=True))
        self.simple_obs = len(b.obs) == 1 and not layout.obs[0].path
        self.obs_shape = layout.obs[0].shape
        self.dynamic_obs = any(leaf.dynamic for leaf in layout.obs)
        self.simple_act = len(b.act) == 1 and not layout.act[0].path
        self.act_leaves = list(layout.act)
        self.dynamic_act = any(leaf.dynamic for leaf in layout.act)
        self.flatten_obs = flattener(self.obs_space)
        self.unflatten_act = unflattener(self.act_space)
        n = len(envs)
        self.elapsed = [0] * n
        self.ret = [0.0] * n
        self.needs_reset = [False] * n
        parent = parent_process()
        self.parent_sentinel = parent.sentinel if parent is not None else None

    def loop(self) -> None:
        ctrl = self.b.ctrl[self.index]
        req_ring = self.b.req_ring[self.index]
        comp_ring = self.b.comp_ring[self.index]
        ring = self.ring
        tail = 0
        published = 0
        while True:
            if ctrl[REQ_HEAD] == tail and not self._wait(ctrl, tail):
                return
            if ctrl[SHUTDOWN]:
                return
            head = int(ctrl[REQ_HEAD])
            while tail < head:
                e = int(req_ring[tail % ring])
                tail += 1
                self._process(e)
                comp_ring[published % ring] = e
                published += 1
                ctrl[COMP_HEAD] = published
                if ctrl[SHUTDOWN]:
                    return
            try:
                os.write(self.results_fd, b"\0")
            except BlockingIOError:  # the pipe is full of unread wake-ups: the parent will look anyway
                pass

    def _wait(self, ctrl: np.ndarray, tail: int) -> bool:
        """Waits for a request; False when the worker should exit."""
        deadline = time.perf_counter() + self.spin
        while time.perf_counter() < deadline:
            if ctrl[REQ_HEAD] != tail:
                return True
        fds = [self.wake_fd, self.call_fd]
        if self.parent_sentinel is not None:
            fds.append(self.parent_sentinel)
        while ctrl[REQ_HEAD] == tail:
            if ctrl[SHUTDOWN]:
                return False
            ready = wait_readable(fds, 1.0)
            if self.parent_sentinel in ready:
                return False  # the parent died: nobody will ever ask again
            if self.call_fd in ready and not self._serve_calls():
                return False
            if self.wake_fd in ready:
                try:
                    if not os.read(self.wake_fd, 4096):
                        return False  # the parent closed the wake pipe
                except BlockingIOError:
                    pass
        return True

    def _serve_calls(self) -> bool:
        """Reads what the call pipe holds and runs every whole request in it; False when the parent closed it."""
        buf = self.call_buf
        while True:
            try:
                chunk = os.read(self.call_fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                return False
            buf += chunk
        header = MESSAGE_HEADER.size
        while len(buf) >= header:
            seq, size = MESSAGE_HEADER.unpack_from(buf)
            if len(buf) < header + size:
                break
            kind, name, targets = pickle.loads(buf[header : header + size])
            del buf[: header + size]
            if kind == RESET_OPTIONS:  # not a call: filed for the resets the parent sends next
                self.reset_options.update(targets)
                continue
            if kind == ACTIONS:  # likewise, for the steps the parent sends next
                self.actions.update(targets)
                continue
            replies = [call_env(self.envs[e - self.lo], kind, name, blob) for e, blob in targets]
            send_message(self.side_fd, -1 - self.index, pickle.dumps((seq, replies), pickle.HIGHEST_PROTOCOL))
        return True

    def _process(self, e: int) -> None:
        b = self.b
        k = e - self.lo
        env = self.envs[k]
        b.flags[e] = 0
        b.ended[e] = False
        where = "reset"  # what the env was asked to do, for an error's note
        try:
            op = b.op[e]
            explicit = op != OP_STEP
            if explicit or (self.needs_reset[k] and self.mode == "next_step"):
                seed = int(b.seed[e]) if explicit and b.seeded[e] else None
                if not explicit:  # an autoreset: as gymnasium's vector envs make it (the action goes unused)
                    if self.dynamic_act:
                        self._take(self.actions, e, "actions")
                    obs, info = env.reset()
                elif op == OP_RESET:  # as gymnasium's vector envs call it, options and all
                    obs, info = env.reset(seed=seed, options=None)
                else:
                    options = {} if op == OP_RESET_EMPTY else self._take_reset_options(e)
                    obs, info = env.reset(seed=seed, options=options)
                self.elapsed[k] = 0
                self.ret[k] = 0.0
                self.needs_reset[k] = False
                objects = self._write_obs(b.obs, e, obs, "reset")
                b.reward[e] = 0.0
                b.terminated[e] = False
                b.truncated[e] = False
                if info or objects is not None:
                    self._send_info(e, info, None, objects)
                return
            where = "step"
            obs, reward, terminated, truncated, info = env.step(self._action(e))
            self.elapsed[k] += 1
            reward = float(reward)  # the value the caller receives (a float64 row) and the one summed: equal
            self.ret[k] += reward
            if self.max_steps and self.elapsed[k] >= self.max_steps:
                truncated = True
            b.reward[e] = reward
            b.terminated[e] = terminated
            b.truncated[e] = truncated
            if terminated or truncated:
                b.ended[e] = True
                b.episode_return[e] = self.ret[k]
                b.episode_length[e] = self.elapsed[k]
                if self.mode == "same_step":
                    final_objects = self._write_obs(b.final_obs, e, obs, "step")
                    final_info = info
                    where = "reset"
                    obs, info = env.reset()
                    self.elapsed[k] = 0
                    self.ret[k] = 0.0
                    objects = self._write_obs(b.obs, e, obs, "reset")
                    if info or final_info or objects is not None:
                        self._send_info(e, info, final_info, objects, final_objects)
                    return
                self.needs_reset[k] = True
            objects = self._write_obs(b.obs, e, obs, "step")
            if info or objects is not None:
                self._send_info(e, info, None, objects)
        except Exception as exc:  # re-raised in the parent, naming the env
            b.flags[e] = HAS_ERROR
            b.reward[e] = 0.0
            b.terminated[e] = False
            b.truncated[e] = False
            b.ended[e] = False
            self.needs_reset[k] = False
            message: tuple
            if isinstance(exc, BadObservation):
                message = ("bad_obs", str(exc))
            else:  # the exception itself when it pickles, so that the parent raises it with its own type
                message = ("error", *error_report(exc, __file__), where)
            send_message(self.side_fd, e, pickle.dumps(message, pickle.HIGHEST_PROTOCOL))

    def _take_reset_options(self, e: int) -> Any:
        """Env ``e``'s options for the reset being processed (its own copy)."""
        return self._take(self.reset_options, e, "reset options")

    def _take(self, store: dict[int, bytes], e: int, what: str) -> Any:
        """Env ``e``'s value in ``store`` (reset options or an action's dynamic leaves), unpickled. The parent wrote
        it whole into the call pipe before it sent the request, so one read finds it; reading first also replaces
        a value an interrupted call left here."""
        if not self._serve_calls():
            raise RuntimeError("the parent closed the call pipe")
        fds = [self.call_fd] if self.parent_sentinel is None else [self.call_fd, self.parent_sentinel]
        while e not in store:  # (only if the parent wrote it in pieces: wait for the rest)
            ready = wait_readable(fds, 1.0)
            if self.parent_sentinel in ready or not self._serve_calls():
                raise RuntimeError(f"the parent went away before it sent the {what}")
        return pickle.loads(store.pop(e))

    def _action(self, e: int) -> Any:
        b = self.b
        if self.simple_act:
            row = b.act[0][e]
            return row if self.act_leaves[0].scalar else row.copy()
        fixed = iter(b.act)
        objects = iter(self._take(self.actions, e, "actions") if self.dynamic_act else ())
        values = [
            next(objects) if leaf.dynamic else next(fixed)[e] if leaf.scalar else next(fixed)[e].copy()
            for leaf in self.act_leaves
        ]
        return self.unflatten_act(iter(values))

    def _write_obs(self, arrays: list[np.ndarray], e: int, obs: Any, where: str) -> list[Any] | None:
        """Writes ``obs`` (what the env's ``where``() returned) into row ``e``; a BadObservation unless every
        leaf has its space's shape (numpy assignment would broadcast a (1,) array or a scalar over the row), or
        for a dynamic leaf unless its space contains it. Returns the dynamic leaves' values (None: there are none),
        which go to the parent in the env's message."""
        if self.simple_obs:
            if getattr(obs, "shape", None) != self.obs_shape:  # the one check on the hot path
                self._check_leaf(self.obs_leaves[0], obs, where)
            arrays[0][e] = obs
            return None
        try:
            values: list[Any] = []
            self.flatten_obs(obs, values)
        except (KeyError, TypeError, ValueError) as exc:
            raise BadObservation(
                f"{where}() returned an observation that does not fit observation_space "
                f"{self.obs_space}: {type(exc).__name__}: {exc}"
            ) from None
        if not self.dynamic_obs:
            for array, (leaf, space), value in zip(arrays, self.obs_leaves, values, strict=True):
                if getattr(value, "shape", None) != leaf.shape:
                    self._check_leaf((leaf, space), value, where)
                array[e] = value
            return None
        fixed = iter(arrays)
        objects = []
        for (leaf, space), value in zip(self.obs_leaves, values, strict=True):
            if leaf.dynamic:
                self._check_object(leaf, space, value, where)
                objects.append(value)
                continue
            if getattr(value, "shape", None) != leaf.shape:
                self._check_leaf((leaf, space), value, where)
            next(fixed)[e] = value
        return objects

    def _check_object(self, leaf: Leaf, space: Any, value: Any, where: str) -> None:
        """A BadObservation unless ``space`` (a dynamic leaf's) contains ``value``, as a fixed leaf's of the wrong
        shape is one. Only gymnasium's own spaces are asked: a custom space's ``contains`` may be missing or assume
        what its envs do not return (gymnasium's own CustomSpace test), and gymnasium's vector envs pass anything."""
        if type(space) not in _CHECKED_SPACES:
            return
        try:
            ok = space.contains(value)
        except Exception:  # a value of another kind altogether (contains assumes its own)
            ok = False
        if ok:
            return
        shown = " ".join(repr(value).split())
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        name = "obs" + "".join(f"[{key!r}]" for key in leaf.path) if leaf.path else "an observation"
        raise BadObservation(
            f"{where}() returned {name} {shown} ({type(value).__name__}), which {space} does not contain"
        )

    def _check_leaf(self, leaf_space: tuple[Leaf, Any], value: Any, where: str) -> None:
        """Passes a value without a ``shape`` (a Python number, a list) that fits the leaf; raises otherwise."""
        leaf, space = leaf_space
        if leaf.scalar and isinstance(value, (int, np.integer)):
            return
        what = "None"
        if value is not None:
            try:
                arr = np.asarray(value)
            except ValueError:  # a ragged list
                arr = np.asarray(value, dtype=object)
            if arr.shape == leaf.shape and arr.dtype.kind in "biuf":
                return
            shown = " ".join(repr(value).split())  # on one line
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            kind = f"of shape {arr.shape}" if arr.shape != leaf.shape else f"of dtype {arr.dtype}"
            what = f"{kind} ({shown})"
        if leaf.path:
            name = "obs" + "".join(f"[{key!r}]" for key in leaf.path)
            raise BadObservation(f"{where}() returned {name} {what} for {space}, which needs shape {leaf.shape}")
        raise BadObservation(
            f"{where}() returned an observation {what} for observation_space {space}, which needs shape {leaf.shape}"
        )

    def _send_info(
        self,
        e: int,
        info: dict,
        final_info: dict | None,
        objects: list | None = None,
        final_objects: list | None = None,
    ) -> None:
        """Sends env ``e``'s infos and its observation's (and final observation's) dynamic leaves, if any."""
        self.b.flags[e] = HAS_INFO
        message = ("info", info, final_info, objects, final_objects)
        send_message(self.side_fd, e, pickle.dumps(message, pickle.HIGHEST_PROTOCOL))
