"""RLlib multi-agent EnvRunner.sample() throughput on simple_spread_v3 (3 agents, one PPO policy shared by
them), new API stack, measured as RLlib's algorithms sample: --timesteps env steps per sample() call, then
get_metrics().

    python benchmarks/bench_rllib_multiagent.py --seconds 5 --reps 3 --num-envs 8 64

Each measurement builds one local EnvRunner (PPO's default torch RLModule, torch on one thread: the policy's
forward pass is in the loop, as in training), samples once to warm up, then calls sample() for --seconds.
Contenders: RLlib's default (its MultiAgentEnvRunner over its SyncVectorMultiAgentEnv of mpe2's env in
RLlib's ParallelPettingZooEnv), fastvec's FastvecMultiAgentEnvRunner over the native MPE port (1 pool thread)
and over mpe2's env in the Python-env pool (1 worker). Interleaved, the order rotating each repetition; the
median and min-max of --reps repetitions, in env steps/s (one step of one env, all its agents, = one step).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from fastvec.bench.machine import cpu_model
from fastvec.bench.measure import Cell, interleaved
from fastvec.bench.runners import Runner, measure

CONTENDERS = {
    "default": "RLlib MultiAgentEnvRunner (mpe2, SyncVectorMultiAgentEnv)",
    "native": "FastvecMultiAgentEnvRunner, native MPE",
    "python": "FastvecMultiAgentEnvRunner, mpe2 in the Python-env pool",
}


class MultiAgentSampler(Runner):
    """One local multi-agent EnvRunner: sample(num_timesteps) then get_metrics(), as RLlib's algorithms call it."""

    def __init__(self, key: str, num_envs: int, timesteps: int) -> None:
        import torch
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

        from fastvec.adapters.rllib import configure

        torch.set_num_threads(1)
        config = PPOConfig().framework("torch").debugging(seed=0)
        options: dict[str, Any] = {"env_runner_cls": None} if key == "default" else {"num_threads": 1}
        if key == "python":
            options["backend"] = "python"
        configure(config, "simple_spread_v3", num_envs=num_envs, max_cycles=25, **options)
        config.env_runners(num_env_runners=0)
        cls = config.env_runner_cls or MultiAgentEnvRunner
        self.kind = cls.__name__
        self._runner = cls(config=config)
        self.steps_per_call = self.timesteps = max(timesteps, num_envs)
        self._runner.sample(num_timesteps=self.timesteps, random_actions=False)
        self._runner.get_metrics()

    def run(self, calls: int) -> int:
        steps = 0
        for _ in range(calls):
            episodes = self._runner.sample(num_timesteps=self.timesteps, random_actions=False)
            self._runner.get_metrics()
            steps += sum(e.env_steps() for e in episodes)
        return steps

    def close(self) -> None:
        self._runner.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--timesteps", type=int, default=3200, help="env steps per sample() call")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--contenders", nargs="+", default=list(CONTENDERS), choices=list(CONTENDERS))
    args = parser.parse_args()
    keys = args.contenders
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu_model()}")
    ratios = [(k, "default") for k in ("native", "python") if k in keys and "default" in keys]
    head = " | ".join(CONTENDERS[k] for k in keys)
    print(f"| num_envs_per_env_runner | {head} | " + " | ".join(f"{a} / {b}" for a, b in ratios) + " |")
    print("|---:|" + "---:|" * (len(keys) + len(ratios)))
    for n in args.num_envs:
        cells = {k: Cell() for k in keys}
        for _, k in interleaved(keys, args.reps):
            runner = MultiAgentSampler(k, n, args.timesteps)
            try:
                cells[k].add(measure(runner, 1, args.seconds))
            finally:
                runner.close()
        med = {k: c.median for k, c in cells.items()}
        row = " | ".join(
            f"{med[k] / 1e3:.2f}k [{min(cells[k].steps_per_s) / 1e3:.2f}k-{max(cells[k].steps_per_s) / 1e3:.2f}k]"
            for k in keys
        )
        shares = " | ".join(f"{med[a] / med[b]:.2f}x" for a, b in ratios)
        print(f"| {n} | {row} | {shares} |", flush=True)


if __name__ == "__main__":
    main()
