"""Frames of native envs (render_mode="rgb_array"): Atari's screen against gymnasium's ALE env step by step,
classic control against gymnasium's own drawing of the same state, through fastvec.make, gymnasium.make's single
env, fastvec.envpool's render(env_ids) and SB3's get_images; and what a render that cannot be done says."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import fastvec
import fastvec.envpool

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)

pytest.importorskip("pygame")  # gymnasium draws classic control with pygame (gymnasium[classic-control])
CLASSIC = ["CartPole-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1"]


def actions(env, rng: np.random.Generator) -> np.ndarray:
    space = env.single_action_space
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(0, space.n, env.num_envs)
    return rng.uniform(space.low, space.high, (env.num_envs, *space.shape)).astype(np.float32)


@pytest.mark.parametrize("env_id", CLASSIC)
def test_classic_frames_are_gymnasiums(env_id):
    """Env by env, the frame of fastvec's env is the one gymnasium's env draws in the same state (the native envs
    step as gymnasium's, from the same seeds): after the reset and along 30 steps (Pendulum: after the reset only;
    gymnasium draws its last torque as an arrow, which the pool does not keep)."""
    env = fastvec.make(env_id, num_envs=2, seed=3, render_mode="rgb_array")
    refs = [gym.make(env_id, render_mode="rgb_array") for _ in range(2)]
    env.reset()
    for i, ref in enumerate(refs):
        ref.reset(seed=3 + i)
    rng = np.random.default_rng(0)
    for t in range(1 if env_id == "Pendulum-v1" else 30):
        frames = env.render()
        assert isinstance(frames, tuple) and len(frames) == 2
        for i, ref in enumerate(refs):
            want = ref.render()
            assert frames[i].dtype == np.uint8 and frames[i].shape == want.shape
            np.testing.assert_array_equal(frames[i], want, err_msg=f"env {i}, step {t}")
        a = actions(env, rng)
        _, _, term, trunc, _ = env.step(a)
        for i, ref in enumerate(refs):
            ref.step(a[i])
        if (term | trunc).any():
            break
    env.close()


@pytest.mark.atari
def test_atari_frames_are_the_emulators_screen():
    """Pong's frame is ALE's screen in RGB, as gymnasium's ALE env renders it, step by step."""
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    from gymnasium.wrappers import AtariPreprocessing

    base = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0, render_mode="rgb_array")
    ref = AtariPreprocessing(base, noop_max=0, frame_skip=4, screen_size=84)
    env = fastvec.make(
        "Pong-v5", num_envs=1, seed=0, repeat_action_probability=0.0, noop_max=0, render_mode="rgb_array"
    )
    ref.reset(seed=0)
    env.reset()
    rng = np.random.default_rng(1)
    for t in range(60):
        (frame,) = env.render()
        assert frame.shape == (210, 160, 3) and frame.dtype == np.uint8
        np.testing.assert_array_equal(frame, ref.render(), err_msg=f"step {t}")
        a = int(rng.integers(6))
        ref.step(a)
        env.step(np.array([a]))
    assert frame.std() > 0  # a game screen, not a blank one
    env.close()


