"""Multi-agent env ids: which constructor ``fastvec.make(env_id, n, backend="python")`` runs in the Python-env pool.

One table, one function, so that a native family (MPE in ``src/envs/mpe``, registered in the registry) can add its
ids beside these without touching the routing: the registry decides what runs natively; this says what an id means
in the Python-env pool.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

# mpe2 1.1's parallel envs, by the ids PettingZoo gave them (each is the module mpe2.<id>).
MPE2_IDS = (
    "simple_v3",
    "simple_adversary_v3",
    "simple_crypto_v3",
    "simple_push_v3",
    "simple_reference_v3",
    "simple_speaker_listener_v4",
    "simple_spread_v3",
    "simple_tag_v3",
    "simple_world_comm_v3",
)


class Mpe2ParallelEnv:
    """``mpe2.<env_id>.parallel_env(**kwargs)`` as a picklable constructor (it runs in the pool's workers)."""

    def __init__(self, env_id: str, kwargs: dict[str, Any]) -> None:
        self.env_id, self.kwargs = env_id, dict(kwargs)

    def __call__(self) -> Any:
        return importlib.import_module(f"mpe2.{self.env_id}").parallel_env(**self.kwargs)


def python_constructor(env_id: str, env_kwargs: dict[str, Any]) -> Callable[[], Any] | None:
    """The constructor of one multi-agent env of ``env_id`` with ``env_kwargs`` for the Python-env pool, or None if
    ``env_id`` is no multi-agent id."""
    if env_id in MPE2_IDS:
        return Mpe2ParallelEnv(env_id, env_kwargs)
    return None


def multiagent_ids() -> list[str]:
    """The multi-agent ids ``fastvec.make`` knows (for "did you mean" and listings)."""
    return list(MPE2_IDS)
