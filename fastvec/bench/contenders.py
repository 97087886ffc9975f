"""The contenders: each row of a benchmark (a key, its label, the package it needs, how its runner is made, and
when it cannot run), the table of them all, and picking them by key. The multi-agent ones (keys ``ma-*``) run the
multi-agent envs, and only those; the others, the single-agent envs."""

from __future__ import annotations

import fnmatch
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from fastvec.bench.ceiling import make_ceiling
from fastvec.bench.fastvec_runners import make_fastvec, make_fastvec_envpool, make_fastvec_python
from fastvec.bench.library_runners import make_ale_vector, make_envpool, make_gymnasium, make_sb3
from fastvec.bench.machine import installed
from fastvec.bench.multiagent_runners import make_agilerl, make_fastvec_multiagent, make_rllib_vector, make_supersuit
from fastvec.bench.own_process import OwnProcessRunner, serve_runner
from fastvec.bench.ray_runners import make_ray_actors, make_rllib
from fastvec.bench.runners import Runner
from fastvec.bench.work import is_dm_control, is_mujoco, is_multiagent


@dataclass(frozen=True)
class Contender:
    key: str
    label: str
    package: str
    make: Callable[[str, int], Runner]
    uses_processes: bool = False  # one OS process per env
    needs_batch: bool = False  # async with batch_size = num_envs // 2: needs num_envs >= 2
    max_envs: int | None = None  # above this, too slow to even construct on a small machine
    # A ceiling: that many envs, each stepped in a C++ loop of its own (no vector env): the same at every
    # num_envs, no memory probe.
    ceiling: int = 0
    mujoco_bindings: bool = False  # makes gymnasium's envs in this process: a MuJoCo env loads the mujoco bindings
    multiagent: bool = False  # steps the multi-agent envs (in agent-steps), and only those
    # How it steps the dm_control tasks: "native" (fastvec's or EnvPool's own port), "shimmy" (dm_control's Python
    # env as shimmy makes it a gymnasium env, which loads the mujoco bindings where it is made), "" (not wired).
    dm_control: str = ""

    def runs(self, env_id: str) -> bool:
        """Whether this contender is a row of ``env_id``'s table (its group: multi-agent envs or the others; of a
        dm_control task, those wired for it)."""
        return self.multiagent == is_multiagent(env_id) and (bool(self.dm_control) or not is_dm_control(env_id))

    def build(self, env_id: str, num_envs: int) -> Runner:
        """``make``, in a process of its own where it would load the mujoco Python bindings into this one (see
        :class:`OwnProcessRunner`)."""
        if (self.mujoco_bindings and is_mujoco(env_id)) or (self.dm_control == "shimmy" and is_dm_control(env_id)):
            return OwnProcessRunner(serve_contender, self.key, env_id, num_envs)
        return self.make(env_id, num_envs)

    def skip_reason(self, num_envs: int, max_processes: int | None = None) -> str | None:
        """Why this contender does not run at num_envs (None: it runs)."""
        if not installed(self.package):
            return "not installed"
        if self.needs_batch and num_envs < 2:
            return "n/a (batch_size = num_envs/2)"
        too_many = max_processes is not None and self.uses_processes and num_envs > max_processes
        if too_many or (self.max_envs is not None and num_envs > self.max_envs):
            return "skipped (too many processes)"
        return None


