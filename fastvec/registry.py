"""The env registry: ids, their native implementation, defaults and options.

Adding a native env is one header in ``src/envs``, one ``add_env`` line in its
``register_<family>.cpp`` and one :func:`register` line here.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EnvEntry:
    """What fastvec knows about an env id."""

    id: str
    native: str  #: name of the env in the native module
    max_episode_steps: int | None = None
    options: dict[str, float] = field(default_factory=dict)  #: accepted keyword arguments and defaults
    reward_threshold: float | None = None
    hidden: bool = False  #: test-only envs, not listed


_REGISTRY: dict[str, EnvEntry] = {}


def register(
    id: str,
    native: str,
    *,
    max_episode_steps: int | None = None,
    options: dict[str, float] | None = None,
    reward_threshold: float | None = None,
    hidden: bool = False,
) -> None:
    """Registers a native env under ``id``."""
    _REGISTRY[id] = EnvEntry(id, native, max_episode_steps, dict(options or {}), reward_threshold, hidden)


register("CartPole-v1", "CartPole", max_episode_steps=500, reward_threshold=475.0,
         options={"sutton_barto_reward": False})
register("MountainCar-v0", "MountainCar", max_episode_steps=200, reward_threshold=-110.0,
         options={"goal_velocity": 0.0})
register("MountainCarContinuous-v0", "MountainCarContinuous", max_episode_steps=999, reward_threshold=90.0,
         options={"goal_velocity": 0.0})
register("Acrobot-v1", "Acrobot", max_episode_steps=500, reward_threshold=-100.0)
register("Pendulum-v1", "Pendulum", max_episode_steps=200, options={"g": 10.0})
register("_Debug-v0", "Debug", hidden=True,
         options={"throw_at_step": -1, "throw_on_action": -1, "sleep_us": 0, "episode_length": 1_000_000})


def list_envs() -> list[str]:
    """The ids fastvec runs natively, e.g. ``fastvec.list_envs()[:2] == ['Acrobot-v1', 'CartPole-v1']``."""
    return sorted(e.id for e in _REGISTRY.values() if not e.hidden)


def lookup(env_id: str) -> EnvEntry:
    """The registry entry of ``env_id``; a ValueError with suggestions if there is none."""
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a str, got {type(env_id).__name__}")
    entry = _REGISTRY.get(env_id.removeprefix("fastvec/"))
    if entry is not None:
        return entry
    close = difflib.get_close_matches(env_id, list_envs(), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else f"; known ids: {list_envs()}"
    raise ValueError(f"unknown env_id {env_id!r}{hint}")


def _make_for_gymnasium(env_id: str, num_envs: int = 1, **kwargs: Any):
    from fastvec.vector import make

    return make(env_id, num_envs, **kwargs)


def register_gymnasium_envs() -> None:
    """Makes ``gymnasium.make_vec("fastvec/<id>", vectorization_mode="vector_entry_point")`` work."""
    import gymnasium

    for entry in _REGISTRY.values():
        name = f"fastvec/{entry.id}"
        if entry.hidden or name in gymnasium.registry:
            continue
        gymnasium.register(
            id=name,
            vector_entry_point=functools.partial(_make_for_gymnasium, entry.id),
            max_episode_steps=entry.max_episode_steps,
            reward_threshold=entry.reward_threshold,
        )
