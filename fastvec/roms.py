"""Atari ROMs, read at run time from the installed ale-py (or ``$ALE_ROMS_DIR``), never shipped with fastvec.

One env id per single-player ROM ale-py ships, named as ale-py's own ``ALE/<Game>-v5`` ids: ``Pong-v5``,
``SpaceInvaders-v5``, ... The emulator is built from the ale-py release in ``pyproject.toml``'s dependency pin
(cmake/ale.cmake reads it there), and the ROMs come from the same release.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
from pathlib import Path

#: Atari ids look like this (used to explain why one is missing).
ATARI_ID = re.compile(r"^[A-Z][A-Za-z0-9]*-v5$")

# ROMs ale-py ships for their multi-player modes only; it registers no
# single-player env for them, and neither does fastvec.
_MULTIPLAYER_ONLY = {"combat", "joust", "maze_craze", "warlords"}


def ale_py_version() -> str:
    """The ale-py release fastvec's emulator is built from (and whose ROMs it reads)."""
    import fastvec._core as _core

    return _core.ale_py_version


def install_hint() -> str:
    return f"pip install ale-py=={ale_py_version()}"


def _ale_py_roms_dir() -> Path | None:
    """ale-py's ROM directory, found without importing ale-py; None if it is not installed."""
    spec = importlib.util.find_spec("ale_py")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "roms"


@functools.cache
def _rom_md5s() -> dict[str, str]:
    roms = _ale_py_roms_dir()
    if roms is None or not (roms / "md5.json").is_file():
        return {}
    return json.loads((roms / "md5.json").read_text())


def rom_ids() -> list[str]:
    """The single-player ROMs of the installed ale-py, by ale-py's name (``"space_invaders"``)."""
    return sorted(r for r in (name.removesuffix(".bin") for name in _rom_md5s()) if r not in _MULTIPLAYER_ONLY)


def env_id(rom: str) -> str:
    """The env id of a ROM: ``"space_invaders"`` -> ``"SpaceInvaders-v5"``."""
    return f"{rom.title().replace('_', '')}-v5"


def rom_path(rom: str) -> Path:
    """The ROM file of ``rom``: in ``$ALE_ROMS_DIR`` if set (as ale-py does), else in the installed ale-py."""
    roms = Path(os.environ["ALE_ROMS_DIR"]) if os.environ.get("ALE_ROMS_DIR") else _ale_py_roms_dir()
    if roms is None:
        raise ModuleNotFoundError(f"Atari envs read their ROMs from ale-py, which is not installed: {install_hint()}")
    path = roms / f"{rom}.bin"
    where = "$ALE_ROMS_DIR" if os.environ.get("ALE_ROMS_DIR") else f"ale-py ({roms})"
    if not path.is_file():
        raise FileNotFoundError(f"no ROM {path.name} in {where}; fastvec's Atari backend expects {install_hint()}")
    expected = _rom_md5s().get(path.name)
    if expected is not None and hashlib.md5(path.read_bytes()).hexdigest() != expected:
        raise ValueError(f"ROM {path} in {where} is corrupted (its MD5 is not ale-py's); reinstall: {install_hint()}")
    return path
