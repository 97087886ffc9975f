"""gymnasium's registry entries for fastvec's native single-agent ids, made at ``import fastvec``: the vector entry
point (``gymnasium.make_vec("fastvec/CartPole-v1", num_envs=8, vectorization_mode="vector_entry_point")``, fastvec's
pool) and the single-env entry point (``gymnasium.make("fastvec/CartPole-v1")``, and with it ``make_vec``'s
``"sync"`` and ``"async"`` modes over :class:`fastvec._single_env.NativeEnv`)."""

from __future__ import annotations

import gymnasium

from fastvec._single_env import MakeEnv
from fastvec.registry import MULTI_AGENT_FAMILIES, entries
from fastvec.vector import MakeNative


def register_gymnasium_envs() -> None:
    for entry in entries():
        name = f"fastvec/{entry.id}"
        if entry.hidden or entry.family in MULTI_AGENT_FAMILIES or name in gymnasium.registry:
            continue
        gymnasium.register(
            id=name,
            entry_point=MakeEnv(entry.id),
            vector_entry_point=MakeNative(entry.id),
            max_episode_steps=entry.max_episode_steps,
            reward_threshold=entry.reward_threshold,
        )
