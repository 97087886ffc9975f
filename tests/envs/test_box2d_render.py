"""Frames of the native LunarLander and BipedalWalker (render_mode="rgb_array") against gymnasium's ``render()``,
pixel for pixel: after resets and over whole episodes, for random actions and gymnasium's controllers (the lander's
engines throw particles, it lands on its legs; the walker walks past its flags, the lidar ray drawn changes),
rendered every step or now and then (a render ages LunarLander's particles, and picks BipedalWalker's lidar ray:
the envs keep what gymnasium's keeps), with the pool's threads and in async pools; through gymnasium.make and
RecordVideo; and what a render that cannot be done says.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.box2d import bipedal_walker, lunar_lander
from test_box2d import NEP_50, _random_actions, assert_same

import fastvec

pytestmark = [pytest.mark.versions, pytest.mark.box2d]

pytest.importorskip("pygame")  # gymnasium draws its Box2D envs with pygame (gymnasium[box2d])

LANDER_CASES = [
    ("LunarLander-v3", {}),
    ("LunarLanderContinuous-v3", {}),
    ("LunarLander-v3", {"enable_wind": True}),
    ("LunarLander-v3", {"continuous": True, "enable_wind": True, "wind_power": 20.0, "turbulence_power": 2.0}),
]
WALKER_IDS = ["BipedalWalker-v3", "BipedalWalkerHardcore-v3"]


def _case_id(case: tuple[str, dict]) -> str:
    env_id, kwargs = case
    return "-".join([env_id, *(f"{k}={v}" for k, v in kwargs.items())])


class Policy:
    """Actions for n envs: random ones (test_box2d's), or gymnasium's controllers on each env's observation
    (LunarLander's ``heuristic``, BipedalWalker's ``BipedalWalkerHeuristics``, new for each episode)."""

    def __init__(self, env_id: str, kind: str, refs: list[gym.Env], seed: int) -> None:
        self.kind, self.refs = kind, refs
        self.walker = env_id.startswith("BipedalWalker")
        self.rng = np.random.default_rng(seed)
        self.walkers = [bipedal_walker.BipedalWalkerHeuristics() for _ in refs]

    def __call__(self, space: gym.Space, obs: np.ndarray, done: np.ndarray) -> np.ndarray:
        if self.kind == "random":
            return _random_actions(self.rng, space, len(self.refs))
        if not self.walker:
            return np.array([lunar_lander.heuristic(r.unwrapped, o) for r, o in zip(self.refs, obs, strict=True)])
        for i in np.flatnonzero(done):
            self.walkers[i] = bipedal_walker.BipedalWalkerHeuristics()
        return np.array([h.step_heuristic(o) for h, o in zip(self.walkers, obs, strict=True)], np.float32)


def assert_frames(frames: tuple | np.ndarray, refs: list[gym.Env], what: str) -> None:
    assert len(frames) == len(refs)
    for i, ref in enumerate(refs):
        want = ref.render()
        assert frames[i].dtype == np.uint8 and frames[i].shape == want.shape == (400, 600, 3), what
        np.testing.assert_array_equal(frames[i], want, err_msg=f"{what}, env {i}")


def frames_side_by_side(
    env_id: str, n: int, steps: int, seed: int, policy: str, *, every: int = 1, **kwargs
) -> dict[str, int]:
    """Steps fastvec's pool (``kwargs``: the env's options and the pool's) and n gymnasium envs (rgb_array, seeded
    seed + i, reset unseeded where fastvec's envs autoreset) with the same actions, asserting every output
    bit-identical (the particles a render mode adds leave the physics alone) and, every ``every`` steps, every frame
    pixel-identical; returns how the episodes went (``particles``: the most LunarLander's envs had in a frame)."""
    options = {k: v for k, v in kwargs.items() if k not in ("num_threads", "block_size")}
    env = fastvec.make(env_id, n, seed=seed, render_mode="rgb_array", **kwargs)
    refs = [gym.make(env_id, render_mode="rgb_array", **options) for _ in range(n)]
    try:
        obs, _ = env.reset()
        for i, ref in enumerate(refs):
            assert_same(obs[i], ref.reset(seed=seed + i)[0], f"reset obs {i}")
        act = Policy(env_id, policy, refs, seed)
        ended = np.zeros(n, bool)
        stats = {"ends": 0, "landed": 0, "finished": 0, "particles": 0}
        for t in range(steps):
            if t % every == 0:
                particles = [len(getattr(r.unwrapped, "particles", ())) for r in refs]
                stats["particles"] = max(stats["particles"], *particles)
                assert_frames(env.render(), refs, f"step {t}")
            a = act(env.single_action_space, obs, ended | (t == 0))
            obs, reward, terminated, truncated, _ = env.step(a)
            for i, ref in enumerate(refs):
                if ended[i]:  # fastvec's env autoreset (next_step): gymnasium's resets, unseeded
                    want = (ref.reset()[0], 0.0, False, False)
                else:
                    want = ref.step(a[i])[:4]
                got = (obs[i], reward[i], terminated[i], truncated[i])
                for name, x, y in zip(("obs", "reward", "terminated", "truncated"), got, want, strict=True):
                    if name == "reward" and not NEP_50 and env_id.startswith("BipedalWalker"):
                        continue  # (numpy 1's float64 control cost: test_box2d bounds it)
                    assert_same(x, np.asarray(y, dtype=np.asarray(x).dtype), f"step {t} {name} {i}")
            ended = terminated | truncated
            stats["ends"] += int(ended.sum())
            stats["landed"] += int((terminated & (reward == 100)).sum())
            stats["finished"] += int((terminated & (reward != -100)).sum())
        return stats
    finally:
        env.close()
        for ref in refs:
            ref.close()


@pytest.mark.parametrize("case", LANDER_CASES, ids=_case_id)
def test_lunar_lander_frames_random_actions(case):
    """Random actions fire every engine (particles, side ones too) and crash the lander or fly it away: frames
    equal gymnasium's every step, over several episodes (autoresets: a new terrain, no particles)."""
    env_id, kwargs = case
    stats = frames_side_by_side(env_id, 3, 250, 21, "random", **kwargs)
    assert stats["ends"] >= 3 and stats["particles"] > 0, stats


@pytest.mark.parametrize("case", LANDER_CASES, ids=_case_id)
def test_lunar_lander_frames_heuristic_landings(case):
    """gymnasium's controller lands the lander (its legs touch, it falls asleep: +100) while its engines throw
    particles that fall and bounce on the ground; frames every 2 steps, so that particles age at gymnasium's rate
    (only a render ages them)."""
    env_id, kwargs = case
    stats = frames_side_by_side(env_id, 2, 500, 3, "heuristic", every=2, **kwargs)
    assert stats["particles"] > 0, stats
    if not kwargs:
        assert stats["landed"] >= 1, stats


def test_lunar_lander_particles_pile_up_without_renders():
    """Without renders, particles live on (gymnasium ages them only as it renders): the frame after 60 unrendered
    steps draws every particle since the reset, and the frames after it age them as gymnasium's do."""
    env_id = "LunarLander-v3"
    env = fastvec.make(env_id, 1, seed=8, render_mode="rgb_array")
    ref = gym.make(env_id, render_mode="rgb_array")
    env.reset()
    ref.reset(seed=8)
    for t in range(70):
        _, _, terminated, _, _ = env.step(np.array([2 if t % 3 else 1]))
        assert not ref.step(2 if t % 3 else 1)[2] and not terminated[0]
        if t >= 60:
            assert_frames(env.render(), [ref], f"step {t}")
            if t == 60:
                assert len(ref.unwrapped.particles) > 60
    for _ in range(3):  # renders of one state: each ages the particles once more
        assert_frames(env.render(), [ref], "again")
    env.close()
    ref.close()


@pytest.mark.parametrize("env_id", WALKER_IDS)
def test_bipedal_walker_frames_random_actions(env_id):
    """Random actions make the walker fall (a new terrain and clouds each episode, hardcore's obstacles); the
    lidar ray gymnasium draws follows its count of renders."""
    stats = frames_side_by_side(env_id, 2, 150, 13, "random")
    assert stats["ends"] >= 1, stats


@pytest.mark.slow
@pytest.mark.parametrize("env_id", WALKER_IDS)
def test_bipedal_walker_frames_heuristic_walks(env_id):
    """gymnasium's controller walks (from seed 6 to the terrain's end on the normal one: the view scrolls past
    every cloud and flag; on the hardcore one it meets stumps, pits and stairs): every frame of whole episodes,
    rendered every 3 steps (and the lidar ray with it)."""
    stats = frames_side_by_side(env_id, 1, 2001, 6, "heuristic", every=3)  # (hardcore: to its 2000-step limit)
    assert stats["ends"] >= 1, stats
    if env_id == "BipedalWalker-v3" and NEP_50:
        assert stats["finished"] >= 1, stats


@pytest.mark.parametrize("env_id", ["LunarLanderContinuous-v3", "BipedalWalkerHardcore-v3"])
def test_frames_from_the_pool_threads(env_id):
    """Two worker threads, one env a block: the envs (and LunarLander's particles) step on the pool's threads and
    the frames are still gymnasium's."""
    frames_side_by_side(env_id, 4, 60, 5, "random", num_threads=2, block_size=1)


@pytest.mark.parametrize("env_id", ["LunarLander-v3", "BipedalWalker-v3"])
def test_frames_of_an_async_pool(env_id):
    """An async pool (batch_size 2 of 4): once every env's result is in, each env's frame is the one gymnasium's
    env draws after the same actions, however the batches came."""
    n = 4
    env = fastvec.make(env_id, n, batch_size=2, num_threads=2, seed=9, render_mode="rgb_array")
    refs = [gym.make(env_id, render_mode="rgb_array") for _ in range(n)]
    want = [ref.reset(seed=9 + i)[0] for i, ref in enumerate(refs)]
    rng = np.random.default_rng(4)
    ended = np.zeros(n, bool)
    env.async_reset()
    for t in range(40):
        batches = [env.recv(), env.recv()]
        assert_frames(env.render(), refs, f"round {t}")
        for obs, _, terminated, truncated, info in batches:
            ids = info["env_id"]
            for k, i in enumerate(ids):
                assert_same(obs[k], want[i], f"round {t} obs {i}")
            a = _random_actions(rng, env.single_action_space, len(ids))
            env.send(a, ids)
            for k, i in enumerate(ids):
                want[i] = refs[i].reset()[0] if ended[i] else refs[i].step(a[k])[0]
            ended[ids] = terminated | truncated
    env.close()
    for ref in refs:
        ref.close()


def test_gymnasium_single_env_and_record_video(tmp_path):
    """gymnasium.make("fastvec/LunarLander-v3", render_mode="rgb_array"): render() is gymnasium's frame, the
    metadata its (50 frames a second); RecordVideo writes a video of an episode from it."""
    pytest.importorskip("moviepy")  # RecordVideo writes with moviepy
    one = gym.make("fastvec/LunarLander-v3", render_mode="rgb_array")
    ref = gym.make("LunarLander-v3", render_mode="rgb_array")
    one.reset(seed=2)
    ref.reset(seed=2)
    for _ in range(20):
        np.testing.assert_array_equal(one.render(), ref.render())
        one.step(2)
        ref.step(2)
    assert one.metadata["render_modes"] == ["rgb_array"] and one.metadata["render_fps"] == 50
    one.close()
    video = gym.wrappers.RecordVideo(
        gym.make("fastvec/BipedalWalker-v3", render_mode="rgb_array"),
        str(tmp_path / "video"),
        episode_trigger=lambda i: True,
    )
    video.reset(seed=0)
    for _ in range(30):
        video.step(np.zeros(4, np.float32))
    video.close()
    (path,) = (tmp_path / "video").iterdir()
    assert path.suffix == ".mp4" and path.stat().st_size > 1000


def test_render_mistakes():
    """render_mode other than rgb_array: a ValueError naming it; no render_mode: render() is None and the pool
    steps on; before a reset and in flight: a RuntimeError, and the pool goes on."""
    for env_id in ("LunarLander-v3", "BipedalWalkerHardcore-v3"):
        with pytest.raises(ValueError, match="render_mode must be None or one of \\['rgb_array'\\]"):
            fastvec.make(env_id, 2, render_mode="human")
    plain = fastvec.make("LunarLander-v3", 2)
    plain.reset(seed=0)
    assert plain.render() is None
    plain.step(np.array([2, 2]))
    plain.close()
    env = fastvec.make("LunarLander-v3", 4, batch_size=2, seed=0, render_mode="rgb_array")
    with pytest.raises(RuntimeError, match="has not been reset"):
        env.render()
    env.async_reset()
    env.recv()
    with pytest.raises(RuntimeError, match="in flight"):
        env.render()
    env.recv()
    assert len(env.render()) == 4
    env.close()
