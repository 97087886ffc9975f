"""``fastvec bench --training``: the wall time of a training loop, updates included, on each backend.

Users decide on the time to train, not on env steps/s: this times whole iterations of three frameworks' PPO on
CartPole-v1 (SB3's learn(), Tianshou's collector and update, RLlib's Algorithm.train()), each over its own vector
envs and over fastvec's adapter, in milliseconds per 1,000 env steps. The rules are the bench's own
(:func:`fastvec.bench.measure.run_grid`: construction and warm-up untimed, the rows interleaved over repetitions,
medians, other processes' load per repetition), and every row says how many intra-op threads torch ran: beside a
busy core, torch's default threads spin at their barriers and the update, not the env, sets the pace.

    fastvec bench --training                             # every row, torch's default threads
    fastvec bench --training --torch-threads 1 default   # both, interleaved in one run
    fastvec bench --training --contention                # with one core taken by a busy loop
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import logging
import os
import shlex
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastvec.bench import machine, measure, report
from fastvec.bench.contenders import Contender
from fastvec.bench.machine import BUSY_OTHER_SHARE
from fastvec.bench.measure import Cell
from fastvec.bench.runners import Runner

ENV_ID = "CartPole-v1"
NUM_ENVS = 8
SEED = 0
DEFAULT_SECONDS, QUICK_SECONDS = 5.0, 1.0
DEFAULT_REPS, QUICK_REPS = 3, 1
# One iteration of each framework, as its own CartPole settings have it (timing needs no more than one):
# SB3: rl-baselines3-zoo's PPO CartPole-v1 (8 envs, n_steps 32, batch 256, 20 epochs; constant schedules).
SB3_PPO: dict[str, Any] = {
    "n_steps": 32,
    "batch_size": 256,
    "n_epochs": 20,
    "gae_lambda": 0.8,
    "gamma": 0.98,
    "ent_coef": 0.0,
}
# Tianshou: its own CartPole PPO test's (minibatches of 64, 10 passes, a [64, 64] net), 1,000 steps a collect where
# its test collects 2,000: an iteration takes seconds on a busy machine as it is.
TIANSHOU_STEPS, TIANSHOU_BATCH, TIANSHOU_REPEAT = 1000, 64, 10
# RLlib: PPO's default torch module, 1,000 steps a batch (125 a env), minibatches of 128, 6 epochs, all in this
# process (no remote runner or learner: the same process as the other rows).
RLLIB_BATCH, RLLIB_MINIBATCH, RLLIB_EPOCHS = 1000, 128, 6


class TrainingRunner(Runner):
    """One framework's training loop, built and reset: ``run(calls)`` makes ``calls`` iterations (collect, then
    update) and returns the env steps they collected. Before each call it sets torch's intra-op threads to
    ``torch_threads``, and records what torch reports after it in ``seen`` (a framework could change it)."""

    def __init__(self, torch_threads: int, seen: set[int]) -> None:
        import torch

        self._torch = torch
        self.torch_threads = torch_threads
        self.seen = seen
        torch.set_num_threads(torch_threads)
        torch.manual_seed(SEED)

    def run(self, calls: int) -> int:
        self._torch.set_num_threads(self.torch_threads)
        steps = sum(self.iteration() for _ in range(calls))
        self.seen.add(self._torch.get_num_threads())
        return steps

    def iteration(self) -> int:
        raise NotImplementedError


class SB3Training(TrainingRunner):
    """SB3's PPO("MlpPolicy") on ``backend`` ("dummy": DummyVecEnv, "subproc": SubprocVecEnv, both as
    make_vec_env makes them; "fastvec": fastvec.sb3_vec): one learn() call of one rollout and one update."""

    def __init__(self, backend: str, torch_threads: int, seen: set[int]) -> None:
        super().__init__(torch_threads, seen)
        from stable_baselines3 import PPO
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        import fastvec

        if backend == "fastvec":
            self.env = fastvec.sb3_vec(ENV_ID, NUM_ENVS, seed=SEED)
        else:
            cls, kwargs = (SubprocVecEnv, {"start_method": "fork"}) if backend == "subproc" else (DummyVecEnv, None)
            self.env = make_vec_env(ENV_ID, NUM_ENVS, seed=SEED, vec_env_cls=cls, vec_env_kwargs=kwargs)
        self.steps_per_call = SB3_PPO["n_steps"] * NUM_ENVS
        self.model = PPO("MlpPolicy", self.env, learning_rate=1e-3, seed=SEED, device="cpu", **SB3_PPO)

    def iteration(self) -> int:
        before = self.model.num_timesteps
        self.model.learn(self.steps_per_call, reset_num_timesteps=False)
        return self.model.num_timesteps - before

    def close(self) -> None:
        self.env.close()


class TianshouTraining(TrainingRunner):
    """Tianshou 2's PPO (its CartPole test's) on ``backend`` ("dummy": DummyVectorEnv, "subproc":
    SubprocVectorEnv, over gymnasium's env; "fastvec": fastvec.tianshou_venv): one collect and one update, as its
    OnPolicyTrainer's training step makes them."""

    def __init__(self, backend: str, torch_threads: int, seen: set[int]) -> None:
        super().__init__(torch_threads, seen)
        import gymnasium as gym
        import torch
        from tianshou.algorithm import PPO
        from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
        from tianshou.algorithm.optim import AdamOptimizerFactory
        from tianshou.data import Collector, CollectStats, VectorReplayBuffer
        from tianshou.env import DummyVectorEnv, SubprocVectorEnv
        from tianshou.utils.net.common import Net
        from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

        import fastvec

        if backend == "fastvec":
            self.envs: Any = fastvec.tianshou_venv(ENV_ID, NUM_ENVS, seed=SEED)
        else:
            fns = [lambda: gym.make(ENV_ID)] * NUM_ENVS
            self.envs = SubprocVectorEnv(fns, context="fork") if backend == "subproc" else DummyVectorEnv(fns)
            self.envs.seed(SEED)
        net = Net(state_shape=(4,), hidden_sizes=[64, 64])
        actor, critic = DiscreteActor(preprocess_net=net, action_shape=2), DiscreteCritic(preprocess_net=net)
        policy = DiscreteActorPolicy(
            actor=actor, dist_fn=torch.distributions.Categorical, action_space=gym.spaces.Discrete(2)
        )
        self.algo = PPO(
            policy=policy,
            critic=critic,
            optim=AdamOptimizerFactory(lr=3e-4),
            gamma=0.99,
            max_grad_norm=0.5,
            eps_clip=0.2,
            vf_coef=0.5,
            ent_coef=0.0,
            gae_lambda=0.95,
        )
        self.collector = Collector[CollectStats](self.algo, self.envs, VectorReplayBuffer(TIANSHOU_STEPS, NUM_ENVS))
        self.collector.reset()
        self.steps_per_call = TIANSHOU_STEPS

    def iteration(self) -> int:
        from tianshou.utils.torch_utils import policy_within_training_step

        with policy_within_training_step(self.algo.policy):
            stats = self.collector.collect(n_step=TIANSHOU_STEPS)
            self.algo.update(buffer=self.collector.buffer, batch_size=TIANSHOU_BATCH, repeat=TIANSHOU_REPEAT)
            self.collector.reset_buffer(keep_statistics=True)
        return int(stats.n_collected_steps)

    def close(self) -> None:
        self.envs.close()


class RLlibTraining(TrainingRunner):
    """RLlib's PPO Algorithm.train() with ``backend`` "default" (RLlib's runner and vectorization over gymnasium's
    env) or "fastvec" (FastvecEnvRunner, through fastvec's configure): the configs of the bench's sampling rows
    (:func:`fastvec.bench.ray_runners.rllib_config`), with a learner in this process."""

    def __init__(self, backend: str, torch_threads: int, seen: set[int]) -> None:
        super().__init__(torch_threads, seen)
        import ray

        from fastvec.bench.ray_runners import rllib_config

        if not ray.is_initialized():  # build_algo() would start Ray with a worker per core, for nothing here
            ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)

        config = rllib_config(ENV_ID, NUM_ENVS, backend).training(
            train_batch_size_per_learner=RLLIB_BATCH, minibatch_size=RLLIB_MINIBATCH, num_epochs=RLLIB_EPOCHS
        )
        self.algo = config.learners(num_learners=0).build_algo()
        self.steps_per_call = RLLIB_BATCH

    def iteration(self) -> int:
        return int(self.algo.train()["env_runners"]["num_env_steps_sampled"])

    def close(self) -> None:
        self.algo.stop()


