"""The ``fastvec`` command: ``fastvec bench`` and ``fastvec list``."""

from __future__ import annotations

import sys


def _list() -> int:
    from fastvec.registry import list_envs

    print("Native envs (C++, stepped in the thread pool):")
    for env_id in list_envs():
        print(f"  {env_id}")
    print("\nAny other gymnasium env id, a callable returning a gymnasium.Env, or a list of such callables")
    print("runs in the Python-env pool (worker processes with shared memory) through the same fastvec.make().")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``fastvec bench [options]`` or ``fastvec list``."""
    argv = sys.argv[1:] if argv is None else argv
    usage = "usage: fastvec {bench,list} [options]   (fastvec bench --help for the benchmark's options)"
    if not argv or argv[0] in ("-h", "--help"):
        print(usage)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "bench":
        from fastvec.bench.cli import main as bench_main

        return bench_main(rest)
    if command == "list":
        return _list()
    print(f"fastvec: unknown command {command!r}\n{usage}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
