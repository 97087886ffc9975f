"""MuJoCo frames (render_mode="rgb_array") drawn natively by MuJoCo's renderer in an EGL context: pixel for pixel
gymnasium's (its env with MUJOCO_GL=egl, the same MuJoCo library, seeds and actions) for every MuJoCo v5 id, with
gymnasium's rendering options; from several threads at once; with gymnasium's own EGL contexts in the same
thread; around close(), before reset(), with EGL missing and with bad options.

gymnasium's side runs in a child process whose environment has MUJOCO_GL=egl (and PYOPENGL_PLATFORM=egl, which
mujoco.egl would set for the whole process): this one's is left alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from _egl import egl_env, run_egl_child

import fastvec
from fastvec.registry import family_ids

pytestmark = pytest.mark.mujoco

MUJOCO_IDS = family_ids("mujoco")

# The steps after which frames are compared (0: after the reset), and the last step taken.
CHECKPOINTS = (0, 1, 6)
# Children that import fastvec run outside the source tree: there, as CI installs fastvec, the tree (without its
# compiled module) would shadow the installed package (a development run finds the tree through PYTHONPATH).
OUTSIDE_TREE = tempfile.gettempdir()

# Run in a child process: the frames gymnasium's envs draw for each job (env id, keyword arguments, seeds,
# actions), env by env: after the reset and after the steps of CHECKPOINTS, until the env's episode ends.
GYMNASIUM_FRAMES = """
import pickle, sys
import gymnasium as gym
import numpy as np
jobs, checkpoints = pickle.load(open(sys.argv[1], "rb"))
out = []
for env_id, kwargs, seeds, actions in jobs:
    per_env = []
    for i, seed in enumerate(seeds):
        env = gym.make(env_id, render_mode="rgb_array", **kwargs)
        env.reset(seed=seed)
        frames = [env.render()]
        for t, a in enumerate(actions[:, i], 1):
            _, _, terminated, truncated, _ = env.step(a)
            if t in checkpoints or terminated or truncated:
                frames.append(env.render())
            if terminated or truncated:
                break
        env.close()
        per_env.append(np.stack(frames))
    out.append(per_env)
pickle.dump(out, open(sys.argv[2], "wb"))
"""


def gymnasium_frames(tmp_path: Path, jobs: list[tuple]) -> list[list[np.ndarray]]:
    """What GYMNASIUM_FRAMES draws for ``jobs``, in a child process."""
    return run_egl_child(GYMNASIUM_FRAMES, (jobs, CHECKPOINTS), tmp_path, timeout=200)


def random_actions(env_id: str, steps: int, num_envs: int, seed: int) -> np.ndarray:
    env = gym.make(f"fastvec/{env_id}")
    space = env.action_space
    env.close()
    rng = np.random.default_rng(seed)
    return rng.uniform(space.low, space.high, (steps, num_envs, *space.shape)).astype(np.float32)


def fastvec_frames(env_id: str, kwargs: dict, seeds: list[int], actions: np.ndarray, **pool) -> list[np.ndarray]:
    """fastvec's frames of the envs ``seeds`` seeds, as gymnasium_frames draws gymnasium's: after the reset and
    the steps of CHECKPOINTS, each env's until its episode ends."""
    env = fastvec.make(env_id, num_envs=len(seeds), render_mode="rgb_array", **pool, **kwargs)
    env.reset(seed=list(seeds))
    frames = [[f] for f in env.render()]
    done = np.zeros(len(seeds), dtype=bool)
    for t, a in enumerate(actions, 1):
        _, _, terminated, truncated, _ = env.step(a)
        ended = terminated | truncated
        if t in CHECKPOINTS or (ended & ~done).any():
            for i, f in enumerate(env.render()):
                if not done[i] and (t in CHECKPOINTS or ended[i]):
                    frames[i].append(f)
        done |= ended
        if done.all():
            break
    env.close()
    return [np.stack(f) for f in frames]


def assert_same_frames(got: list[np.ndarray], want: list[np.ndarray], what: str) -> None:
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == np.uint8 and g.shape == w.shape, f"{what}, env {i}: {g.shape} vs gymnasium's {w.shape}"
        for t in range(len(w)):
            diff = np.abs(g[t].astype(int) - w[t].astype(int))
            assert not diff.any(), (
                f"{what}, env {i}, frame {t}: {np.count_nonzero(diff.any(axis=-1))} pixels differ (at most by "
                f"{diff.max()})"
            )


STEPS = CHECKPOINTS[-1]


