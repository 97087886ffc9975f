"""The machine a benchmark runs on: CPU model, other processes' load (from /proc), process trees and their
memory, what is installed, and which fastvec the numbers are for."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

BUSY_OTHER_SHARE = 0.15  # share of the CPUs that other processes used, above which a measurement is "busy"
IDLE_PROBE_SECONDS = 1.0  # how long to watch the machine before starting
# (pettingzoo and after: the multi-agent envs' rows; dm-control and shimmy: the dm_control tasks')
VERSIONS_OF = (
    "fastvec numpy gymnasium ale-py stable-baselines3 envpool torch ray pettingzoo mpe2 supersuit agilerl "
    "dm-control shimmy"
).split()


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def describe() -> dict[str, Any]:
    """CPU model, core count (all, and usable by this process) and platform."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "platform": platform.platform(),
    }


# -- load ----------------------------------------------------------------------

# Busy detection counts user-space CPU time only: kernel housekeeping grows with the number of worker
# processes a contender keeps alive (a few % of the CPUs at 512 idle workers) and is not someone else's job.
# Per-process times are tick-sampled: with hundreds of briefly running workers and measurements well
# under a second, the workers' time is undercounted and a process-per-env row may be marked busy wrongly.


def _machine_user_cpu() -> float | None:
    """User-space CPU seconds of the whole machine so far, from /proc/stat (user + nice)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    return (int(fields[1]) + int(fields[2])) / os.sysconf("SC_CLK_TCK")


def processes() -> Iterator[tuple[int, list[str]]]:
    """(pid, fields of /proc/pid/stat after the command name) for every live process.

    Fields, 0-based: 1 the parent's pid, 11 the user time in ticks, 21 the resident pages.
    """
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                yield int(name), f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue


def process_tree(root: int) -> list[tuple[int, list[str]]]:
    """``processes()`` of ``root`` and all its live descendants."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for pid, fields in processes():
        children.setdefault(int(fields[1]), []).append(pid)
        stats[pid] = fields
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            out.append((pid, stats[pid]))
        todo.extend(children.get(pid, []))
    return out


def _live_children_user_cpu() -> float:
    """User-space CPU seconds used so far by this process's live descendants (the workers of open envs,
    also those a forkserver started)."""
    me, hz = os.getpid(), os.sysconf("SC_CLK_TCK")
    return sum(int(fields[11]) / hz for pid, fields in process_tree(me) if pid != me)


def _own_user_cpu() -> float:
    """User-space CPU seconds used by this process, its reaped children and its live ones."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    return own + reaped + _live_children_user_cpu()


class CpuShare:
    """Share of the machine's CPUs that other processes used in user space since construction."""

    def __init__(self) -> None:
        self._machine = _machine_user_cpu()
        self._own = _own_user_cpu()
        self._wall = time.perf_counter()

    def other(self) -> float | None:
        machine = _machine_user_cpu()
        if machine is None or self._machine is None:
            return None
        wall = time.perf_counter() - self._wall
        other = (machine - self._machine) - (_own_user_cpu() - self._own)
        return max(0.0, other) / (wall * (os.cpu_count() or 1))


# A CPU-bound Python loop that also ends if the bench dies without stopping it (its parent is gone).
BUSY_LOOP = """
import os, sys
parent = int(sys.argv[1])
while os.getppid() == parent:
    for _ in range(1_000_000):
        pass
"""


class BusyLoops:
    """``count`` CPU-bound processes (a Python busy loop each) for the duration of a ``with`` block: the cores a
    learner, a second runner or another job would take while the pool steps (``fastvec bench --contention``).

    They are this process's children, so CpuShare counts them as the run's own CPU, not as a busy machine.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self._procs: list[subprocess.Popen] = []

    @property
    def pids(self) -> list[int]:
        """The busy loops' process ids (while they run)."""
        return [p.pid for p in self._procs]

    def __enter__(self) -> BusyLoops:
        for _ in range(self.count):
            self._procs.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP, str(os.getpid())]))
        if self._procs:
            time.sleep(0.2)  # running before the first measurement
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self._procs:
            p.kill()
        for p in self._procs:
            p.wait()
        self._procs.clear()


class LoadMonitor:
    """Load averages before and after; other processes' CPU share just before and during the run.

    The load average lags by a minute and counts this run's own worker processes, so it is recorded
    but the CPU shares decide whether the machine was busy.
    """

    def __init__(self) -> None:
        self.load_before = os.getloadavg()
        probe = CpuShare()
        time.sleep(IDLE_PROBE_SECONDS)
        self.share_before = probe.other()
        self._share = CpuShare()

    def finish(self) -> dict[str, Any]:
        load_after = os.getloadavg()
        other_share = self._share.other()
        reasons = []
        if self.share_before is not None and self.share_before > BUSY_OTHER_SHARE:
            reasons.append(f"other processes used {self.share_before:.0%} of the CPUs just before the run")
        if other_share is not None and other_share > BUSY_OTHER_SHARE:
            reasons.append(f"other processes used {other_share:.0%} of the CPUs during the run")
        return {
            "load_before": self.load_before,
            "load_after": load_after,
            "other_cpu_share_before": self.share_before,
            "other_cpu_share": other_share,
            "busy": bool(reasons),
            "busy_reasons": reasons,
        }


# -- memory --------------------------------------------------------------------


def rss(pid: int) -> int:
    """Resident memory of one process in bytes (VmRSS of /proc/pid/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def pss(pid: int) -> int | None:
    """Proportional set size of one process in bytes (shared pages split between their users); None when
    /proc/pid/smaps_rollup is unreadable."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("Pss:")) * 1024
    except (OSError, StopIteration):
        return None


def tree_memory(root: int) -> dict[str, Any]:
    """RSS and PSS summed over a process and all its descendants, and how many processes there are.

    RSS counts shared pages once per process; PSS is None when one process's is unreadable.
    """
    total_rss, count = 0, 0
    total_pss: int | None = 0
    for pid, _ in process_tree(root):
        try:
            r = rss(pid)
        except (OSError, RuntimeError):  # exited meanwhile
            continue
        p = pss(pid)
        total_rss += r
        total_pss = None if total_pss is None or p is None else total_pss + p
        count += 1
    return {
        "rss_mib": total_rss / 2**20,
        "pss_mib": None if total_pss is None else total_pss / 2**20,
        "processes": count,
    }


# -- software ------------------------------------------------------------------


def installed(package: str) -> bool:
    """Whether ``package`` (maybe dotted: ``ray.rllib``) can be imported."""
    try:
        return importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in VERSIONS_OF:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def source_state(where: str) -> str:
    """The commit of the git checkout holding the directory ``where``, and whether its tracked files were edited.

    The numbers are for the installed fastvec, which is this checkout only if it was (re)installed from it.
    """
    try:
        head = subprocess.run(
            ["git", "-C", where, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{head}{' with uncommitted changes' if dirty else ''}"


def built_at() -> str:
    """When the installed fastvec's native module was written (it measures a checkout only if installed from it)."""
    try:
        from fastvec import _core

        return time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(_core.__file__)))
    except (ImportError, OSError):
        return "at an unknown time"