def test_gymnasium_single_env_renders():
    """gymnasium.make("fastvec/...", render_mode="rgb_array"): render() is the frame, and gymnasium's env checker
    (which checks rendering too) passes."""
    from gymnasium.utils.env_checker import check_env

    env = gym.make("fastvec/CartPole-v1", render_mode="rgb_array")
    ref = gym.make("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=4)
    ref.reset(seed=4)
    np.testing.assert_array_equal(env.render(), ref.render())
    assert env.metadata["render_modes"] == ["rgb_array"]
    env.close()
    env = gym.make("fastvec/MountainCar-v0", render_mode="rgb_array")  # (CartPole's infinite bounds warn)
    check_env(env.unwrapped)
    env.close()


def test_envpool_front_door_renders_as_envpool():
    """EnvPool's render(env_ids): default env 0, frames batched (n, H, W, 3); without render_mode, EnvPool's
    RuntimeError."""
    env = fastvec.envpool.make_gymnasium("CartPole-v1", num_envs=3, seed=0, render_mode="rgb_array")
    ref = fastvec.make("CartPole-v1", num_envs=3, seed=0, render_mode="rgb_array")
    env.reset()
    ref.reset()
    assert env.render().shape == (1, 400, 600, 3)
    frames = env.render(env_ids=[2, 0])
    want = ref.render()
    np.testing.assert_array_equal(frames, np.stack([want[2], want[0]]))
    plain = fastvec.envpool.make_gymnasium("CartPole-v1", num_envs=1)
    plain.reset()
    with pytest.raises(RuntimeError, match="render_mode must be set"):
        plain.render()
    for e in (env, ref, plain):
        e.close()


def test_sb3_get_images():
    """SB3's get_images (what VecVideoRecorder and VecEnv.render read) gets each env's frame."""
    pytest.importorskip("stable_baselines3")
    env = fastvec.sb3_vec("CartPole-v1", num_envs=2, seed=0, render_mode="rgb_array")
    env.reset()
    images = env.get_images()
    assert len(images) == 2 and all(im.shape == (400, 600, 3) for im in images)
    tiled = env.render(mode="rgb_array")
    assert tiled is not None and tiled.ndim == 3
    env.close()


def test_render_mistakes():
    """render_mode other than rgb_array: a ValueError naming it; no render_mode: render() is None; envs in
    flight: a RuntimeError naming the env, and the pool goes on; a closed pool: closed."""
    with pytest.raises(ValueError, match="render_mode must be None or one of \\['rgb_array'\\]"):
        fastvec.make("CartPole-v1", num_envs=2, render_mode="human")
    with pytest.raises(ValueError, match="render_mode"):
        gym.make("fastvec/CartPole-v1", render_mode="human")
    plain = fastvec.make("CartPole-v1", num_envs=2)
    plain.reset()
    assert plain.render() is None
    plain.close()
    env = fastvec.make("CartPole-v1", num_envs=4, batch_size=2, seed=0, render_mode="rgb_array")
    with pytest.raises(RuntimeError, match="has not been reset"):
        env.render()
    env.async_reset()
    obs, *_, info = env.recv()
    with pytest.raises(RuntimeError, match="in flight"):
        env.render()
    env.recv()
    assert len(env.render()) == 4  # every env idle again
    env.close()
    with pytest.raises(gym.error.ClosedEnvironmentError):
        env.render()


def test_videos_are_recorded(tmp_path):
    """SB3's VecVideoRecorder and gymnasium's RecordVideo (CleanRL's --capture-video) write their videos from
    fastvec's frames."""
    pytest.importorskip("moviepy")  # both write videos with moviepy
    from stable_baselines3.common.vec_env import VecVideoRecorder

    env = fastvec.sb3_vec("CartPole-v1", num_envs=2, seed=0, render_mode="rgb_array")
    env = VecVideoRecorder(env, str(tmp_path / "sb3"), record_video_trigger=lambda step: step == 0, video_length=20)
    env.reset()
    for _ in range(25):
        env.step(np.zeros(2, dtype=np.int64))
    env.close()
    (video,) = (tmp_path / "sb3").iterdir()
    assert video.suffix == ".mp4" and video.stat().st_size > 1000
    one = gym.wrappers.RecordVideo(
        gym.make("fastvec/CartPole-v1", render_mode="rgb_array"), str(tmp_path / "gym"), episode_trigger=lambda i: True
    )
    one.reset(seed=0)
    while not any(one.step(1)[2:4]):
        pass
    one.close()
    (video,) = (tmp_path / "gym").iterdir()
    assert video.suffix == ".mp4" and video.stat().st_size > 1000