@pytest.mark.slow
def test_frames_are_gymnasiums(tmp_path):
    """Every MuJoCo v5 id, with gymnasium's default rendering (480x480, its camera: "track" where the model has
    one, else the free camera of the env's default_camera_config, looking at the median of the geoms at the first
    frame): two envs stepped on two threads, frame by frame equal to gymnasium's after the reset and some steps."""
    jobs = [(env_id, {}, [7, 8], random_actions(env_id, STEPS, 2, 1)) for env_id in MUJOCO_IDS]
    want = gymnasium_frames(tmp_path, jobs)
    for (env_id, kwargs, seeds, actions), ref in zip(jobs, want, strict=True):
        got = fastvec_frames(env_id, kwargs, seeds, actions, num_threads=2, block_size=1)
        assert_same_frames(got, ref, env_id)


OPTIONS = [
    ("Hopper-v5", {"width": 96, "height": 64}),
    ("Hopper-v5", {"camera_id": -1, "width": 84, "height": 84}),  # the free camera, with trackbodyid in its config
    ("Ant-v5", {"camera_name": "track", "width": 120, "height": 100, "max_geom": 5}),
    ("Humanoid-v5", {"camera_id": 1, "width": 84, "height": 84}),  # the head's camera
    (
        "Reacher-v5",
        {
            "default_camera_config": {"distance": 1.2, "elevation": -70.0, "azimuth": 30.0, "lookat": [0.0, 0.1, 0.0]},
            "visual_options": {2: True, 14: True},  # mjVIS_JOINT, mjVIS_CONTACTPOINT
            "width": 100,
            "height": 80,
        },
    ),
    ("Swimmer-v5", {"default_camera_config": None, "camera_id": -1, "width": 64, "height": 64}),
]


@pytest.mark.slow
def test_rendering_options_are_gymnasiums(tmp_path):
    """gymnasium's MujocoEnv rendering keywords (width, height, camera_id, camera_name, default_camera_config,
    max_geom, visual_options) give gymnasium's frames."""
    jobs = [(env_id, kwargs, [3, 4, 5], random_actions(env_id, STEPS, 3, 2)) for env_id, kwargs in OPTIONS]
    want = gymnasium_frames(tmp_path, jobs)
    for (env_id, kwargs, seeds, actions), ref in zip(jobs, want, strict=True):
        got = fastvec_frames(env_id, kwargs, seeds, actions, num_threads=1)
        assert_same_frames(got, ref, f"{env_id} {kwargs}")


def first_frame(env_id: str, **kwargs) -> np.ndarray:
    env = fastvec.make(env_id, num_envs=1, seed=0, render_mode="rgb_array", width=64, height=64, **kwargs)
    env.reset()
    frame = env.render()[0]
    env.close()
    return frame


def test_frames_move_and_differ():
    """The frames show the state and the options (so that equal frames above are not empty ones): a frame changes
    as the env steps; another camera, camera config or visual option changes it."""
    env = fastvec.make("Hopper-v5", num_envs=2, seed=0, render_mode="rgb_array", width=64, height=64)
    env.reset()
    first = np.stack(env.render())
    assert first.shape == (2, 64, 64, 3) and first.std() > 10
    for _ in range(5):
        env.step(np.ones((2, 3), dtype=np.float32))
    later = np.stack(env.render())
    assert (later != first).any()
    env.close()
    assert (first_frame("Hopper-v5", camera_id=-1) != first[0]).any()
    reacher = first_frame("Reacher-v5")
    assert (first_frame("Reacher-v5", visual_options={2: True}) != reacher).any()  # mjVIS_JOINT
    assert (first_frame("Reacher-v5", default_camera_config={"distance": 1.0}) != reacher).any()


def test_rendering_from_several_threads():
    """Pools rendered from several Python threads at once (each thread its own EGL context), and one pool from one
    thread then another: every frame equals the one drawn on this thread alone."""
    ids = ["Hopper-v5", "Reacher-v5", "Ant-v5"]
    pools = [
        fastvec.make(env_id, num_envs=2, seed=5, num_threads=2, render_mode="rgb_array", width=80, height=60)
        for env_id in ids
    ]
    for p in pools:
        p.reset()
        p.step(np.stack([p.single_action_space.sample() * 0 + 0.3] * 2).astype(np.float32))
    alone = [np.stack(p.render()) for p in pools]
    results: dict[int, list[np.ndarray]] = {k: [] for k in range(len(pools))}
    errors: list[BaseException] = []
    start = threading.Barrier(len(pools))

    def draw(k: int) -> None:
        try:
            start.wait()
            for _ in range(5):
                results[k].append(np.stack(pools[k].render()))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=draw, args=(k,)) for k in range(len(pools))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k, frames in results.items():
        assert len(frames) == 5
        for f in frames:
            np.testing.assert_array_equal(f, alone[k], err_msg=ids[k])
    # a thread that has rendered another pool renders this one too (its context makes this model's)
    other: list[np.ndarray] = []
    t = threading.Thread(target=lambda: other.append(np.stack(pools[0].render())))
    t.start()
    t.join()
    np.testing.assert_array_equal(other[0], alone[0])
    for p in pools:
        p.close()


