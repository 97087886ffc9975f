"""EnvPool 0.6-0.8's gym API, the one CleanRL's EnvPool scripts were written for:
``import fastvec.envpool.legacy as envpool`` is the one change such a script needs.

>>> import fastvec.envpool.legacy as envpool
>>> envs = envpool.make("Pong-v5", env_type="gym", num_envs=8, episodic_life=True, reward_clip=True, seed=1)
>>> obs = envs.reset()                                            # obs only
>>> obs, reward, done, info = envs.step(np.zeros(8, dtype=np.int32))  # info["TimeLimit.truncated"]

``env_type="gym"`` gives a :class:`fastvec.envpool.LegacyGymEnvPool`; ``"gymnasium"`` and ``"dm"`` are
:mod:`fastvec.envpool`'s.
"""

from __future__ import annotations

from typing import Any

from fastvec.envpool import EnvPoolSpec, list_all_envs, make_dm, make_env, make_gymnasium, make_spec

__all__ = ["EnvPoolSpec", "list_all_envs", "make", "make_dm", "make_gym", "make_gymnasium", "make_spec"]


def make(task_id: str, env_type: str, **kwargs: Any) -> Any:
    """:func:`fastvec.envpool.make`, with ``env_type="gym"`` the 0.6-0.8 gym API (``gym_reset_return_info``
    False by default: ``reset()`` returns the observations only)."""
    return make_env(task_id, env_type, True, kwargs)


def make_gym(task_id: str, **kwargs: Any) -> Any:
    return make_env(task_id, "gym", True, kwargs)
