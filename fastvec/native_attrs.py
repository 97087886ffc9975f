"""What a native env answers by name beyond its options (:meth:`fastvec.native.NativePool.env_call`): the constants
of the gymnasium class it ports (CartPole's ``gravity``, ``masscart``, ...), read from that class made with the same
options, and for Atari a read-only stand-in for ale-py's ``AtariEnv``: ``get_action_meanings()`` and ``ale``
(:class:`ALEStandIn`: ``lives()``, ``getAvailableModes()``, ...), with the game's static facts from ale-py's own
emulator loaded with the ROM, and each env's lives as its last row gave them.

Nothing here is on the step path: each table is made the first time a name is asked for that the env's options do
not answer."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

# What a gymnasium env instance holds that is its state (or its window's), not a constant of the env.
_STATE = frozenset({"state", "steps_beyond_terminated", "isopen", "last_u", "screen", "clock"})
_VALUE_TYPES = (bool, int, float, str, np.number, np.ndarray, list, tuple)


def class_constants(env_id: str, options: dict[str, Any]) -> dict[str, Any]:
    """The public constants of gymnasium's class for ``env_id`` made with ``options`` (those its ``__init__``
    takes), as that class has them: ``{"gravity": 9.8, "masscart": 1.0, ...}`` for CartPole-v1. Empty for an id
    whose gymnasium class is not a classic-control one (its instance would hold a simulation, not constants)."""
    spec = gym.registry.get(env_id)
    entry_point = None if spec is None else spec.entry_point
    if not isinstance(entry_point, str) or not entry_point.startswith("gymnasium.envs.classic_control"):
        return {}
    cls = gym.envs.registration.load_env_creator(entry_point)
    accepted = inspect.signature(cls).parameters
    env = cls(**{k: v for k, v in options.items() if k in accepted})
    try:
        skip = set(dir(gym.Env)) | _STATE
        found = {}
        for name in dir(env):
            if name.startswith("_") or name in skip:
                continue
            value = getattr(env, name)
            if isinstance(value, _VALUE_TYPES) and not callable(value):
                found[name] = value
        return found
    finally:
        env.close()


class ALEStandIn:
    """A read-only stand-in for ale-py's ``ALEInterface`` of one native Atari env, as a worker process would send
    it back (a copy, at the time of the call): the game's modes, difficulties, action sets and screen size, and
    the env's ``lives()`` as of its last row. The emulator itself runs in C++ and is not reachable from Python."""

    def __init__(self, facts: dict[str, Any], lives: int) -> None:
        self._facts = facts
        self._lives = lives

    def lives(self) -> int:
        return self._lives

    def getAvailableModes(self) -> list[int]:  # (ale-py's names)
        return list(self._facts["modes"])

    def getAvailableDifficulties(self) -> list[int]:
        return list(self._facts["difficulties"])

    def getMinimalActionSet(self) -> list[Any]:
        return list(self._facts["minimal"])

    def getLegalActionSet(self) -> list[Any]:
        return list(self._facts["legal"])

    def getScreenDims(self) -> tuple[int, int]:
        return self._facts["screen"]

    def getRAMSize(self) -> int:
        return self._facts["ram_size"]

    def __repr__(self) -> str:
        return f"ALEStandIn(game={self._facts['game']!r}, lives={self._lives})"


def atari_facts(rom: str, rom_file: str, full_action_space: bool) -> dict[str, Any]:
    """The static facts of an Atari game, from ale-py's emulator loaded with its ROM (``rom_file``): its modes,
    difficulties, action sets, the action set the env uses (``full_action_space``: the legal one, else the
    minimal one, as ale-py's AtariEnv) and screen size."""
    import ale_py

    ale = ale_py.ALEInterface()
    ale.setLoggerMode(ale_py.LoggerMode.Error)
    ale.loadROM(rom_file)
    legal, minimal = list(ale.getLegalActionSet()), list(ale.getMinimalActionSet())
    names = {action: name for name, action in ale_py.Action.__members__.items()}
    action_set = legal if full_action_space else minimal
    return {
        "game": rom,
        "modes": list(ale.getAvailableModes()),
        "difficulties": list(ale.getAvailableDifficulties()),
        "legal": legal,
        "minimal": minimal,
        "meanings": [names[a] for a in action_set],
        "screen": tuple(ale.getScreenDims()),
        "ram_size": int(ale.getRAMSize()),
    }


def atari_answers(facts: dict[str, Any], lives: Callable[[int], int]) -> dict[str, Callable[[int], Any]]:
    """What a native Atari env answers by name, each as a function of the env's id: ``get_action_meanings`` (a
    method: a call returns its value) and ``ale`` (a stand-in with the env's lives)."""
    meanings = facts["meanings"]
    return {
        "get_action_meanings": lambda i: _Method(lambda: list(meanings)),
        "ale": lambda i: ALEStandIn(facts, lives(i)),
    }


class _Method:
    """A method of a native env's stand-in, as ``getattr(env, name)`` gives it: called by ``env_method`` and
    ``call``, returned as it is by ``get_attr``."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)