@dataclass(frozen=True)
class Backend:
    """A row before its torch thread count is chosen: the framework, the vector env it trains on, its runner."""

    key: str
    framework: str
    label: str
    package: str
    runner: Callable[[int, set[int]], TrainingRunner]
    uses_processes: bool = False
    baseline: bool = False  # the framework's own vector env that the ratios compare with


BACKENDS = [
    Backend("sb3-dummy", "SB3 PPO", "DummyVecEnv", "stable_baselines3", lambda t, s: SB3Training("dummy", t, s)),
    Backend(
        "sb3-subproc",
        "SB3 PPO",
        "SubprocVecEnv",
        "stable_baselines3",
        lambda t, s: SB3Training("subproc", t, s),
        uses_processes=True,
        baseline=True,
    ),
    Backend(
        "sb3-fastvec", "SB3 PPO", "fastvec.sb3_vec", "stable_baselines3", lambda t, s: SB3Training("fastvec", t, s)
    ),
    Backend(
        "tianshou-dummy", "Tianshou PPO", "DummyVectorEnv", "tianshou", lambda t, s: TianshouTraining("dummy", t, s)
    ),
    Backend(
        "tianshou-subproc",
        "Tianshou PPO",
        "SubprocVectorEnv",
        "tianshou",
        lambda t, s: TianshouTraining("subproc", t, s),
        uses_processes=True,
        baseline=True,
    ),
    Backend(
        "tianshou-fastvec",
        "Tianshou PPO",
        "fastvec.tianshou_venv",
        "tianshou",
        lambda t, s: TianshouTraining("fastvec", t, s),
    ),
    Backend(
        "rllib-default",
        "RLlib PPO",
        "RLlib's default EnvRunner",
        "ray.rllib",
        lambda t, s: RLlibTraining("default", t, s),
        baseline=True,
    ),
    Backend("rllib-fastvec", "RLlib PPO", "FastvecEnvRunner", "ray.rllib", lambda t, s: RLlibTraining("fastvec", t, s)),
]
ITERATION_TEXT = {
    "SB3 PPO": f"SB3 PPO('MlpPolicy'): one learn() of {SB3_PPO['n_steps']} steps x {NUM_ENVS} envs and its update "
    f"({SB3_PPO['n_epochs']} epochs, minibatches of {SB3_PPO['batch_size']}; rl-baselines3-zoo's CartPole settings)",
    "Tianshou PPO": f"Tianshou PPO: Collector.collect(n_step={TIANSHOU_STEPS}) and one update (minibatches of "
    f"{TIANSHOU_BATCH}, {TIANSHOU_REPEAT} passes: its CartPole test's settings, which collect 2000)",
    "RLlib PPO": f"RLlib PPO: one Algorithm.train() of {RLLIB_BATCH} steps ({RLLIB_EPOCHS} epochs, minibatches of "
    f"{RLLIB_MINIBATCH}; PPO's default module), runner and learner in this process (Ray started with one CPU, "
    "for the Algorithm)",
}


