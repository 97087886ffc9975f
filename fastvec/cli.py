"""The ``fastvec`` command: ``fastvec bench`` (the benchmark) and ``fastvec list`` (the native env ids)."""

from __future__ import annotations

import argparse
import os
import platform
import signal
import sys

# How `fastvec list` names the registry's families ("" is classic control, and the test-only envs, never listed).
FAMILY_NAMES = {
    "": "classic control",
    "atari": "Atari (ALE)",
    "mujoco": "MuJoCo (gymnasium's v5 envs)",
    "dm_control": "DeepMind Control Suite (dm_control)",
    "mpe": "multi-agent particle envs (mpe2)",
}


def version() -> str:
    """``fastvec 0.1.0 (native backends: atari, mujoco 4.0.1, xla; Python 3.11.7)``: what a bug report needs."""
    from fastvec import __version__, _core

    backends = [name for name, on in (("atari", _core.has_atari), ("mujoco", _core.has_mujoco)) if on]
    if _core.has_mujoco:
        backends[-1] += f" {_core.mujoco_version}"
    if _core.has_xla:
        backends.append("xla")
    return (
        f"fastvec {__version__} (native backends: {', '.join(backends) or 'none'}; Python {platform.python_version()})"
    )


def make_parser() -> argparse.ArgumentParser:
    from fastvec import registry

    p = argparse.ArgumentParser(
        prog="fastvec",
        description="Vectorized RL environments stepped in a C++ thread pool.",
        epilog="fastvec COMMAND --help prints a command's options.",
    )
    p.add_argument("--version", action="version", version=version())
    commands = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # bench has a parser of its own (fastvec.bench.cli); this entry only lists it, and main() hands its arguments on.
    commands.add_parser("bench", help="measure steps/s and memory against the other vector envs", add_help=False)
    lister = commands.add_parser(
        "list",
        help="list the native env ids (any other gymnasium id runs in the Python-env pool)",
        description="The env ids fastvec steps natively, by family.",
    )
    lister.add_argument("--ids", action="store_true", help="only the ids, one per line (for scripts)")
    lister.add_argument(
        "--family",
        choices=sorted({e.family or "classic" for e in registry.entries()}),
        help="only this family's ids",
    )
    return p


def _list(ids_only: bool, family: str | None) -> int:
    from fastvec import registry

    if family == "classic":
        family = ""
    listed = set(registry.list_envs())
    by_family: dict[str, list[str]] = {}
    for entry in registry.entries():
        if entry.id in listed and (family is None or entry.family == family):
            by_family.setdefault(entry.family, []).append(entry.id)
    if ids_only:
        for env_ids in by_family.values():
            print("\n".join(sorted(env_ids)))
        return 0
    print("Native envs (C++, stepped in the thread pool):")
    for fam, env_ids in by_family.items():
        print(f"\n{FAMILY_NAMES.get(fam, fam)}: {len(env_ids)}")
        for env_id in sorted(env_ids):
            print(f"  {env_id}")
    print("\nAny other gymnasium env id, a callable returning a gymnasium.Env, or a list of such callables")
    print("runs in the Python-env pool (worker processes with shared memory) through the same fastvec.make().")
    return 0


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "bench":
        from fastvec.bench.cli import main as bench_main

        return bench_main(argv[1:])
    args = make_parser().parse_args(argv)  # exits 0 after --help or --version, 2 on a bad command or option
    return _list(args.ids, args.family)


def main(argv: list[str] | None = None) -> int:
    """``fastvec bench [options]``, ``fastvec list [--ids] [--family F]``, ``fastvec --help``, ``--version``."""
    try:
        code = _main(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()  # here, so that a reader that went away is met below, not at the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader stopped reading (`fastvec list | head -1`), as `yes | head -1` stops `yes`: quietly. stdout now
        # points at /dev/null, so that Python's own flush at exit has nothing to complain about.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE  # what a shell reports for a process that SIGPIPE ended


if __name__ == "__main__":
    sys.exit(main())
