"""Pixel steps/s at 84x84 (camera 0): fastvec's from_pixels against dm_control with pixels.Wrapper in a Python
loop, on the same EGL (docs/benchmarks.md, DeepMind Control Suite). Interleaved repetitions, medians.
EnvPool 1.2.5's from_pixels is not a row: its renderer cannot make a context on a headless machine here.

    python benchmarks/bench_dmc_pixels.py CheetahRun-v1 1 8
"""

import os
import statistics
import sys
import time

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
import numpy as np

import fastvec

SECONDS, REPS = 3.0, 3
DOMAIN = {"CheetahRun-v1": ("cheetah", "run"), "WalkerWalk-v1": ("walker", "walk")}


def fastvec_runner(task, n):
    env = fastvec.make(task, n, seed=0, from_pixels=True, height=84, width=84, camera_id=0)
    env.reset()
    a = np.random.default_rng(0).uniform(-1, 1, (64, n, *env.single_action_space.shape))
    return lambda k: env.step(a[k % 64])[0], n


def dmc_runner(task, n):
    from dm_control import suite
    from dm_control.suite.wrappers import pixels

    envs = []
    for i in range(n):
        e = suite.load(*DOMAIN[task], task_kwargs={"random": i})
        envs.append(pixels.Wrapper(e, pixels_only=True, render_kwargs={"height": 84, "width": 84, "camera_id": 0}))
    for e in envs:
        e.reset()
    spec = envs[0].action_spec()
    a = np.random.default_rng(0).uniform(spec.minimum, spec.maximum, (64, n, *spec.shape))

    def step(k):
        out = []
        for i, e in enumerate(envs):
            ts = e.step(a[k % 64, i])
            if ts.last():
                ts = e.reset()
            out.append(ts.observation["pixels"])
        return np.stack(out)

    return step, n


def rate(step, n):
    k, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.3:  # warm-up
        step(k)
        k += 1
    k, t0 = 0, time.perf_counter()
    while (t := time.perf_counter() - t0) < SECONDS:
        step(k)
        k += 1
    return k * n / t


task = sys.argv[1]
for n in map(int, sys.argv[2:]):
    runners = {"fastvec": fastvec_runner(task, n), "dm_control loop": dmc_runner(task, n)}
    got = {name: [] for name in runners}
    for _ in range(REPS):
        for name, (step, m) in runners.items():
            got[name].append(rate(step, m))
    row = {name: statistics.median(v) for name, v in got.items()}
    print(
        f"{task} {n} envs, 84x84 pixels, steps/s (median of {REPS} x {SECONDS} s): "
        + ", ".join(f"{k} {v:.1f} [{min(got[k]):.1f}-{max(got[k]):.1f}]" for k, v in row.items())
        + f"; fastvec/dm_control {row['fastvec'] / row['dm_control loop']:.2f}x",
        flush=True,
    )