CONTENDERS = [
    Contender(
        "fastvec",
        "fastvec sync (default threads)",
        "fastvec",
        lambda e, n: make_fastvec(e, n, None, False),
        dm_control="native",
    ),
    Contender(
        "fastvec-t1",
        "fastvec sync, num_threads=1",
        "fastvec",
        lambda e, n: make_fastvec(e, n, 1, False),
        dm_control="native",
    ),
    Contender(
        "fastvec-t2",
        "fastvec sync, num_threads=2",
        "fastvec",
        lambda e, n: make_fastvec(e, n, 2, False),
        dm_control="native",
    ),
    Contender(
        "fastvec-async",
        "fastvec async (default threads)",
        "fastvec",
        lambda e, n: make_fastvec(e, n, None, True),
        needs_batch=True,
        dm_control="native",
    ),
    Contender(
        "fastvec-async-t1",
        "fastvec async, num_threads=1",
        "fastvec",
        lambda e, n: make_fastvec(e, n, 1, True),
        needs_batch=True,
        dm_control="native",
    ),
    Contender(
        "fastvec-async-t2",
        "fastvec async, num_threads=2",
        "fastvec",
        lambda e, n: make_fastvec(e, n, 2, True),
        needs_batch=True,
        dm_control="native",
    ),
    *(
        Contender(
            f"fastvec{'-async' if a else ''}-same-step-t{t}",
            f"fastvec {'async' if a else 'sync'}, same-step autoreset, num_threads={t}",
            "fastvec",
            functools.partial(make_fastvec, num_threads=t, asynchronous=a, autoreset_mode="same_step"),
            needs_batch=a,
            dm_control="native",
        )
        for a in (False, True)
        for t in (1, 2)
    ),
    Contender(
        "fastvec-python",
        "fastvec Python-env pool (gymnasium's env)",
        "fastvec",
        make_fastvec_python,
        dm_control="shimmy",
    ),
    Contender(
        "fastvec-python-t1",
        "fastvec Python-env pool (gymnasium's env), 1 worker",
        "fastvec",
        lambda e, n: make_fastvec_python(e, n, 1),
        dm_control="shimmy",
    ),
    Contender(
        "fastvec-python-t2",
        "fastvec Python-env pool (gymnasium's env), 2 workers",
        "fastvec",
        lambda e, n: make_fastvec_python(e, n, 2),
        dm_control="shimmy",
    ),
    Contender(
        "gym-numpy",
        "gymnasium vector_entry_point (numpy)",
        "gymnasium",
        lambda e, n: make_gymnasium(e, n, "vector_entry_point"),
    ),
    Contender(
        "gym-sync",
        "gymnasium SyncVectorEnv",
        "gymnasium",
        lambda e, n: make_gymnasium(e, n, "sync"),
        mujoco_bindings=True,
        dm_control="shimmy",
    ),
    Contender(
        "gym-async",
        "gymnasium AsyncVectorEnv",
        "gymnasium",
        lambda e, n: make_gymnasium(e, n, "async"),
        uses_processes=True,
        mujoco_bindings=True,  # it makes one env in this process, for its spaces
        dm_control="shimmy",
    ),
    Contender(
        "sb3-dummy",
        "SB3 DummyVecEnv",
        "stable_baselines3",
        lambda e, n: make_sb3(e, n, False),
        mujoco_bindings=True,
        dm_control="shimmy",
    ),
    Contender(
        "sb3-subproc",
        "SB3 SubprocVecEnv",
        "stable_baselines3",
        lambda e, n: make_sb3(e, n, True),
        uses_processes=True,
        dm_control="shimmy",
    ),
    Contender(
        "fastvec-envpool",
        "fastvec.envpool (EnvPool's API) sync",
        "fastvec",
        lambda e, n: make_fastvec_envpool(e, n, False),
    ),
    Contender(
        "fastvec-envpool-async",
        "fastvec.envpool (EnvPool's API) async",
        "fastvec",
        lambda e, n: make_fastvec_envpool(e, n, True),
        needs_batch=True,
    ),
    Contender(
        "envpool-t1",
        "EnvPool sync, num_threads=1",
        "envpool",
        lambda e, n: make_envpool(e, n, 1, False),
        dm_control="native",
    ),
    Contender(
        "envpool-t2",
        "EnvPool sync, num_threads=2",
        "envpool",
        lambda e, n: make_envpool(e, n, 2, False),
        dm_control="native",
    ),
    Contender(
        "envpool-async-t1",
        "EnvPool async, num_threads=1",
        "envpool",
        lambda e, n: make_envpool(e, n, 1, True),
        needs_batch=True,
        dm_control="native",
    ),
    Contender(
        "envpool-async-t2",
        "EnvPool async, num_threads=2",
        "envpool",
        lambda e, n: make_envpool(e, n, 2, True),
        needs_batch=True,
        dm_control="native",
    ),
    Contender(
        "ray-actors", "Ray, one actor per env (ray.get)", "ray", make_ray_actors, uses_processes=True, max_envs=32
    ),
    Contender(
        "rllib-default",
        "RLlib EnvRunner.sample(), default vectorization",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "default"),
        max_envs=256,
        mujoco_bindings=True,
    ),
    Contender(
        "rllib-fastvec-stock",
        "RLlib SingleAgentEnvRunner.sample() on fastvec",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "stock"),
        max_envs=256,
    ),
    Contender(
        "rllib-fastvec",
        "RLlib FastvecEnvRunner.sample()",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "fastvec"),
        max_envs=256,
    ),
    Contender(
        "rllib-atari_ppo-default",
        "RLlib atari_ppo.py's pipeline, EnvRunner.sample(), RLlib's env and runner",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "default", "atari_ppo"),
        max_envs=256,
    ),
    Contender(
        "rllib-atari_ppo-fastvec",
        "RLlib atari_ppo.py's pipeline, FastvecEnvRunner.sample()",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "fastvec", "atari_ppo"),
        max_envs=256,
    ),
    Contender(
        "rllib-mujoco_ppo-default",
        "RLlib mujoco_ppo.py's pipeline, EnvRunner.sample(), RLlib's env and runner",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "default", "mujoco_ppo"),
        max_envs=256,
        mujoco_bindings=True,
    ),
    Contender(
        "rllib-mujoco_ppo-fastvec",
        "RLlib mujoco_ppo.py's pipeline, FastvecEnvRunner.sample()",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "fastvec", "mujoco_ppo"),
        max_envs=256,
    ),
    Contender(
        "ale-py",
        "ale-py AtariVectorEnv sync (default threads)",
        "ale_py",
        lambda e, n: make_ale_vector(e, n, None, False),
    ),
    Contender(
        "ale-py-t1", "ale-py AtariVectorEnv sync, num_threads=1", "ale_py", lambda e, n: make_ale_vector(e, n, 1, False)
    ),
    Contender(
        "ale-py-t2", "ale-py AtariVectorEnv sync, num_threads=2", "ale_py", lambda e, n: make_ale_vector(e, n, 2, False)
    ),
    Contender(
        "ale-py-async",
        "ale-py AtariVectorEnv async (default threads)",
        "ale_py",
        lambda e, n: make_ale_vector(e, n, None, True),
        needs_batch=True,
    ),
    Contender(
        "ma-fastvec",
        "fastvec native (default threads)",
        "fastvec",
        lambda e, n: make_fastvec_multiagent(e, n, native=True),
        multiagent=True,
    ),
    Contender(
        "ma-fastvec-python",
        "fastvec Python-env pool (PettingZoo's env)",
        "fastvec",
        lambda e, n: make_fastvec_multiagent(e, n, native=False),
        multiagent=True,
    ),
    Contender(
        "ma-supersuit",
        "SuperSuit concat_vec_envs_v1, a process per core",
        "supersuit",
        make_supersuit,
        multiagent=True,
    ),
    Contender(
        "ma-agilerl",
        "AgileRL AsyncPettingZooVecEnv",
        "agilerl",
        make_agilerl,
        uses_processes=True,
        multiagent=True,
    ),
    Contender(
        "ma-rllib-vector",
        "RLlib SyncVectorMultiAgentEnv",
        "ray.rllib",
        make_rllib_vector,
        multiagent=True,
    ),
    Contender(
        "ma-rllib-default",
        "RLlib MultiAgentEnvRunner.sample(), default vectorization",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "default"),
        max_envs=256,
        multiagent=True,
    ),
    Contender(
        "ma-rllib-fastvec",
        "RLlib FastvecMultiAgentEnvRunner.sample(), native",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "fastvec"),
        max_envs=256,
        multiagent=True,
    ),
    Contender(
        "ma-rllib-fastvec-python",
        "RLlib FastvecMultiAgentEnvRunner.sample(), Python-env pool",
        "ray.rllib",
        lambda e, n: make_rllib(e, n, "fastvec-python"),
        max_envs=256,
        multiagent=True,
    ),
    Contender(
        "ceiling",
        "ceiling: 1 fastvec env in a C++ loop, 1 thread",
        "fastvec",
        make_ceiling,
        ceiling=1,
        dm_control="native",
    ),
    Contender(
        "ceiling-same-step",
        "ceiling, same-step resets: 1 fastvec env in a C++ loop, 1 thread",
        "fastvec",
        lambda e, n: make_ceiling(e, n, 1, next_step=False),
        ceiling=1,
        dm_control="native",
    ),
    Contender(
        "ceiling-t2",
        "2 such loops at once, 2 threads (measured)",
        "fastvec",
        lambda e, n: make_ceiling(e, n, 2),
        ceiling=2,
        dm_control="native",
    ),
]


def select(contenders: list[Contender], patterns: list[str]) -> list[Contender]:
    """The contenders whose key matches one of the glob patterns, in their order."""
    return [c for c in contenders if any(fnmatch.fnmatch(c.key, pat) for pat in patterns)]


def import_packages(contenders: list[Contender]) -> None:
    """Imports every installed package of ``contenders`` up front, so that no import lands inside a timed
    loop or a forked worker."""
    for c in contenders:
        if installed(c.package):
            importlib.import_module(c.package)
    if any(c.package == "stable_baselines3" for c in contenders) and installed("stable_baselines3"):
        importlib.import_module("stable_baselines3.common.vec_env")


def contender(key: str) -> Contender:
    return next(c for c in CONTENDERS if c.key == key)


def serve_contender(fd: int) -> None:
    """The main of a contender's own process (:meth:`Contender.build`): builds it in place and serves its runner."""
    serve_runner(fd, _make_in_place)


def _make_in_place(key: str, env_id: str, num_envs: int) -> Runner:
    import_packages([contender(key)])
    return contender(key).make(env_id, num_envs)
