"""RLlib (new API stack): each EnvRunner builds its own fastvec pool.

>>> from ray.rllib.algorithms.ppo import PPOConfig
>>> from fastvec.adapters.rllib import configure
>>> config = configure(PPOConfig(), "CartPole-v1", num_envs=64)   # was .environment("CartPole-v1")
>>> algo = config.build_algo()

``configure`` also sets ``env_runners(env_runner_cls=FastvecEnvRunner)``: a ``SingleAgentEnvRunner``
that steps the pool in batches and builds RLlib's episode chunks in bulk, from numpy columns (see
:mod:`fastvec.adapters._rllib_runner`; by hand: ``config.env_runners(env_runner_cls=FastvecEnvRunner)``).

RLlib's ``SingleAgentEnvRunner`` calls ``gym.make_vec(name, num_envs,
vectorization_mode=config.gym_env_vectorize_mode)``; with
``"vector_entry_point"`` that calls the creator registered here with
``env_config | {"num_envs": num_envs_per_env_runner}`` and uses the
returned :class:`fastvec.VectorEnv` as it is: next-step autoreset, every env
stepped each call, info a dict of arrays. ``FastvecEnvRunner`` seeds env ``i``
of runner ``w`` with ``config.seed + w * num_envs + i``, so no two envs of any
runners share a stream. Runners are Ray actors and may sit on any node of a
Ray cluster, each stepping its pool with the CPUs Ray gave it (a pool made
without ``num_threads`` takes that many threads).

Images: RLlib's CNN encoders take float32 frames, channels last. Atari pools
are made with ``channels_last=True``, and uint8 frames reach RLlib as RLlib's
own Atari wrappers give them, ``x / 128 - 1`` in float32
(``normalize_images=False`` hands over the uint8 frames).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from fastvec._args import check_int
from fastvec.adapters.rllib_creator import (
    POOL_KEYWORDS,
    Creator,
    MultiAgentCreator,
    NormalizedImages,
    single_multiagent_env,
)
from fastvec.batching import info_rows
from fastvec.native import is_native
from fastvec.registry import lookup
from fastvec.vector import make

try:
    import ray
    from ray.rllib.env.base_env import BaseEnv
    from ray.rllib.env.env_runner import EnvRunner
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
    from ray.rllib.env.vector_env import VectorEnv, VectorEnvWrapper
    from ray.tune.registry import register_env

    from fastvec.adapters._rllib_multiagent import FastvecMultiAgentEnvRunner
    from fastvec.adapters._rllib_runner import FastvecEnvRunner
except ImportError as e:  # pragma: no cover - exercised only without Ray
    raise ImportError('fastvec.rllib_env needs RLlib: pip install "ray[rllib]"') from e

if TYPE_CHECKING:
    import fastvec.vector

__all__ = [
    "FastvecEnvRunner",
    "FastvecMultiAgentEnvRunner",
    "NormalizedImages",
    "OldStackVectorEnv",
    "SharedPolicy",
    "configure",
    "configure_multi_agent",
    "configure_old_stack",
    "policy_per_agent",
    "rllib_env",
]

_RESERVED = ("num_envs", "autoreset_mode", "batch_size")


def rllib_env(env_id: str | Callable[[], gym.Env], *, normalize_images: bool | None = None, **kwargs: Any) -> str:
    """Registers a creator of fastvec pools of ``env_id`` with Ray Tune; returns its name.

    ``env_id`` is what :func:`fastvec.make` takes: a native or Atari id, a gymnasium id
    without a native port, or a callable returning a gymnasium env (both run in the
    Python-env pool). ``kwargs`` are :func:`fastvec.make`'s (``num_threads``,
    ``max_episode_steps``, env options); ``num_envs`` comes from ``num_envs_per_env_runner``.
    uint8 image observations are normalized for RLlib's CNNs unless ``normalize_images=False``.

    >>> config.environment(env=fastvec.rllib_env("CartPole-v1")).env_runners(
    ...     num_envs_per_env_runner=64, gym_env_vectorize_mode="vector_entry_point")
    """
    label, env, _ = _checked(env_id, normalize_images, kwargs, 1)
    return _registered(label, env_id, env, kwargs, normalize_images)


def _checked(
    env_id: str | Callable[[], gym.Env], normalize_images: bool | None, kwargs: dict[str, Any], num_envs: int
) -> tuple[str, str | Callable[[], gym.Env], bool]:
    """``rllib_env``'s arguments checked in the driver: (its label, the env as the creator makes it, whether it
    is native). A native env's pool is made, of ``num_envs`` envs, and closed: what the runners' fastvec.make
    would refuse fails here, with its exception and words, not as an IndexError of RLlib's once a remote
    runner has failed to build its env (the error only in the worker's log). ``kwargs`` may gain options."""
    label = _label(env_id, "rllib_env", " (RLlib chooses num_envs: a list of constructors does not apply)")
    native = isinstance(env_id, str) and is_native(label) and kwargs.get("backend", "auto") != "python"
    if native:
        entry = lookup(label)
        label = entry.id
        if entry.rom:
            kwargs.setdefault("channels_last", True)
    for key in _RESERVED:
        if key in kwargs:
            raise ValueError(
                f"rllib_env: {key!r} is RLlib's to choose (num_envs_per_env_runner; next-step autoreset; "
                "every env stepped each call)"
            )
    if normalize_images is not None and not isinstance(normalize_images, bool):
        raise TypeError(f"normalize_images must be a bool or None, got {normalize_images!r}")
    if native:
        make(label, num_envs, **kwargs).close()
    return label, label if isinstance(env_id, str) else env_id, native


def _registered(
    label: str,
    env_id: str | Callable[[], gym.Env],
    env: str | Callable[[], gym.Env],
    kwargs: dict[str, Any],
    normalize_images: bool | None,
) -> str:
    """Registers the creator of ``env``'s pools with Ray Tune; returns its name."""
    extra = {**kwargs, "normalize_images": normalize_images} if normalize_images is not None else kwargs
    name = _registry_name("fastvec", label, env_id, *([sorted(extra.items(), key=lambda kv: kv[0])] if extra else []))
    register_env(name, Creator(env, dict(kwargs), normalize_images))
    return name


def _label(env_id: Any, caller: str, hint: str = "") -> str:
    """What an env is called in Ray's registry: its id without ``fastvec/``, or a callable's name."""
    if isinstance(env_id, str):
        return env_id.removeprefix("fastvec/")
    if callable(env_id):
        return getattr(env_id, "__qualname__", type(env_id).__name__).replace("<", "").replace(">", "")
    raise TypeError(
        f"{caller} takes an env id (str) or a callable returning a gymnasium env, got {type(env_id).__name__}{hint}"
    )


def _registry_name(prefix: str, label: str, env_id: Any, *options: Any) -> str:
    """``prefix-label``, and a hash of the options (and of a callable env) when there are any."""
    name = f"{prefix}-{label}".replace(":", "-")  # gymnasium reads 'module:id' as an import
    if options or not isinstance(env_id, str):
        key = repr(("" if isinstance(env_id, str) else env_id, *options))
        name += "-" + hashlib.sha1(key.encode()).hexdigest()[:8]
    return name


def configure(
    config: Any,
    env_id: str | Callable[[], Any],
    num_envs: int,
    num_threads: int | None = None,
    *,
    env_runner_cls: type | None = FastvecEnvRunner,
    policies: Any = None,
    policy_mapping_fn: Callable[..., Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Sets ``config`` up to run ``num_envs`` copies of ``env_id`` in a fastvec pool per EnvRunner.

    A multi-agent ``env_id`` (an RLlib ``MultiAgentEnv`` class or constructor, a callable returning a PettingZoo
    ParallelEnv or AEC env, a multi-agent id such as ``"simple_spread_v3"``) is set up by
    :func:`configure_multi_agent` (``env_runner_cls`` FastvecEnvRunner then means FastvecMultiAgentEnvRunner);
    ``policies`` and ``policy_mapping_fn`` apply only to those. To tell, a callable ``env_id`` is called once here,
    in the driver (and its env closed).

    Calls ``environment(env=...)`` and ``env_runners(num_envs_per_env_runner=num_envs,
    gym_env_vectorize_mode="vector_entry_point", num_cpus_per_env_runner=...,
    env_runner_cls=FastvecEnvRunner)``. The pool's threads are the runner's CPUs: ``num_threads`` if
    given (and Ray reserves that many CPUs per runner), else ``config.num_cpus_per_env_runner``; more
    than the largest node has is refused (Ray could never place the runner). ``env_runner_cls=None``
    keeps RLlib's ``SingleAgentEnvRunner``. Returns ``config``.

    ``num_envs``, ``num_threads`` and ``kwargs`` get fastvec.make's checks here, in the driver, with its
    exceptions and words: a native env's pool is made as each runner will make it (``num_envs`` envs, quick to
    make even for Atari: docs/performance.md) and closed; for an env of the Python-env pool, whose worker
    processes are not started here, ``num_envs`` and ``num_threads`` are checked as fastvec.make checks them.

    >>> config = configure(PPOConfig(), "CartPole-v1", num_envs=64, num_threads=2)
    """
    _check_runner_cls(env_runner_cls)
    probe = _multiagent_probe(env_id, kwargs)
    if probe is not None:
        runner = FastvecMultiAgentEnvRunner if env_runner_cls is FastvecEnvRunner else env_runner_cls
        return _configure_multi_agent(
            config, env_id, probe, num_envs, num_threads, runner, policies, policy_mapping_fn, kwargs
        )
    if policies is not None or policy_mapping_fn is not None:
        raise ValueError(f"policies and policy_mapping_fn are for a multi-agent env; {env_id!r} is single-agent")
    if not isinstance(env_id, str) and not callable(env_id):
        _label(env_id, "configure")  # its TypeError
    kwargs = dict(kwargs)
    normalize_images = kwargs.pop("normalize_images", None)
    cpus = _runner_threads(config, num_threads)
    kwargs["num_threads"] = cpus
    label, env, native = _checked(env_id, normalize_images, kwargs, num_envs)
    if not native:
        _check_python_pool(num_envs, cpus)
    _check_fits_a_node(cpus)
    name = _registered(label, env_id, env, kwargs, normalize_images)
    config.environment(env=name)
    config.env_runners(
        num_envs_per_env_runner=num_envs,
        gym_env_vectorize_mode="vector_entry_point",
        num_cpus_per_env_runner=cpus,
    )
    if env_runner_cls is not None:
        config.env_runners(env_runner_cls=env_runner_cls)
    return config


def _check_runner_cls(env_runner_cls: Any) -> None:
    if env_runner_cls is not None and not (isinstance(env_runner_cls, type) and issubclass(env_runner_cls, EnvRunner)):
        raise TypeError(f"env_runner_cls must be an EnvRunner subclass or None, got {env_runner_cls!r}")


def configure_multi_agent(
    config: Any,
    env_id: str | Callable[[], Any],
    num_envs: int,
    num_threads: int | None = None,
    *,
    env_runner_cls: type | None = FastvecMultiAgentEnvRunner,
    policies: Any = None,
    policy_mapping_fn: Callable[..., Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Sets ``config`` up to run ``num_envs`` copies of the multi-agent ``env_id`` per EnvRunner, in a fastvec pool
    stepped by :class:`FastvecMultiAgentEnvRunner` (RLlib's ``MultiAgentEnvRunner`` over the pool).

    ``env_id``: an RLlib ``MultiAgentEnv`` class or constructor, a callable returning a PettingZoo ParallelEnv or AEC
    env (``kwargs`` other than fastvec.make's pool keywords are passed to it), or a multi-agent id
    (``"simple_spread_v3"``). One env is made here, in the driver, to read its agents and spaces. Sets
    ``environment(env=...)``, ``env_runners(env_runner_cls=..., num_envs_per_env_runner=num_envs,
    gym_env_vectorize_mode="sync", num_cpus_per_env_runner=...)`` ("sync" is the only mode RLlib's multi-agent
    runner takes; fastvec's runner makes its pool whatever the mode) and, unless ``config`` is multi-agent already,
    ``multi_agent(policies=..., policy_mapping_fn=...)``: the ones given, else one policy ``"shared"`` for every agent
    when all agents have the same spaces, one per agent (named by its id) when not.

    ``env_runner_cls=None`` keeps RLlib's own ``MultiAgentEnvRunner``, stepping RLlib's ``SyncVectorMultiAgentEnv``
    over the same env (a PettingZoo env in RLlib's ``ParallelPettingZooEnv``): no fastvec pool then. Returns
    ``config``.

    >>> config = configure_multi_agent(PPOConfig(), lambda: mpe2.simple_spread_v3.parallel_env(), num_envs=64)
    """
    _check_runner_cls(env_runner_cls)
    probe = _multiagent_probe(env_id, kwargs)
    if probe is None:
        raise TypeError(
            f"configure_multi_agent: {env_id!r} is not a multi-agent env (an RLlib MultiAgentEnv, a PettingZoo "
            "ParallelEnv or AEC env, or a multi-agent id)"
        )
    return _configure_multi_agent(
        config, env_id, probe, num_envs, num_threads, env_runner_cls, policies, policy_mapping_fn, kwargs
    )


def _multiagent_probe(env_id: Any, kwargs: dict[str, Any]) -> Any:
    """One RLlib ``MultiAgentEnv`` of ``env_id`` as RLlib's runner would make it (closed), or None if ``env_id``
    makes single-agent envs. A callable is called once to find out."""
    from fastvec.multiagent.as_one_env import multiagent_kind
    from fastvec.multiagent.ids import multiagent_ids

    env_kwargs = {k: v for k, v in kwargs.items() if k not in (*POOL_KEYWORDS, "max_episode_steps")}
    if isinstance(env_id, str):
        if env_id.removeprefix("fastvec/") not in multiagent_ids():
            return None
        made = single_multiagent_env(env_id, env_kwargs)
    elif isinstance(env_id, type) and not issubclass(env_id, MultiAgentEnv) and issubclass(env_id, gym.Env):
        return None
    elif callable(env_id):
        one = env_id(**env_kwargs)
        if multiagent_kind(one) is None:
            if hasattr(one, "close"):
                one.close()
            return None
        made = single_multiagent_env(lambda: one, {})
    else:
        return None
    made.close()
    return made


class SharedPolicy:
    """A ``policy_mapping_fn``: every agent to one policy (picklable)."""

    def __init__(self, policy_id: str) -> None:
        self.policy_id = policy_id

    def __call__(self, agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
        return self.policy_id

    def __repr__(self) -> str:
        return f"SharedPolicy({self.policy_id!r})"


def policy_per_agent(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """A ``policy_mapping_fn``: each agent to the policy named by its id."""
    return str(agent_id)


def _configure_multi_agent(
    config: Any,
    env_id: Any,
    probe: Any,
    num_envs: int,
    num_threads: int | None,
    env_runner_cls: type | None,
    policies: Any,
    policy_mapping_fn: Callable[..., Any] | None,
    kwargs: dict[str, Any],
) -> Any:
    kwargs = dict(kwargs)
    for key in _RESERVED:
        if key in kwargs:
            raise ValueError(
                f"configure: {key!r} is RLlib's to choose (num_envs_per_env_runner; next-step autoreset; "
                "every env stepped each call)"
            )
    if "normalize_images" in kwargs:
        raise ValueError("normalize_images is for single-agent image envs")
    check_int("num_envs", num_envs, 1)
    label = _label(env_id, "configure")
    fastvec_runner = env_runner_cls is not None
    if fastvec_runner:
        cpus = _runner_threads(config, num_threads)
        kwargs["num_threads"] = cpus
        _check_python_pool(num_envs, cpus)
        _check_fits_a_node(cpus)
    elif num_threads is not None:
        raise ValueError("num_threads is the fastvec pool's: RLlib's own runner (env_runner_cls=None) has no pool")
    name = _registry_name("fastvec-ma", label, env_id, *([sorted(kwargs.items())] if kwargs else []))
    register_env(name, MultiAgentCreator(label if isinstance(env_id, str) else env_id, kwargs))
    config.environment(env=name)
    config.env_runners(num_envs_per_env_runner=num_envs, gym_env_vectorize_mode="sync")
    if fastvec_runner:
        config.env_runners(env_runner_cls=env_runner_cls, num_cpus_per_env_runner=kwargs["num_threads"])
    if policies is not None:
        config.multi_agent(policies=policies, policy_mapping_fn=policy_mapping_fn or policy_per_agent)
    elif policy_mapping_fn is not None:
        raise ValueError("policy_mapping_fn needs policies: the ids it maps agents to")
    elif not config.is_multi_agent:
        agents = list(probe.possible_agents)
        spaces = [(probe.get_observation_space(a), probe.get_action_space(a)) for a in agents]
        if all(s == spaces[0] for s in spaces):
            config.multi_agent(policies={"shared"}, policy_mapping_fn=SharedPolicy("shared"))
        else:
            config.multi_agent(policies=set(agents), policy_mapping_fn=policy_per_agent)
    return config


def _runner_threads(config: Any, num_threads: Any) -> Any:
    """The pool threads (and CPUs) of each runner: ``num_threads`` as given (fastvec.make checks it), else
    RLlib's ``config.num_cpus_per_env_runner``, which may be a fraction of a CPU: at least 1, whole CPUs."""
    if num_threads is not None:
        return num_threads
    cpus = config.num_cpus_per_env_runner
    if isinstance(cpus, bool) or not isinstance(cpus, int | float) or not cpus >= 1:
        raise ValueError(
            f"config.num_cpus_per_env_runner must be a number >= 1 when num_threads is not given (each CPU runs "
            f"a pool thread), got {cpus!r}; pass num_threads"
        )
    return int(cpus)


def _check_python_pool(num_envs: Any, num_threads: Any) -> None:
    """fastvec.make's checks of ``num_envs`` and ``num_threads`` for an env it runs in the Python-env pool (made
    in the runners only: the pool's worker processes are not started in the driver), with its words."""
    from fastvec.pyenv.arguments import MAX_ENVS, count_workers  # (imported as fastvec.make imports it: lazily)

    check_int("num_envs", num_envs, 1, MAX_ENVS)
    count_workers(num_threads, num_envs)


def _check_fits_a_node(cpus: int) -> None:
    """Refuses ``cpus`` (fastvec.make's num_threads, checked) per runner if no node has that many: Ray could never
    place the runner, and build_algo() would wait for ever."""
    largest = _largest_node_cpus()
    if cpus > largest:
        where = "node of the Ray cluster" if ray.is_initialized() else "CPU count of this machine (what ray.init gives)"
        raise ValueError(
            f"num_threads={cpus}: an EnvRunner reserves a CPU per pool thread, and the largest {where} is "
            f"{largest}; RLlib would wait for ever to place the runner. Use num_threads <= {largest}."
        )


def _largest_node_cpus() -> int:
    """The most CPUs one node offers: of the Ray cluster if Ray is up, else of this machine."""
    if ray.is_initialized():
        return int(max((n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive")), default=0))
    return os.cpu_count() or 1


# -- RLlib's old API stack -------------------------------------------------------------------------


class OldStackVectorEnv(VectorEnv):
    """A fastvec pool as RLlib's old-API-stack ``VectorEnv`` (``vector_reset``/``reset_at``/
    ``vector_step``); ``to_base_env()`` wraps it in RLlib's own ``VectorEnvWrapper``, the ``BaseEnv``
    (``poll``/``send_actions``/``try_reset``) the old stack's RolloutWorkers sample from. The pool runs
    without autoreset: RLlib resets each finished env with ``reset_at``. Compatibility, not speed: RLlib's
    wrapper builds per-env dicts every step.

    >>> env = OldStackVectorEnv(fastvec.make("CartPole-v1", 8, autoreset_mode="disabled"))
    """

    def __init__(self, pool: fastvec.vector.VectorEnv) -> None:
        mode = pool.metadata.get("autoreset_mode")
        if mode is not gym.vector.AutoresetMode.DISABLED:
            raise ValueError(f"OldStackVectorEnv needs a pool made with autoreset_mode='disabled', got {mode!r}")
        super().__init__(pool.single_observation_space, pool.single_action_space, pool.num_envs)
        self.pool = pool

    def vector_reset(
        self, *, seeds: Sequence[int | None] | None = None, options: list[dict] | None = None
    ) -> tuple[list[Any], list[dict]]:
        seed = list(seeds) if seeds is not None and all(s is not None for s in seeds) else None
        obs, info = self.pool.reset(seed=seed)
        return list(obs), info_rows(info, self.num_envs)

    def reset_at(
        self, index: int | None = None, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[Any, dict]:
        obs, info = self.pool.reset(seed=None if seed is None else [seed], options={"env_id": [index or 0]})
        return obs[0], info_rows(info, 1)[0]

    def restart_at(self, index: int | None = None) -> None:
        self.reset_at(index)

    def vector_step(self, actions: list[Any]) -> tuple[list, list, list, list, list]:
        obs, rewards, terminated, truncated, info = self.pool.step(np.asarray(actions))
        n = self.num_envs
        return list(obs), rewards.tolist(), terminated.tolist(), truncated.tolist(), info_rows(info, n)

    def get_sub_environments(self) -> list[Any]:
        return []  # the envs live in the pool; there are no gymnasium envs to hand out

    def to_base_env(self, *args: Any, **kwargs: Any) -> BaseEnv:
        return _PoolBaseEnv(self)


class _PoolBaseEnv(VectorEnvWrapper):
    """RLlib's VectorEnvWrapper; ``stop()`` closes the pool."""

    vector_env: OldStackVectorEnv

    def stop(self) -> None:
        self.vector_env.pool.close()


class _OldStackCreator:
    """The env creator the old stack's RolloutWorkers call (one VectorEnv of ``num_envs`` per worker)."""

    def __init__(self, env: str | Callable[[], gym.Env], kwargs: dict[str, Any], num_envs: int) -> None:
        self.env, self.kwargs, self.num_envs = env, kwargs, num_envs  # kwargs hold num_threads

    def __call__(self, env_config: dict[str, Any]) -> OldStackVectorEnv:
        kwargs = {**self.kwargs, **dict(env_config or {})}
        return OldStackVectorEnv(make(self.env, self.num_envs, autoreset_mode="disabled", **kwargs))


def configure_old_stack(
    config: Any, env_id: str | Callable[[], gym.Env], num_envs: int, num_threads: int | None = None, **kwargs: Any
) -> Any:
    """Sets ``config`` up for RLlib's old API stack (``RolloutWorker``, ``BaseEnv``) with a fastvec pool of
    ``num_envs`` per worker: turns the new stack off, registers the env, sets ``num_envs_per_env_runner``
    and ``num_cpus_per_env_runner`` (the pool's threads). Returns ``config``.

    >>> config = configure_old_stack(PPOConfig(), "CartPole-v1", num_envs=8)
    """
    cpus = _runner_threads(config, num_threads)
    label = _label(env_id, "configure_old_stack")
    if isinstance(env_id, str) and is_native(label) and kwargs.get("backend", "auto") != "python":
        make(label, num_envs, num_threads=cpus, **kwargs).close()  # fastvec.make's checks, in the driver
    else:
        _check_python_pool(num_envs, cpus)
    _check_fits_a_node(cpus)
    env = label if isinstance(env_id, str) else env_id
    name = _registry_name("fastvec-old", label, env_id, num_envs, cpus, sorted(kwargs.items(), key=lambda kv: kv[0]))
    register_env(name, _OldStackCreator(env, {**kwargs, "num_threads": cpus}, num_envs))
    config.api_stack(enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False)
    config.environment(env=name)
    config.env_runners(num_envs_per_env_runner=num_envs, num_cpus_per_env_runner=cpus)
    return config