# -- options -------------------------------------------------------------------


def torch_threads_value(text: str) -> int | None:
    """An item of --torch-threads: a positive count, or "default" (None: torch's own default)."""
    if text == "default":
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a thread count >= 1 or 'default', got {text!r}")
    return n


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The bench's options for this mode (the others it shares: --quick --seconds --reps --warmup --contenders
    --out --json --contention)."""
    p.add_argument(
        "--training",
        action="store_true",
        help="time training loops instead of env steps: SB3, Tianshou and RLlib PPO on CartPole-v1 with 8 envs, "
        "each framework's vector envs against fastvec's, in ms per 1,000 env steps, updates included "
        f"(default {DEFAULT_REPS} x {DEFAULT_SECONDS:g} s; --quick {QUICK_REPS} x {QUICK_SECONDS:g} s); rows: "
        + ", ".join(b.key for b in BACKENDS),
    )
    p.add_argument(
        "--torch-threads",
        type=torch_threads_value,
        nargs="+",
        metavar="N",
        help="with --training: torch's intra-op threads (torch.set_num_threads) for every row, one or more counts "
        "or 'default' (torch's default, which OMP_NUM_THREADS sets); several: each row once per count, interleaved "
        "(default: default)",
    )


def check_arguments(p: argparse.ArgumentParser, args: argparse.Namespace, default_contenders: list[str]) -> None:
    """Refuses (argparse's error) what this mode cannot run; fills in its defaults."""
    if not args.training:
        if args.torch_threads is not None:
            p.error("--torch-threads applies to --training only")
        return
    if args.envs or args.multiagent or args.dm_control or args.num_envs or args.memory:
        p.error(
            f"--training trains on {ENV_ID} with {NUM_ENVS} envs: --envs, --multiagent, --dm-control, "
            "--num-envs and --memory do not apply"
        )
    args.seconds = args.seconds if args.seconds is not None else (QUICK_SECONDS if args.quick else DEFAULT_SECONDS)
    args.reps = args.reps if args.reps is not None else (QUICK_REPS if args.quick else DEFAULT_REPS)
    if args.seconds <= 0 or args.reps < 1 or args.contention < 0:
        p.error("--seconds must be > 0, --reps >= 1 and --contention >= 0")
    if args.warmup is None:
        args.warmup = min(1.0, args.seconds / 4)
    patterns = ["*"] if args.contenders == default_contenders else args.contenders
    unknown = [pat for pat in patterns if not any(fnmatch.fnmatch(b.key, pat) for b in BACKENDS)]
    if unknown:
        p.error(f"--training: unknown row(s) {', '.join(unknown)}; rows are: {', '.join(b.key for b in BACKENDS)}")
    args.backends = [b for b in BACKENDS if any(fnmatch.fnmatch(b.key, pat) for pat in patterns)]
    args.torch_threads = list(dict.fromkeys(args.torch_threads or [None]))


# -- measuring -----------------------------------------------------------------


def torch_default_threads() -> int:
    """torch's intra-op thread count before anyone set it (this process sets it only in its runners)."""
    import torch

    return torch.get_num_threads()


def rows(backends: list[Backend], threads: list[int | None], default: int, seen: dict[str, set[int]]) -> list[Any]:
    """One contender per backend and thread count (None: ``default``), keyed ``<backend>@t<N>`` or
    ``<backend>@default``; each runner records the counts torch reported in ``seen[key]``."""
    out = []
    for b in backends:
        for t in threads:
            key = f"{b.key}@{'default' if t is None else f't{t}'}"
            n = default if t is None else t
            seen[key] = set()
            out.append(
                Contender(
                    key,
                    f"{b.framework} on {b.label}",
                    b.package,
                    functools.partial(_build, b.runner, n, seen[key]),
                    uses_processes=b.uses_processes,
                )
            )
    return out


def _build(runner: Callable[[int, set[int]], TrainingRunner], threads: int, seen: set[int], *_: object) -> Runner:
    """A row's ``make(env_id, num_envs)``: the bench's env and size are this mode's own."""
    return runner(threads, seen)


def ms_per_1000(cell: Cell) -> list[float]:
    """Each repetition's wall time per 1,000 env steps, in ms."""
    return [1e6 / x for x in cell.steps_per_s]


def row_doc(backend: Backend, torch_threads: int | None, default: int, cell: Cell, seen: set[int]) -> dict[str, Any]:
    ms = ms_per_1000(cell)
    return {
        "framework": backend.framework,
        "backend": backend.label,
        "torch_threads": default if torch_threads is None else torch_threads,
        "torch_threads_setting": "default" if torch_threads is None else str(torch_threads),
        "torch_threads_seen": sorted(seen),
        "status": cell.status,
        "median_ms_per_1000_steps": statistics.median(ms) if ms else None,
        "ms_per_1000_steps": ms,
        "median_steps_per_s": cell.median,
        "steps_per_s": cell.steps_per_s,
        "other_cpu_share": cell.other_cpu,
        "busy": cell.disturbed,
        "construct_seconds": cell.construct_seconds,
    }


def speedups(docs: dict[str, dict[str, Any]]) -> None:
    """Adds to each row ``x_baseline``: the baseline's median time (its framework's subprocess vector env, RLlib's
    own runner) over the row's, at the same torch threads: above 1, faster than the baseline."""
    for doc in docs.values():
        base = next(
            (
                d
                for k, d in docs.items()
                if d["framework"] == doc["framework"]
                and d["torch_threads_setting"] == doc["torch_threads_setting"]
                and next(b for b in BACKENDS if k.startswith(b.key + "@")).baseline
            ),
            None,
        )
        if base is None or not base["median_ms_per_1000_steps"] or not doc["median_ms_per_1000_steps"]:
            doc["x_baseline"], doc["baseline"] = None, base["backend"] if base is not None else None
            continue
        doc["x_baseline"] = base["median_ms_per_1000_steps"] / doc["median_ms_per_1000_steps"]
        doc["baseline"] = base["backend"]


def _ms(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def format_ms(doc: dict[str, Any]) -> str:
    ms = doc["ms_per_1000_steps"]
    if not ms:
        return doc["status"]
    mark = " (busy)" if doc["busy"] else ""
    if len(ms) == 1:
        return f"{_ms(ms[0])}{mark}"
    return f"{_ms(statistics.median(ms))} [{_ms(min(ms))}-{_ms(max(ms))}]{mark}"


def table(docs: dict[str, dict[str, Any]]) -> str:
    head = "| framework | backend | torch threads | ms / 1,000 env steps | env steps/s | x baseline |"
    lines = [head, "|---|---|---:|---:|---:|---:|"]
    for doc in docs.values():
        threads = f"{doc['torch_threads']}" + (" (default)" if doc["torch_threads_setting"] == "default" else "")
        if doc["torch_threads_seen"] and doc["torch_threads_seen"] != [doc["torch_threads"]]:
            threads += f" (torch said {'/'.join(map(str, doc['torch_threads_seen']))})"
        rate = report.si(doc["median_steps_per_s"]) if doc["median_steps_per_s"] else "-"
        x = f"{doc['x_baseline']:.2f}x" if doc["x_baseline"] else "-"
        lines.append(f"| {doc['framework']} | {doc['backend']} | {threads} | {format_ms(doc)} | {rate} | {x} |")
    return "\n".join(lines)


def threads_text(threads: list[int | None], default: int) -> str:
    omp = os.environ.get("OMP_NUM_THREADS")
    origin = f"OMP_NUM_THREADS={omp} in the environment" if omp else "OMP_NUM_THREADS unset"
    said = [f"torch's default ({default}: {origin})" if t is None else f"{t} (--torch-threads {t})" for t in threads]
    return "torch intra-op threads: " + "; ".join(said)


def main(args: argparse.Namespace, argv: list[str] | None) -> int:
    """``fastvec bench --training``: measures, prints the table (or the JSON with --json), writes both to --out."""
    warnings.filterwarnings("ignore")
    from tqdm import tqdm

    from fastvec.bench.cli import contention_text

    default = torch_default_threads()
    seen: dict[str, set[int]] = {}
    chosen = rows(args.backends, args.torch_threads, default, seen)
    command = "fastvec bench " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    here = {**machine.describe(), "versions": machine.versions()}
    here["fastvec_source"] = machine.source_state(os.path.dirname(os.path.abspath(__file__)))
    monitor = machine.LoadMonitor()
    if monitor.share_before is not None and monitor.share_before > BUSY_OTHER_SHARE:
        print(
            f"WARNING: the machine is already busy: other processes use {monitor.share_before:.0%} of the CPUs",
            file=sys.stderr,
        )
    t0 = time.perf_counter()
    with (
        machine.BusyLoops(args.contention),
        tqdm(total=len(chosen) * args.reps, desc="fastvec bench --training", unit="run", file=sys.stderr) as progress,
    ):
        grid = measure.run_grid(
            chosen, ENV_ID, NUM_ENVS, seconds=args.seconds, reps=args.reps, warmup=args.warmup, progress=progress
        )
    elapsed = time.perf_counter() - t0
    load = monitor.finish()

    docs: dict[str, dict[str, Any]] = {}
    for c in chosen:
        base_key, setting = c.key.split("@")
        backend = next(b for b in args.backends if b.key == base_key)
        threads = None if setting == "default" else int(setting[1:])
        docs[c.key] = row_doc(backend, threads, default, grid[c.key], seen[c.key])
    speedups(docs)
    busy = [k for k, d in docs.items() if d["busy"]]
    if busy:
        load["busy"] = True
        load["busy_reasons"].append(f"{len(busy)} row(s) measured while other processes were busy")
    frameworks = list(dict.fromkeys(b.framework for b in args.backends))
    lines = [
        f"# fastvec bench --training: wall time per 1,000 env steps, updates included, median [min-max] of "
        f"{args.reps} x {args.seconds:g} s",
        "",
        f"{ENV_ID}, {NUM_ENVS} envs, seed {SEED}. One iteration (collect, then update), timed whole:",
        "",
        *(f"- {ITERATION_TEXT[f]}" for f in frameworks),
        "",
        threads_text(args.torch_threads, default) + ".",
        f"usable cores (os.sched_getaffinity): {here['usable_cores']}.",
        *(
            [f"Shared cores: {contention_text(args.contention)} ran beside every row (--contention)."]
            if args.contention
            else []
        ),
        "x baseline: the framework's own subprocess vector env (RLlib: its default runner) at the same torch "
        "threads, over this row's time; above 1, this row trains faster.",
        "",
        f"command: `{command}`",
        "",
        table(docs),
        "",
        f"'(busy)': other processes took over {BUSY_OTHER_SHARE:.0%} of the CPUs during a repetition.",
        report.machine_line(here),
        f"versions: {report.versions_text(here['versions'])}; checkout: {here['fastvec_source']}",
        report.load_line(load),
        f"wall time: {elapsed:.0f} s",
    ]
    if load["busy"]:
        lines.append("WARNING: BUSY MACHINE, results are not trustworthy: " + "; ".join(load["busy_reasons"]))
    doc = {
        "command": command,
        "mode": "training",
        "env_id": ENV_ID,
        "num_envs": NUM_ENVS,
        "seconds": args.seconds,
        "reps": args.reps,
        "contention": args.contention,
        "torch_default_threads": default,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "iterations": {f: ITERATION_TEXT[f] for f in frameworks},
        "machine": here,
        "load": load,
        "wall_seconds": elapsed,
        "rows": docs,
    }
    report.write_run(args.out, "training", "\n".join(lines) + "\n", doc, args.json)
    return 0
