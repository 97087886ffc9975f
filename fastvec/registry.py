"""The env registry: ids, their native implementation, defaults and options.

Adding a native env is one header in ``src/envs``, one ``add_env`` line in its
``register_<family>.cpp`` and one :func:`register` line here. Atari ids
(``Pong-v5``, ...) are one per ROM that the installed ale-py ships.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib.util
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastvec import _core

#: The ale-py release whose emulator fastvec's Atari backend is built from
#: (cmake/ale.cmake), and whose ROMs it reads.
ALE_PY_VERSION = "0.12.1"


@dataclass(frozen=True)
class EnvEntry:
    """What fastvec knows about an env id."""

    id: str
    native: str  #: name of the env in the native module
    max_episode_steps: int | None = None
    options: dict[str, float] = field(default_factory=dict)  #: accepted keyword arguments and defaults
    reward_threshold: float | None = None
    hidden: bool = False  #: test-only envs, not listed
    rom: str | None = None  #: Atari: the ROM's id in ale-py (``"space_invaders"``)


_REGISTRY: dict[str, EnvEntry] = {}


def register(
    id: str,
    native: str,
    *,
    max_episode_steps: int | None = None,
    options: dict[str, float] | None = None,
    reward_threshold: float | None = None,
    hidden: bool = False,
    rom: str | None = None,
) -> None:
    """Registers a native env under ``id``."""
    _REGISTRY[id] = EnvEntry(id, native, max_episode_steps, dict(options or {}), reward_threshold, hidden, rom)


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


# EnvPool's option names, gymnasium v5's defaults (ALE/<Game>-v5 with
# AtariPreprocessing and FrameStackObservation(4)).
ATARI_OPTIONS: dict[str, float] = {
    "frame_skip": 4, "img_height": 84, "img_width": 84, "gray_scale": True, "stack_num": 4, "noop_max": 30,
    "use_fire_reset": False, "episodic_life": False, "reward_clip": False, "repeat_action_probability": 0.25,
    "full_action_space": False, "channels_last": False,
}
_ATARI_ID = re.compile(r"^[A-Z][A-Za-z0-9]*-v5$")
_INSTALL_ALE = f"pip install ale-py=={ALE_PY_VERSION}"


def _ale_py_roms_dir() -> Path | None:
    """ale-py's ROM directory, found without importing ale-py; None if it is not installed."""
    spec = importlib.util.find_spec("ale_py")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "roms"


# ROMs ale-py ships for their multi-player modes only; it registers no
# single-player env for them, and neither does fastvec.
_MULTIPLAYER_ONLY = {"combat", "joust", "maze_craze", "warlords"}


def _atari_rom_ids() -> list[str]:
    return sorted(r for r in (name.removesuffix(".bin") for name in _rom_md5s()) if r not in _MULTIPLAYER_ONLY)


def rom_path(rom: str) -> Path:
    """The ROM file of ``rom``: in ``$ALE_ROMS_DIR`` if set (as ale-py does), else in the installed ale-py."""
    roms = Path(os.environ["ALE_ROMS_DIR"]) if os.environ.get("ALE_ROMS_DIR") else _ale_py_roms_dir()
    if roms is None:
        raise ModuleNotFoundError(f"Atari envs read their ROMs from ale-py, which is not installed: {_INSTALL_ALE}")
    path = roms / f"{rom}.bin"
    where = "$ALE_ROMS_DIR" if os.environ.get("ALE_ROMS_DIR") else f"ale-py ({roms})"
    if not path.is_file():
        raise FileNotFoundError(f"no ROM {path.name} in {where}; fastvec's Atari backend expects {_INSTALL_ALE}")
    expected = _rom_md5s().get(path.name)
    if expected is not None and hashlib.md5(path.read_bytes()).hexdigest() != expected:
        raise ValueError(f"ROM {path} in {where} is corrupted (its MD5 is not ale-py's); reinstall: {_INSTALL_ALE}")
    return path


@functools.cache
def _rom_md5s() -> dict[str, str]:
    roms = _ale_py_roms_dir()
    if roms is None or not (roms / "md5.json").is_file():
        return {}
    return json.loads((roms / "md5.json").read_text())


if _core.has_atari:
    for _rom in _atari_rom_ids():
        register(f"{_rom.title().replace('_', '')}-v5", "Atari", max_episode_steps=27_000, options=ATARI_OPTIONS,
                 rom=_rom)


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
    if _ATARI_ID.match(env_id.removeprefix("fastvec/")) and not any(e.rom for e in _REGISTRY.values()):
        if not _core.has_atari:
            raise ValueError(f"unknown env_id {env_id!r}: this fastvec was built without the Atari backend "
                             "(FASTVEC_ATARI=OFF); rebuild with it to run Atari games")
        raise ValueError(f"unknown env_id {env_id!r}: Atari ids come from ale-py's ROMs; {_INSTALL_ALE}")
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
