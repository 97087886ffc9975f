"""Stable-Baselines3: a ``VecEnv`` over a fastvec pool.

>>> from stable_baselines3 import PPO
>>> env = fastvec.sb3_vec("CartPole-v1", num_envs=8, seed=0)   # was make_vec_env("CartPole-v1", 8)
>>> PPO("MlpPolicy", env).learn(10_000)

Protocol translation only: the pool autoresets (``autoreset_mode="same_step"``)
and counts episodes; this class turns its arrays into SB3's ``dones`` and
list of info dicts.
"""

from __future__ import annotations

import pickle
import time
import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

try:
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices
    from stable_baselines3.common.vec_env.util import check_for_nested_spaces
except ImportError as e:  # pragma: no cover - exercised only without SB3
    raise ImportError("fastvec.sb3_vec needs Stable-Baselines3: pip install stable-baselines3") from e

from fastvec._args import autoreset_mode_name
from fastvec.batching import info_rows
from fastvec.multiagent import MultiAgentVectorEnv
from fastvec.vector import VectorEnv, make


class SB3Base(VecEnv):
    """What the single-agent and the multi-agent adapters share: SB3's step_async/step_wait hand-over of the
    actions, and SB3's indices read as env (or slot) ids."""

    _actions: Any = None
    _unit = "env"  # what an index counts, in messages

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def _take_actions(self) -> Any:
        """The actions of the last step_async (once)."""
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        actions, self._actions = self._actions, None
        return actions

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        """SB3's indices (None, an int, or a list; negative ones count from the end) as ids."""
        idx = list(self._get_indices(indices))
        for i in idx:
            if not -self.num_envs <= i < self.num_envs:
                raise IndexError(f"{self._unit} index {i} out of range for {self.num_envs} {self._unit}s")
        return [int(i) % self.num_envs for i in idx]


