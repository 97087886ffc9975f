"""The env registry: what fastvec runs natively, as data.

The native envs, their families and option tables come from the compiled module, where
each is registered by one ``add_env`` line in its ``src/bindings/register_<family>.cpp``
(next to its header in ``src/envs``); Atari ids are one per ROM the installed
ale-py ships (:mod:`fastvec.roms`). A module built without a family's backend
(``FASTVEC_ATARI=OFF``, ``FASTVEC_MUJOCO=OFF``) still names that family's ids, as
entries that are not built: :func:`family_ids` lists them, :func:`list_envs` does not,
and :func:`lookup` says how to build them. Nothing here is read until it is first asked for.
"""

from __future__ import annotations

import difflib
import functools
import math
from dataclasses import dataclass, field
from typing import Any

import fastvec.roms as roms

#: The native families whose envs are multi-agent (each env's rows are its agents', ``fastvec.make`` gives a
#: :class:`fastvec.MultiAgentVectorEnv`): not gymnasium envs, so not in gymnasium's registry.
MULTI_AGENT_FAMILIES = ("mpe",)


@dataclass(frozen=True)
class OptionSpec:
    """One keyword argument a native env takes, as its C++ option table declares it."""

    name: str
    #: "bool", "int", "float", "range" (a (low, high) pair), "file" (a path: MuJoCo's ``xml_file``), "int|str" (an
    #: index or a name: Ant's ``main_body``), "text" (a str, None or a list of str: FrozenLake's ``map_name`` and
    #: ``desc``), or "str": filled in by fastvec (a ROM's path), not a keyword
    kind: str
    default: Any
    low: float = -math.inf
    high: float = math.inf


@dataclass(frozen=True)
class EnvEntry:
    """What fastvec knows about an env id."""

    id: str
    native: str  #: the native env's name in the compiled module
    max_episode_steps: int | None = None
    options: dict[str, Any] = field(default_factory=dict)  #: the keyword arguments it accepts, with their defaults
    reward_threshold: float | None = None
    hidden: bool = False  #: test-only envs, not listed
    rom: str | None = None  #: Atari: the ROM's id in ale-py (``"space_invaders"``)
    family: str = ""  #: "atari", "mujoco", "mpe", "toy_text", or "" (classic control, and the test-only envs)
    option_specs: tuple[OptionSpec, ...] = ()
    built: bool = True  #: False: the compiled module was built without its family's backend (no options, no pool)


def _python_default(option: dict[str, Any]) -> dict[str, Any]:
    """A C++ option as Python sees it: an index-or-name option's default ("index:1", "name:torso") as the int or
    the name a user passes."""
    if option["kind"] == "int|str":
        kind, _, value = option["default"].partition(":")
        return {**option, "default": int(value) if kind == "index" else value}
    return option


@functools.cache
def _entries() -> dict[str, EnvEntry]:
    import fastvec._core as _core

    entries: dict[str, EnvEntry] = {}
    for native in _core.native_envs():
        specs = tuple(OptionSpec(**_python_default(o)) for o in native["options"])
        keywords = tuple(o for o in specs if o.kind != "str")
        common = {
            "native": native["id"],
            "max_episode_steps": native["max_episode_steps"] or None,
            "options": {o.name: o.default for o in keywords},
            "reward_threshold": native["reward_threshold"],
            "hidden": native["hidden"],
            "family": native["family"],
            "option_specs": keywords,
            "built": native["built"],
        }
        if native["family"] == "atari":
            for rom in roms.rom_ids():
                entries[roms.env_id(rom)] = EnvEntry(roms.env_id(rom), rom=rom, **common)
        else:
            entries[native["id"]] = EnvEntry(native["id"], **common)
    return entries


def list_envs() -> list[str]:
    """The ids fastvec runs natively, e.g. ``fastvec.list_envs()[:2] == ['Acrobot-v1', 'CartPole-v1']``."""
    return sorted(e.id for e in _entries().values() if e.built and not e.hidden)


def entries() -> list[EnvEntry]:
    """Every entry this build runs, hidden ones included (for gymnasium's registration and the tests)."""
    return [e for e in _entries().values() if e.built]


def family_ids(family: str) -> tuple[str, ...]:
    """The ids of ``family``'s envs, whether or not this build has its backend (the tests and benchmarks select
    them by it in any build), sorted: ``family_ids("mujoco")[:2] == ('Ant-v5', 'HalfCheetah-v5')``."""
    return tuple(sorted(e.id for e in _entries().values() if e.family == family))


def _not_built(env_id: str, family: str) -> ValueError:
    option = f"FASTVEC_{family.upper()}"
    return ValueError(
        f"env_id {env_id!r} needs fastvec's {family} backend, which this fastvec was built without ({option}=OFF); "
        f"rebuild it with {option}=ON"
    )


def lookup(env_id: str) -> EnvEntry:
    """The registry entry of ``env_id``; a ValueError with suggestions if there is none."""
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a str, got {type(env_id).__name__}")
    name = env_id.removeprefix("fastvec/")
    entry = _entries().get(name)
    if entry is not None:
        if not entry.built:
            raise _not_built(env_id, entry.family)
        return entry
    if roms.ATARI_ID.match(name) and not any(e.rom and e.built for e in _entries().values()):
        import fastvec._core as _core

        if not _core.has_atari:
            raise _not_built(env_id, "atari")
        raise ValueError(f"unknown env_id {env_id!r}: Atari ids come from ale-py's ROMs; {roms.install_hint()}")
    close = difflib.get_close_matches(env_id, list_envs(), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else f"; known ids: {list_envs()}"
    raise ValueError(f"unknown env_id {env_id!r}{hint}")
