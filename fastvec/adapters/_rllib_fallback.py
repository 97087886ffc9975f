"""When fastvec's RLlib runners sample with RLlib's own loop: the checks and the warning that
``FastvecEnvRunner`` (:mod:`fastvec.adapters._rllib_runner`) and ``FastvecMultiAgentEnvRunner``
(:mod:`fastvec.adapters._rllib_multiagent`) share.

Owner of its state (whether the warning was said): the runner, on the thread that calls ``sample()``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium as gym
from ray.rllib.callbacks.callbacks import RLlibCallback

logger = logging.getLogger("ray.rllib")

EPISODE_CALLBACKS = ("on_episode_created", "on_episode_start", "on_episode_step", "on_episode_end")
# The action spaces whose actions the fast paths draw and hand to the env as RLlib's connectors do.
FAST_ACTION_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete)


def pipelines_reason(pipelines: Iterable[tuple[str, Sequence[str], Sequence[str]]]) -> str | None:
    """Why the fast path does not apply to these connector pipelines ((name, its connectors' class names, RLlib's
    default pipeline's)): the first one with connectors RLlib's default has not; None where all are the default."""
    for name, names, default in pipelines:
        if tuple(names) != tuple(default):
            extra = [n for n in names if n not in default] or list(names)
            return f"the {name} pipeline has connectors of its own ({', '.join(extra)})"
    return None


def callbacks_reason(config: Any, callbacks: Iterable[RLlibCallback]) -> str | None:
    """Why the fast path does not apply: an ``on_episode_*`` callback (a function of ``config``'s, or a method of
    one of the ``callbacks`` objects), which sees each episode step by step; None where there is none."""
    callbacks = list(callbacks)
    for which in EPISODE_CALLBACKS:
        if getattr(config, f"callbacks_{which}", None) is not None or any(
            getattr(type(cb), which) is not getattr(RLlibCallback, which) for cb in callbacks
        ):
            return f"an {which} callback is set (it sees each episode step by step)"
    return None


class FallsBack:
    """What a fast runner does when it samples with its parent's loop: ``_call_fallback_reason`` says why a
    ``sample()`` call does (its ``_fallback_reason``, or a call for whole episodes), and warns once per runner.

    A warning, not INFO: RLlib keeps its logger at WARN, and a user who asked for the fast path should see that
    the runner is not on it. Once per runner, not per call."""

    _fallback_reason: str | None
    _fallback_logged = False
    _fallback_words: str  # "<this runner> samples with <its parent>'s loop"

    def _call_fallback_reason(self, num_timesteps: int | None) -> str | None:
        reason = self._fallback_reason
        if reason is None and num_timesteps is None:
            reason = "sampling whole episodes (num_episodes or batch_mode='complete_episodes')"
        if reason is not None:
            self._fall_back(reason)
        return reason

    def _fall_back(self, reason: str) -> None:
        if not self._fallback_logged:
            self._fallback_logged = True
            logger.warning("%s: %s.", self._fallback_words, reason)