class SB3VecEnv(SB3Base):
    """A ``stable_baselines3`` ``VecEnv`` over a :class:`fastvec.VectorEnv` made with
    ``autoreset_mode="same_step"``; made by :func:`fastvec.sb3_vec`.

    Finished envs carry ``terminal_observation`` and ``TimeLimit.truncated`` in
    their info dict and, with ``monitor=True`` (:func:`sb3_vec`'s default for an id), Monitor's ``episode`` dict
    (``r``, ``l``, ``t``), so the env behaves like ``make_vec_env``'s
    Monitor-wrapped envs and ``env_is_wrapped(Monitor)`` says so.

    A scalar field of a Dict observation (shape ``()``, as the walker's ``height`` in dm_control and EnvPool) is
    shape ``(1,)`` here, in the observation space and in every observation: SB3's ``MultiInputPolicy`` flattens
    each field from its second dimension, which a field of one dimension per batch has not.

    ``get_attr``, ``set_attr``, ``env_method`` and ``env_is_wrapped`` reach the envs as ``SubprocVecEnv``'s do
    (through :meth:`fastvec.VectorEnv.env_call`); ``render_mode`` and ``metadata`` are the envs'.
    """

    def __init__(self, env: VectorEnv, monitor: bool = True) -> None:
        if env.autoreset_mode != gym.vector.AutoresetMode.SAME_STEP:
            raise ValueError(f"SB3 needs autoreset_mode='same_step', got {env.autoreset_mode}")
        check_for_nested_spaces(env.single_observation_space)  # NotImplementedError, as SB3's own VecEnvs
        if not env.sync:
            raise ValueError(
                f"SB3 steps every env each call: batch_size must equal num_envs ({env.num_envs}), got {env.batch_size}"
            )
        if monitor and not env.episode_stats:
            raise ValueError("monitor=True makes Monitor's episode dicts from a pool made with episode_stats=True")
        self.env = env
        self.monitor = monitor
        self._t_start = time.time()
        self._actions = None
        observation_space, self._scalar_keys = _without_scalar_fields(env.single_observation_space)
        self._object_fields = _object_fields(observation_space)
        super().__init__(env.num_envs, observation_space, env.single_action_space)

    # -- stepping ---------------------------------------------------------

    def reset(self) -> np.ndarray:
        """Resets every env with the seeds and options staged by :meth:`seed` / :meth:`set_options`."""
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        options = self._options
        self._reset_seeds()
        self._reset_options()
        self._actions = None
        # Each env's options reach its reset(options=...), as DummyVecEnv passes them (none: no options). Envs
        # with the same options are reset together; different ones, a group at a time (a partial reset each).
        groups: list[tuple[dict[str, Any], list[int]]] = []
        for i, opts in enumerate(options):
            for given, ids in groups:
                if given == opts:
                    ids.append(i)
                    break
            else:
                groups.append((opts, [i]))
        if len(groups) == 1:
            opts = groups[0][0]
            obs, info = self.env.reset(seed=seeds, options=dict(opts) if opts else None)
            self.reset_infos = info_rows(info, self.num_envs)
            return self._rows(obs)
        out: Any = None
        self.reset_infos = [{} for _ in range(self.num_envs)]
        for opts, ids in groups:
            part, info = self.env.reset(
                seed=None if seeds is None else [seeds[i] for i in ids], options={**opts, "env_id": ids}
            )
            out = _place(out, self._stacked(part, objects=True), ids, self.num_envs)
            for i, row in zip(ids, info_rows(info, len(ids)), strict=True):
                self.reset_infos[i] = row
        return self._rows(out)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        actions = self._take_actions()
        obs, reward, terminated, truncated, info = self.env.step(self._batched(actions))
        dones = terminated | truncated
        # Each env's info of this step, as SubprocVecEnv returns it: for an env whose episode ended, the
        # info of its last step (info["final_info"]); the new episode's reset info goes to reset_infos.
        infos = info_rows(info, self.num_envs)
        if "final_obs" in info:
            final_obs = info["final_obs"]
            finals = info_rows(info["final_info"], self.num_envs)
            ep_return, ep_length = info["episode_return"], info["episode_length"]
            t = round(time.time() - self._t_start, 6)
            for i in np.flatnonzero(info["_final_obs"]).tolist():
                self.reset_infos[i], infos[i] = infos[i], finals[i]
                d = infos[i]
                d["terminal_observation"] = self._rows(final_obs[i], batched=False)
                if self.monitor:  # rounded as Monitor rounds its return and time
                    d["episode"] = {"r": round(float(ep_return[i]), 6), "l": int(ep_length[i]), "t": t}
        for d, flag in zip(infos, (truncated & ~terminated).tolist(), strict=True):
            d["TimeLimit.truncated"] = flag  # on every step, as SB3's VecEnvs set it
        return self._rows(obs), reward, dones, infos

    def _rows(self, obs: Any, batched: bool = True) -> Any:
        """``obs`` (a batch, or one env's) with its scalar Dict fields as shape (1,) (views: no copy), and a batch's
        fields of no fixed size stacked (see :meth:`_stacked`)."""
        if batched and self._object_fields:
            obs = self._stacked(obs)
        if not self._scalar_keys:
            return obs
        return {
            k: (np.reshape(v, (-1, 1) if batched else (1,)) if k in self._scalar_keys else v) for k, v in obs.items()
        }

    def close(self) -> None:
        self.env.close()

    # -- attributes -------------------------------------------------------

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Each env's ``env.get_wrapper_attr(attr_name)``, as ``SubprocVecEnv``'s (a native env: the attributes it
        has, see :meth:`fastvec.VectorEnv.env_call`)."""
        return self.env.env_call("get", attr_name, env_ids=self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """``setattr(env, attr_name, value)`` on each env, as ``SubprocVecEnv``: on the outermost wrapper (to set an
        attribute the env itself has, ``env_method("set_wrapper_attr", name, value)``)."""
        idx = self._indices(indices)
        self.env.env_call("set_outer", attr_name, [value] * len(idx), env_ids=idx)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Each env's ``env.get_wrapper_attr(method_name)(*method_args, **method_kwargs)``, as ``SubprocVecEnv``'s
        (``reset``, ``step`` and ``close`` are the pool's own, and refused)."""
        return self.env.env_call("method", method_name, method_args, method_kwargs, env_ids=self._indices(indices))

    def has_attr(self, attr_name: str) -> bool:
        """Whether every env has ``attr_name`` (one whose value cannot be pickled back to this process has it)."""
        try:
            self.get_attr(attr_name)
        except AttributeError:
            return False
        except pickle.PicklingError:
            return True
        return True

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """Whether each env is wrapped in ``wrapper_class`` (SB3's ``is_wrapped``, in the env's worker), or, for
        ``Monitor`` and its bases with ``monitor=True``, True: the pool then adds Monitor's ``episode`` info itself."""
        idx = self._indices(indices)
        builtin = self.monitor and issubclass(Monitor, wrapper_class)
        wrapped = self.env.env_call("is_wrapped", wrapper_class.__name__, (wrapper_class,), env_ids=idx)
        return [builtin or w for w in wrapped]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Each env's ``render()``, as ``SubprocVecEnv``'s (``render_mode="rgb_array"`` only)."""
        if self.render_mode != "rgb_array":
            warnings.warn(
                f"The render mode is {self.render_mode}, but this method assumes it is `rgb_array` to obtain images.",
                stacklevel=2,
            )
            return [None for _ in range(self.num_envs)]
        frames = self.env.render()  # a native env's frames, or each Python env's render()
        assert frames is not None  # (render_mode is rgb_array)
        return list(frames)

    def _stacked(self, obs: Any, objects: bool = False) -> Any:
        """A batch whose fields of no fixed size (Text, Graph, ...: tuples of the envs' values) are stacked as
        SubprocVecEnv stacks every field (``np.stack``: strings as a string array; what it refuses, refused), or
        (``objects``) put in object arrays, to be placed by rows and stacked once whole."""

        def stack(values: Any) -> np.ndarray:
            if not objects:
                return np.stack(list(values))
            out = np.empty(len(values), dtype=object)
            out[:] = list(values)
            return out

        fields = self._object_fields
        if not fields:
            return obs
        if fields == [None]:
            return stack(obs)
        if isinstance(obs, dict):
            return {k: stack(v) if k in fields else v for k, v in obs.items()}
        return tuple(stack(v) if i in fields else v for i, v in enumerate(obs))

    def _batched(self, actions: Any) -> Any:
        """For a Dict or Tuple action space, a list of per-env actions (a list of dicts, of tuples), which
        DummyVecEnv takes (it hands ``actions[i]`` to env ``i``), stacked into the batched dict or tuple of arrays
        the pool takes; any other actions (the batched form included) as given."""
        space = self.action_space
        if not isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)) or not isinstance(actions, (list, np.ndarray)):
            return actions
        if len(actions) != self.num_envs:
            raise ValueError(
                f"actions: a list of per-env actions needs one per env ({self.num_envs}), got {len(actions)}"
            )
        try:
            return gym.vector.utils.concatenate(
                space, list(actions), gym.vector.utils.create_empty_array(space, self.num_envs)
            )
        except (AssertionError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise TypeError(
                f"actions: a list of per-env actions must hold one element of {space} per env: "
                f"{type(exc).__name__}: {exc}"
            ) from exc


def sb3_vec(env_id: Any, num_envs: int | None = None, *, monitor: bool | None = None, **kwargs: Any) -> VecEnv:
    """An SB3 ``VecEnv`` of ``num_envs`` copies of ``env_id``; takes :func:`fastvec.make`'s arguments.

    ``monitor`` (Monitor's ``episode`` info for every env) defaults to what the call replaces: True for an id or
    one callable (``make_vec_env(env_id, n)``, which wraps each env in Monitor), False for a list of callables
    (``SubprocVecEnv(env_fns)``, which adds nothing: an env is Monitor-wrapped only if its callable wraps it).

    A multi-agent env (a PettingZoo or RLlib multi-agent env, or a multi-agent id) gives one slot per (env, agent):
    :class:`fastvec.adapters.sb3_ma.SB3MultiAgentVecEnv`, SuperSuit's recipe for parameter sharing.

    >>> env = fastvec.sb3_vec("CartPole-v1", 8, seed=0)
    >>> env.reset().shape
    (8, 4)
    """
    mode = kwargs.pop("autoreset_mode", "same_step")
    if autoreset_mode_name(mode) != "same_step":
        raise ValueError(
            f"SB3 VecEnvs reset finished envs in the same step: autoreset_mode must be 'same_step', got {mode!r}"
        )
    if monitor is None:
        monitor = not _is_env_fns(env_id)
    args = (env_id,) if num_envs is None else (env_id, num_envs)
    kwargs["episode_stats"] = True  # Monitor's "episode" dicts are made from them
    env = make(*args, autoreset_mode="same_step", **kwargs)
    if isinstance(env, MultiAgentVectorEnv):  # a slot per (env, agent): fastvec.adapters.sb3_ma
        from fastvec.adapters.sb3_ma import SB3MultiAgentVecEnv

        try:
            return SB3MultiAgentVecEnv(env, monitor=monitor)
        except BaseException:
            env.close()
            raise
    return SB3VecEnv(env, monitor=monitor)


def _without_scalar_fields(space: gym.Space) -> tuple[gym.Space, frozenset[str]]:
    """``space`` with its Dict's scalar Box fields (shape ``()``) as shape ``(1,)``, in the same order, and their
    keys; any other space as it is."""
    if not isinstance(space, gym.spaces.Dict):
        return space, frozenset()
    scalar = frozenset(k for k, s in space.items() if isinstance(s, gym.spaces.Box) and s.shape == ())
    if not scalar:
        return space, scalar
    fields: list[tuple[str, gym.Space]] = []
    for k, s in space.items():
        if isinstance(s, gym.spaces.Box) and k in scalar:
            s = gym.spaces.Box(s.low.reshape(1), s.high.reshape(1), dtype=s.low.dtype.type)
        fields.append((k, s))
    return gym.spaces.Dict(fields), scalar  # a sequence of pairs keeps the order (a dict would be sorted)


def _is_env_fns(env_id: Any) -> bool:
    """Whether ``env_id`` is a list (any sequence but a str) of env makers: ``SubprocVecEnv(env_fns)``'s idiom."""
    return isinstance(env_id, Sequence) and not isinstance(env_id, (str, bytes))


def _object_fields(space: gym.Space) -> list[Any]:
    """The fields of ``space`` (Dict keys, Tuple indices; ``[None]``: the space itself) that have no fixed size, which
    the pool batches as tuples of the envs' values (SB3 refuses nested Dict and Tuple spaces)."""
    fixed = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
    if isinstance(space, gym.spaces.Dict):
        return [k for k, sub in space.spaces.items() if not isinstance(sub, fixed)]
    if isinstance(space, gym.spaces.Tuple):
        return [i for i, sub in enumerate(space.spaces) if not isinstance(sub, fixed)]
    return [] if isinstance(space, fixed) else [None]


def _place(out: Any, part: Any, ids: list[int], n: int) -> Any:
    """Writes the rows ``part`` (an array, or a dict/tuple of arrays) at rows ``ids`` of ``out`` (made for ``n``
    envs on the first call, when ``out`` is None)."""
    if isinstance(part, dict):
        base = out or {}
        return {k: _place(base.get(k), v, ids, n) for k, v in part.items()}
    if isinstance(part, tuple):
        base = out or (None,) * len(part)
        return tuple(_place(b, v, ids, n) for b, v in zip(base, part, strict=True))
    if out is None:
        out = np.zeros((n, *part.shape[1:]), dtype=part.dtype)
    out[ids] = part
    return out
