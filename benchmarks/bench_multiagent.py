"""Multi-agent envs: fastvec's native MPE and its Python-env pool against SuperSuit's process vector env,
RLlib's SyncVectorMultiAgentEnv and AgileRL's AsyncPettingZooVecEnv (when installed), side by side in one run.

    python benchmarks/bench_multiagent.py --seconds 2 --reps 3 --num-envs 8 64 256

Envs: mpe2's ``simple_spread_v3`` (3 agents, continuous physics in numpy; fastvec also runs its C++ port)
and PettingZoo's ``rps_v2`` (rock-paper-scissors, 2 agents: a Python-only env whose step is almost free, so
the vector env's own cost shows). Each measurement: a fresh vector env, reset, 0.3 s of warm-up, then steps
with pre-drawn random actions for --seconds; contenders interleaved (the order rotating each repetition),
median and min-max of --reps repetitions, in agent-steps/s (one step of one agent = one step). Memory: the
proportional set size (PSS, shared pages split between the processes that map them) of the benchmark
process and its children, with 16 envs made, reset and stepped, after the contender's imports.

AgileRL 2.58 does not install beside this project's test dependencies (it pins ``pettingzoo<1.27``, and
pulls wandb, jax, minari and more); its vector env runs unchanged with pettingzoo 1.27 when it and the five
modules it imports at import are put aside and on the path:

    pip install --no-deps --target /tmp/agilerl agilerl lazy-loader tensordict pyvers accelerate safetensors
    PYTHONPATH=/tmp/agilerl python benchmarks/bench_multiagent.py
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
from collections.abc import Callable
from typing import Any

import numpy as np

from fastvec.bench import machine
from fastvec.bench.measure import Cell, interleaved
from fastvec.bench.runners import NotAvailable, Runner, calibrate, measure

WARMUP_SECONDS = 0.3
NUM_ACTION_ROWS = 64


def simple_spread() -> Any:
    from mpe2 import simple_spread_v3

    return simple_spread_v3.parallel_env()


def rps() -> Any:
    from pettingzoo.classic import rps_v2

    return rps_v2.parallel_env()


ENVS: dict[str, tuple[Callable[[], Any], str | None]] = {  # name: (PettingZoo parallel env, fastvec's native id)
    "simple_spread_v3 (3 agents)": (simple_spread, "simple_spread_v3"),
    "rps_v2 (2 agents)": (rps, None),
}


class DictRunner(Runner):
    """A vector env stepped with ``step(actions)``, ``actions`` one of NUM_ACTION_ROWS pre-drawn batches."""

    def __init__(self, env: Any, step: Callable[[Any], Any], actions: list[Any], agent_steps: int) -> None:
        self.env = env
        self._step = step
        self._actions = actions
        self._i = 0
        self.steps_per_call = agent_steps

    def run(self, calls: int) -> int:
        step, actions = self._step, self._actions
        for _ in range(calls):
            step(actions[self._i])
            self._i = (self._i + 1) % len(actions)
        return calls * self.steps_per_call

    def close(self) -> None:
        self.env.close()


def _random_actions(spaces: dict[str, Any], n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = {}
    for agent, space in spaces.items():
        if hasattr(space, "n"):
            out[agent] = rng.integers(0, int(space.n), n)
        else:
            out[agent] = rng.uniform(space.low, space.high, (n, *space.shape)).astype(space.dtype)
    return out


def _fastvec(env_name: str, n: int, native: bool) -> DictRunner:
    import fastvec

    fn, native_id = ENVS[env_name]
    if native and (native_id is None or native_id not in fastvec.list_envs()):
        raise NotAvailable("no native port")
    env = fastvec.make(native_id, n) if native else fastvec.make([fn] * n)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    actions = [_random_actions(spaces, n, rng) for _ in range(NUM_ACTION_ROWS)]
    return DictRunner(env, env.step, actions, n * len(env.possible_agents))


def _supersuit(env_name: str, n: int) -> DictRunner:
    import supersuit as ss

    fn = ENVS[env_name][0]
    probe = fn()
    agents = list(probe.possible_agents)
    space = probe.action_space(agents[0])
    probe.close()
    # One process per core, each stepping n / cores envs in turn: SuperSuit's fastest layout here.
    env = ss.concat_vec_envs_v1(
        ss.pettingzoo_env_to_vec_env_v1(fn()), n, num_cpus=os.cpu_count() or 1, base_class="gymnasium"
    )
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, int(space.n), n * len(agents)) for _ in range(NUM_ACTION_ROWS)]
    return DictRunner(env, env.step, actions, n * len(agents))


def _rllib(env_name: str, n: int) -> DictRunner:
    from ray.rllib.env.vector.sync_vector_multi_agent_env import SyncVectorMultiAgentEnv
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    fn = ENVS[env_name][0]
    env = SyncVectorMultiAgentEnv([lambda: ParallelPettingZooEnv(fn())] * n)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    spaces = env.single_action_spaces
    rows = [_random_actions(spaces, n, rng) for _ in range(NUM_ACTION_ROWS)]
    # Its step takes one dict per env (next-step autoreset: MPE's agents all live until the episode ends).
    actions = [[{a: v[i] for a, v in row.items()} for i in range(n)] for row in rows]
    return DictRunner(env, env.step, actions, n * len(spaces))


def _agilerl(env_name: str, n: int) -> DictRunner:
    from agilerl.vector.pz_async_vec_env import AsyncPettingZooVecEnv

    fn = ENVS[env_name][0]
    env = AsyncPettingZooVecEnv([fn] * n)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    spaces = {a: env.single_action_space(a) for a in env.agents}
    actions = [_random_actions(spaces, n, rng) for _ in range(NUM_ACTION_ROWS)]
    return DictRunner(env, env.step, actions, n * len(spaces))


CONTENDERS: dict[str, tuple[str, Callable[[str, int], DictRunner]]] = {
    "fastvec native": ("fastvec", lambda e, n: _fastvec(e, n, True)),
    "fastvec pyenv": ("fastvec", lambda e, n: _fastvec(e, n, False)),
    "SuperSuit concat_vec_envs (processes)": ("supersuit", _supersuit),
    "RLlib SyncVectorMultiAgentEnv": ("ray", _rllib),
    "AgileRL AsyncPettingZooVecEnv": ("agilerl", _agilerl),
}


def _pss_kib() -> int:
    """PSS of this process and its descendants, in KiB."""
    pids, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        pid = frontier.pop()
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            kids = []
        for k in kids:
            if k not in pids:
                pids.add(k)
                frontier.append(k)
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            pass
    return total


def memory_mib(factory: Callable[[str, int], DictRunner], env_name: str, n: int = 16) -> float:
    factory(env_name, 1).close()  # the contender's imports are not its pool's memory
    gc.collect()
    before = _pss_kib()
    runner = factory(env_name, n)
    try:
        runner.run(50)
        return (_pss_kib() - before) / 1024
    finally:
        runner.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions per config")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    parser.add_argument("--contenders", nargs="+", default=list(CONTENDERS), choices=list(CONTENDERS))
    parser.add_argument("--no-memory", action="store_true", help="skip the memory column")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    cpu = machine.cpu_model()
    load_before = os.getloadavg()
    print(
        f"machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}; load before: {load_before[0]:.2f}"
    )
    available = {name: c for name, c in CONTENDERS.items() if name in args.contenders and machine.installed(c[0])}
    results = []
    for env_name in args.envs:
        memory = {}
        if not args.no_memory:
            for name, (_, factory) in available.items():
                try:
                    memory[name] = memory_mib(factory, env_name)
                except NotAvailable:
                    pass
        for n in args.num_envs:
            cells = {name: Cell() for name in available}
            for _, name in interleaved(list(available), args.reps):
                try:
                    runner = available[name][1](env_name, n)
                except NotAvailable as e:
                    cells[name].status = str(e)
                    continue
                try:
                    runner.chunk = calibrate(runner, WARMUP_SECONDS)
                    cells[name].add(measure(runner, runner.chunk, args.seconds))
                finally:
                    runner.close()
                print(".", end="", flush=True)
            for name in args.contenders:
                row: dict[str, Any] = {"env": env_name, "num_envs": n, "contender": name}
                cell = cells.get(name)
                if cell is None:
                    row["status"] = "not installed"
                elif not cell.steps_per_s:
                    row["status"] = cell.status
                else:
                    rates = cell.steps_per_s
                    row.update(median=cell.median, min=min(rates), max=max(rates), disturbed=cell.disturbed)
                if name in memory:
                    row["memory_mib_16_envs"] = memory[name]
                results.append(row)
    load_after = os.getloadavg()
    print(f"\nload after: {load_after[0]:.2f}\n")
    print(
        "| env | num_envs | contender | agent-steps/s (median) | min-max | native / it | pyenv / it | MiB at 16 envs |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for row in results:
        same = [r for r in results if (r["env"], r["num_envs"]) == (row["env"], row["num_envs"]) and "median" in r]
        ours = {r["contender"]: r["median"] for r in same}
        mib = row.get("memory_mib_16_envs")
        mem = "" if mib is None else "<1" if mib < 1 else f"{mib:.0f}"
        if "median" not in row:
            print(f"| {row['env']} | {row['num_envs']} | {row['contender']} | {row['status']} | | | | {mem} |")
            continue
        ratios = [
            f"{ours[k] / row['median']:.1f}x" if k in ours and not row["contender"].startswith("fastvec") else ""
            for k in ("fastvec native", "fastvec pyenv")
        ]
        flag = " (disturbed)" if row["disturbed"] else ""
        print(
            f"| {row['env']} | {row['num_envs']} | {row['contender']}{flag} | {row['median']:,.0f} | "
            f"{row['min']:,.0f}-{row['max']:,.0f} | {ratios[0]} | {ratios[1]} | {mem} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "machine": cpu,
                    "cores": os.cpu_count(),
                    "load_before": load_before,
                    "load_after": load_after,
                    "results": results,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
