"""The ceiling: one fastvec env stepped alone in a C++ loop, no pool around it (or a few such loops at once)."""

from __future__ import annotations

import functools
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastvec.bench.machine import CpuShare
from fastvec.bench.runners import NotAvailable, Runner


class LoopCeiling(Runner):
    """The ceiling: one fastvec env stepped alone in a C++ loop on this thread (``fastvec._core.loop_rate``)
    with uniformly random actions, its own terminations, the registry's episode limit and resets (``next_step``:
    a step of their own, as the pool's default autoreset mode has them; else within the step that ended the
    episode, as same-step autoreset): the trajectories the pool steps, with no pool around them (not a bare
    physics or emulator loop). One thread can step no faster; k threads, k times faster at most. It does not
    depend on num_envs.

    ``loops`` > 1 runs that many such loops at once, one env each on threads of their own (loop_rate releases
    the GIL), and sums their rates: what the cores really deliver side by side (a shared cache, memory
    bandwidth, a VM's vCPUs), against which the projection (``loops`` x one loop) can be checked.

    Each measurement is one loop of about ``seconds``; its rate excludes the env's construction, which every
    loop repeats (a MuJoCo model is parsed again), so the loop is never timed from Python.
    """

    steps_per_call = 1
    MIN_STEPS = 100

    def __init__(self, env_id: str, loops: int = 1, next_step: bool = True) -> None:
        import fastvec
        from fastvec import _core
        from fastvec.native import env_options

        if env_id not in fastvec.list_envs():
            raise NotAvailable("not available in this build")
        entry = fastvec.registry.lookup(env_id)
        options = env_options(entry, {})  # the options fastvec.make(env_id) steps with: its defaults
        self._loop = functools.partial(
            _core.loop_rate,
            entry.native,
            options.numbers,
            options.texts,
            options.ranges,
            max_episode_steps=entry.max_episode_steps or 0,
            next_step=next_step,
        )
        self._loops = loops
        self._threads = ThreadPoolExecutor(loops) if loops > 1 else None
        self._steps_per_s = 0.0  # of all loops together

    def run(self, calls: int) -> int:
        """Steps ``calls`` steps in each loop (constructions included: for the timing, see :meth:`timed`)."""
        if self._threads is None:
            self._steps_per_s = self._loop(steps=calls)
        else:
            self._steps_per_s = sum(self._threads.map(lambda steps: self._loop(steps=steps), [calls] * self._loops))
        return calls * self._loops

    def _steps_for(self, seconds: float) -> int:
        return max(self.MIN_STEPS, int(self._steps_per_s / self._loops * seconds))

    def warm_up(self, seconds: float) -> None:
        """Loops until ``seconds`` have passed, which also estimates the rate :meth:`timed` sizes its loop by."""
        start, steps = time.perf_counter(), self.MIN_STEPS
        while True:
            self.run(steps)
            if time.perf_counter() - start >= seconds:
                return
            steps = self._steps_for(min(seconds, 0.25))

    def timed(self, seconds: float) -> dict[str, Any]:
        share = CpuShare()
        self.run(self._steps_for(seconds))
        rate = self._steps_per_s
        return {"steps_per_s": rate, "us_per_call": 1e6 / rate, "other_cpu": share.other()}

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown()


def make_ceiling(env_id: str, num_envs: int, loops: int = 1, next_step: bool = True) -> Runner:
    if loops > num_envs:
        raise NotAvailable(f"n/a (fewer envs than {loops} loops)")
    return LoopCeiling(env_id, loops, next_step)