def test_close_with_contexts_alive():
    """close() after frames were drawn (this thread's context and its model's mjrContext alive) closes; render()
    after close is gymnasium's ClosedEnvironmentError; a new pool of the same model draws the same frames, and a
    pool dropped without close() leaves the others drawing."""
    env = fastvec.make("Walker2d-v5", num_envs=2, seed=1, render_mode="rgb_array", width=48, height=48)
    env.reset()
    first = np.stack(env.render())
    env.close()
    with pytest.raises(gym.error.ClosedEnvironmentError):
        env.render()
    env.close()  # (idempotent)
    again = fastvec.make("Walker2d-v5", num_envs=2, seed=1, render_mode="rgb_array", width=48, height=48)
    again.reset()
    dropped = fastvec.make("Walker2d-v5", num_envs=1, seed=1, render_mode="rgb_array", width=32, height=32)
    dropped.reset()
    dropped.render()
    del dropped
    np.testing.assert_array_equal(np.stack(again.render()), first)
    # a thread that renders then exits frees its context (thread_local) while the pool lives on
    t = threading.Thread(target=again.render)
    t.start()
    t.join()
    np.testing.assert_array_equal(np.stack(again.render()), first)
    again.close()


def test_render_before_reset_and_in_flight():
    """render() before reset() is refused, naming the env (gymnasium's envs refuse it too: ResetNeeded); an env in
    flight likewise; the pool goes on."""
    env = fastvec.make("InvertedPendulum-v5", num_envs=2, batch_size=1, seed=0, render_mode="rgb_array")
    with pytest.raises(RuntimeError, match="has not been reset"):
        env.render()
    env.async_reset()
    env.recv()
    with pytest.raises(RuntimeError, match="in flight"):
        env.render()
    env.recv()
    frames = env.render()
    assert len(frames) == 2 and frames[0].shape == (480, 480, 3)
    env.close()


def test_render_options_refused():
    """Bad rendering options: a ValueError or TypeError naming the option, before any pool is made."""
    with pytest.raises(ValueError, match=r"camera_id.*camera_name"):
        fastvec.make("Hopper-v5", camera_id=0, camera_name="track")
    with pytest.raises(ValueError, match="camera_id must be -1"):
        fastvec.make("Hopper-v5", camera_id=7)
    with pytest.raises(ValueError, match=r"camera_name: the model has no camera named 'nope'.*'track'"):
        fastvec.make("Hopper-v5", camera_name="nope")
    with pytest.raises(TypeError, match="camera_id"):
        fastvec.make("Hopper-v5", camera_id="0")
    with pytest.raises(ValueError, match="width must be an integer"):
        fastvec.make("Hopper-v5", width=0)
    with pytest.raises(ValueError, match=r"default_camera_config.*'zoom'"):
        fastvec.make("Hopper-v5", default_camera_config={"zoom": 2.0})
    with pytest.raises(ValueError, match=r"lookat'.* 3 numbers"):
        fastvec.make("Hopper-v5", default_camera_config={"lookat": [0.0, 1.0]})
    with pytest.raises(ValueError, match="visual_options: flags are"):
        fastvec.make("Hopper-v5", visual_options={99: True})
    with pytest.raises(TypeError, match="visual_options"):
        fastvec.make("Hopper-v5", visual_options=[1])
    with pytest.raises(ValueError, match="render_mode must be None or one of \\['rgb_array'\\]"):
        fastvec.make("Hopper-v5", render_mode="depth_array")


