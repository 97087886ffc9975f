"""gymnasium's registry entries for fastvec's native ids, made at ``import fastvec``:
``gymnasium.make_vec("fastvec/CartPole-v1", num_envs=8, vectorization_mode="vector_entry_point")``."""

from __future__ import annotations

import functools

import gymnasium

from fastvec.registry import entries
from fastvec.vector import make


def register_gymnasium_envs() -> None:
    for entry in entries():
        name = f"fastvec/{entry.id}"
        if entry.hidden or name in gymnasium.registry:
            continue
        gymnasium.register(
            id=name,
            vector_entry_point=functools.partial(make, entry.id),
            max_episode_steps=entry.max_episode_steps,
            reward_threshold=entry.reward_threshold,
        )