def test_keywords_are_reported():
    """The rendering keywords are the env's attributes and its spec's kwargs, gymnasium's defaults filled in
    (Hopper's DEFAULT_CAMERA_CONFIG), so that gymnasium.make_vec(spec) makes the same envs again."""
    env = fastvec.make("Hopper-v5", num_envs=1, render_mode="rgb_array", width=64, height=32)
    assert env.get_attr("width") == (64,) and env.get_attr("camera_id") == (None,)
    config = env.spec.kwargs["default_camera_config"]
    assert config["distance"] == 3.0 and config["trackbodyid"] == 2
    again = gym.make_vec(env.spec, num_envs=1, vectorization_mode="vector_entry_point", render_mode="rgb_array")
    env.reset(seed=0)
    again.reset(seed=0)
    np.testing.assert_array_equal(np.stack(again.render()), np.stack(env.render()))
    env.close()
    again.close()
    single = gym.make("fastvec/Hopper-v5", render_mode="rgb_array", width=64, height=32)
    single.reset(seed=0)
    assert single.render().shape == (32, 64, 3)
    assert single.metadata["render_fps"] == gym.make("Hopper-v5").metadata["render_fps"] == 125
    single.close()


# Run in a child process: gymnasium's env draws with mujoco.egl's context current on this thread, fastvec's pool
# draws on the same thread in between, and gymnasium's next frame is still its own.
INTERLEAVED = """
import gymnasium as gym, numpy as np
import fastvec
ref = gym.make("Reacher-v5", render_mode="rgb_array", width=64, height=64)
ref.reset(seed=0)
alone = ref.render()
env = fastvec.make("Hopper-v5", num_envs=1, seed=0, render_mode="rgb_array", width=64, height=64)
env.reset()
mine = env.render()[0]
after = ref.render()
assert (after == alone).all(), "gymnasium's frame changed after fastvec drew on its thread"
assert (env.render()[0] == mine).all(), "fastvec's frame changed after gymnasium drew"
env.close()
ref.close()
print("ok")
"""


def test_gymnasiums_context_is_restored():
    """fastvec draws in its own context and makes the thread's current one (gymnasium's, mujoco.egl's) current
    again: gymnasium's OffScreenViewer, which makes its context current only once, goes on drawing right."""
    run = subprocess.run(
        [sys.executable, "-c", INTERLEAVED],
        env=egl_env(),
        cwd=OUTSIDE_TREE,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


MISSING_EGL = """
import numpy as np
import fastvec
env = fastvec.make("Hopper-v5", num_envs=2, seed=0, render_mode="rgb_array")
env.reset()
try:
    env.render()
except RuntimeError as e:
    print(e)
env.step(np.zeros((2, 3), dtype=np.float32))  # the pool goes on
env.close()
"""


def test_missing_egl_says_what_to_install(tmp_path):
    """Without a loadable libEGL.so.1 (here: one that is not a library, found first), fastvec imports and steps, and
    render() raises a RuntimeError saying what to install; the pool goes on."""
    (tmp_path / "libEGL.so.1").write_bytes(b"not a library")
    path = f"{tmp_path}:{os.environ['LD_LIBRARY_PATH']}" if os.environ.get("LD_LIBRARY_PATH") else str(tmp_path)
    run = subprocess.run(
        [sys.executable, "-c", MISSING_EGL],
        env={**os.environ, "LD_LIBRARY_PATH": path},
        cwd=OUTSIDE_TREE,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "libEGL.so.1 cannot be loaded" in run.stdout and "apt-get install libegl1 libegl-mesa0" in run.stdout


FORKED = """
import os, sys
import numpy as np
import fastvec
env = fastvec.make("Reacher-v5", num_envs=1, seed=0, render_mode="rgb_array", width=32, height=32)
env.reset()
env.render()
pid = os.fork()
if pid == 0:
    child = fastvec.make("Reacher-v5", num_envs=1, seed=0, render_mode="rgb_array", width=32, height=32)
    child.reset()
    try:
        child.render()
    except RuntimeError as e:
        print(e, flush=True)
    child.step(np.zeros((1, 2), dtype=np.float32))
    child.close()
    sys.exit(0)  # (with the thread's copy of the parent's context, which is not freed)
_, status = os.waitpid(pid, 0)
assert status == 0 and env.render()[0].shape == (32, 32, 3)
env.close()
"""


def test_render_after_fork_is_refused():
    """A child forked after its parent rendered (EGL's driver state has no threads in the child) gets a
    RuntimeError saying so, not a hang; its pool goes on, and the parent renders on."""
    run = subprocess.run(
        [sys.executable, "-c", FORKED], cwd=OUTSIDE_TREE, capture_output=True, text=True, timeout=200, check=False
    )
    assert run.returncode == 0, run.stderr
    assert "forked from process" in run.stdout and "'spawn' or 'forkserver'" in run.stdout, run.stdout
