"""fastvec's native CarRacing-v3 against gymnasium's, on the same Box2D (pybox2d's sources, cmake/box2d.cmake).

The port (src/envs/box2d/car_racing.hpp, car_dynamics.hpp) has the physics, the track, the rewards and the
termination, not yet the observation (the 96x96 frame): until it has, it runs under the test-only id
``_CarRacing-v3``. The bar is tests/envs/test_box2d.py's: bit-identity over whole episodes, autoresets included, of
the rewards, terminated and truncated, and of the state behind a frame, which fastvec writes as the env's render
state (``racing_state`` in car_racing.hpp) and gymnasium's env keeps as attributes: the track, the road polygons
and their colours, the hull and the wheels (friction model, steering joints, skid marks), the tiles visited and
the reward total.

gymnasium's env draws its observation at every step (pygame); the reference here draws none (its
``_render("state_pixels")`` gives a black frame): drawing reads the state and never changes it, and the frames are
not compared yet.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.box2d import car_racing

import fastvec

pytestmark = [pytest.mark.versions, pytest.mark.box2d]

ENV_ID = "_CarRacing-v3"

# racing_state's offsets (src/envs/box2d/car_racing.hpp)
MAX_TRACK, MAX_PARTICLES, MAX_PARTICLE_POINTS, WHEEL_TILES = 2500, 30, 30, 8
BODY = 8
HULL = 19
WHEEL = BODY + 10 + WHEEL_TILES
WHEELS = HULL + BODY
PARTICLE = 2 + 2 * MAX_PARTICLE_POINTS
PARTICLES = WHEELS + 4 * WHEEL
TRACK = PARTICLES + MAX_PARTICLES * PARTICLE
TILE = 21
TILES = TRACK + 4 * MAX_TRACK
STATE_SIZE = TILES + TILE * MAX_TRACK


@pytest.fixture(autouse=True)
def _reference_draws_no_frames(monkeypatch):
    black = np.zeros((car_racing.STATE_H, car_racing.STATE_W, 3), np.uint8)
    monkeypatch.setattr(car_racing.CarRacing, "_render", lambda self, mode: black.copy())


def _bits(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def assert_same(got: Any, want: Any, what: str) -> None:
    """Equal shapes and float64 bits (``-0.0`` is not ``0.0``)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, gymnasium's {want.shape}"
    if not np.array_equal(_bits(got), _bits(want)):
        bad = tuple(np.argwhere(_bits(got) != _bits(want))[0])
        raise AssertionError(f"{what}: first difference at {bad}: {got[bad]!r} vs gymnasium's {want[bad]!r}")


def decode(row: np.ndarray) -> dict[str, Any]:
    """fastvec's render state of one env (int64 bits of float64 values) as the named parts reference_state makes."""
    s = row.view(np.float64)
    assert s.shape == (STATE_SIZE,)
    n, road_polys, particles = (int(v) for v in s[:3])
    tiles = s[TILES : TILES + TILE * n].reshape(n, TILE)
    road_poly = []
    for i, tile in enumerate(tiles):
        road_poly.append(np.concatenate([tile[4:12], tile[1:4]]))
        if tile[12]:
            road_poly.append(np.concatenate([tile[13:21], (255, 255, 255) if i % 2 == 0 else (255, 0, 0)]))
    assert len(road_poly) == road_polys
    wheels = s[WHEELS : WHEELS + 4 * WHEEL].reshape(4, WHEEL)
    return {
        "header": s[3:19],
        "hull": s[HULL : HULL + BODY],
        "wheels": wheels,
        "particles": [
            s[at + 2 : at + 2 + 2 * int(s[at + 1])].reshape(-1, 2)
            for at in range(PARTICLES, PARTICLES + particles * PARTICLE, PARTICLE)
        ],
        "particle_grass": s[PARTICLES : PARTICLES + particles * PARTICLE : PARTICLE],
        "track": s[TRACK : TRACK + 4 * n].reshape(n, 4),
        "visited": tiles[:, 0],
        "road_poly": np.array(road_poly).reshape(-1, 11),
    }


def reference_state(env: gym.Env, lap_finished: float) -> dict[str, Any]:
    """The same parts from gymnasium's env's attributes; ``lap_finished``: its last info's (-1: none)."""
    e: Any = env.unwrapped
    car = e.car

    def body(b: Any) -> list[float]:
        q = b.transform.q
        return [*b.position, b.angle, *b.linearVelocity, b.angularVelocity, q.s, q.c]

    wheels = []
    for w in car.wheels:
        tiles = sorted(t.idx for t in w.tiles)
        particle = -1
        if w.skid_particle is not None:
            particle = next((k for k, p in enumerate(car.particles) if p is w.skid_particle), -2)
        values = [w.joint.angle, w.joint.motorSpeed, w.gas, w.brake, w.steer, w.omega, w.phase]
        values += [w.skid_start is not None, particle, len(tiles), *(tiles + [-1] * WHEEL_TILES)[:WHEEL_TILES]]
        wheels.append(body(w) + values)
    header = [e.t, e.reward, e.prev_reward, e.tile_visited_count, e.new_lap, lap_finished, e.start_alpha]
    header += [*e.road_color, *e.bg_color, *e.grass_color]
    return {
        "header": header,
        "hull": body(car.hull),
        "wheels": wheels,
        "particles": [np.array(p.poly, dtype=np.float64).reshape(-1, 2) for p in car.particles],
        "particle_grass": [p.grass for p in car.particles],
        "track": np.array(e.track, dtype=np.float64).reshape(-1, 4),
        "visited": [t.road_visited for t in e.road],
        "road_poly": np.array([[*np.ravel(poly), *color] for poly, color in e.road_poly], dtype=np.float64),
    }


def assert_same_state(got: dict[str, Any], want: dict[str, Any], what: str) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        if key == "particles":
            assert len(got[key]) == len(value), f"{what} particles: {len(got[key])} vs {len(value)}"
            for k, (x, y) in enumerate(zip(got[key], value, strict=True)):
                assert_same(x, y, f"{what} particle {k}")
        else:
            assert_same(got[key], value, f"{what} {key}")


def states(env: fastvec.VectorEnv) -> list[dict[str, Any]]:
    return [decode(row) for row in env._pool.peek(None, True)]


def make_pair(n: int, max_episode_steps: int | None = None, **kwargs: Any):
    """fastvec's pool and gymnasium's SyncVectorEnv (next-step autoreset, as fastvec's default) over the same envs."""
    limit = {} if max_episode_steps is None else {"max_episode_steps": max_episode_steps}
    env = fastvec.make(ENV_ID, n, **limit, **kwargs)
    ref = gym.vector.SyncVectorEnv([lambda: gym.make("CarRacing-v3", **limit, **kwargs) for _ in range(n)])
    return env, ref


def follow_track(s: dict[str, Any], continuous: bool, speed: float) -> Any:
    """A controller that drives along the track: it steers towards the track a few tiles ahead of the nearest one
    and holds ``speed`` (units per second)."""
    x, y, angle, vx, vy = s["hull"][:5]
    track = s["track"]
    nearest = int(np.argmin((track[:, 2] - x) ** 2 + (track[:, 3] - y) ** 2))
    tx, ty = track[(nearest + 6) % len(track), 2:4]
    forward = -math.sin(angle) * (tx - x) + math.cos(angle) * (ty - y)
    right = math.cos(angle) * (tx - x) + math.sin(angle) * (ty - y)
    heading = math.atan2(right, forward)  # > 0: the target is to the right
    v = math.hypot(vx, vy)
    if continuous:
        return [float(np.clip(2.0 * heading, -1, 1)), 0.5 if v < speed else 0.0, 0.4 if v > 1.3 * speed else 0.0]
    if abs(heading) > 0.2:
        return 1 if heading > 0 else 2  # steer right, left
    return 3 if v < speed else 4 if v > 1.3 * speed else 0


def random_actions(rng: np.random.Generator, continuous: bool, n: int) -> np.ndarray:
    if not continuous:
        return rng.choice(5, n, p=[0.1, 0.2, 0.2, 0.4, 0.1])
    steer = rng.uniform(-1.5, 1.5, n)
    gas = rng.uniform(-0.5, 1.5, n)
    brake = np.where(rng.random(n) < 0.15, rng.choice([0.3, 0.9, np.nextafter(0.9, 0), 1.2, -0.3, -0.0], n), 0.0)
    return np.stack([steer, gas, brake], axis=1)


def run_side_by_side(
    n: int, steps: int, seed: int, policy: str, max_episode_steps: int | None = None, speed: float = 30.0, **kwargs
) -> dict[str, Any]:
    """Steps both with the same seeds and actions, asserting rewards, flags and every env's state bit-identical
    after each step; returns how the episodes ended."""
    env, ref = make_pair(n, max_episode_steps, **kwargs)
    continuous = kwargs.get("continuous", True)
    stats: dict[str, Any] = {"laps": 0, "off_playfield": 0, "truncated": 0, "visited": 0}
    try:
        env.reset(seed=seed)
        ref.reset(seed=seed)
        got = states(env)
        for i in range(n):
            assert_same_state(got[i], reference_state(ref.envs[i], -1), f"reset env {i}")
        rng = np.random.default_rng(seed)
        for t in range(steps):
            if policy == "random":
                a = random_actions(rng, continuous, n)
            elif policy == "straight":  # (full gas spins the rear-wheel drive car out: a gentle one)
                a = np.array([[0.0, 0.1 if math.hypot(*s["hull"][3:5]) < 40 else 0.0, 0.0] for s in got])
            else:
                a = np.array([follow_track(s, continuous, speed) for s in got])
            _, reward, terminated, truncated, _ = env.step(a)
            _, ref_reward, ref_terminated, ref_truncated, ref_info = ref.step(a)
            assert reward.dtype == np.float64
            assert_same(reward, ref_reward, f"step {t} reward")
            np.testing.assert_array_equal(terminated, ref_terminated, f"step {t} terminated")
            np.testing.assert_array_equal(truncated, ref_truncated, f"step {t} truncated")
            lap = np.where(ref_info.get("_lap_finished", np.zeros(n, bool)), ref_info.get("lap_finished", 0), -1)
            got = states(env)
            for i in range(n):
                assert_same_state(got[i], reference_state(ref.envs[i], lap[i]), f"step {t} env {i}")
                if terminated[i] or truncated[i]:
                    stats["visited"] = max(stats["visited"], int(got[i]["header"][3]))
            stats["laps"] += int((lap == 1).sum())
            stats["off_playfield"] += int((lap == 0).sum())
            if (lap == 0).any():
                stats["off_playfield_reward"] = float(reward[lap == 0].max())
            stats["truncated"] += int(truncated.sum())
        return stats
    finally:
        env.close()
        ref.close()


CASES = [
    {},
    {"continuous": False},
    {"domain_randomize": True},
    {"continuous": False, "domain_randomize": True, "lap_complete_percent": 0.5},
]


def _case_id(kwargs: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in kwargs.items()) or "default"


@pytest.mark.parametrize("kwargs", CASES, ids=_case_id)
def test_random_actions_are_bit_identical(kwargs):
    """Random actions over whole episodes (1000 steps, truncated) and into the next: the car wanders on and off
    the road, brakes, skids."""
    stats = run_side_by_side(2, 1100, 21, "random", **kwargs)
    assert stats["truncated"] >= 1 or stats["off_playfield"] >= 1, stats


@pytest.mark.slow
@pytest.mark.parametrize("kwargs", CASES, ids=_case_id)
def test_a_driver_finishes_laps_bit_identically(kwargs):
    """A controller that follows the track visits its tiles and finishes the lap: terminated, with
    info["lap_finished"] True (the state's copy of it is compared)."""
    stats = run_side_by_side(2, 2500, 5, "follow", max_episode_steps=2400, **kwargs)
    assert stats["laps"] >= 1, stats


def test_leaving_the_playfield_ends_with_minus_100():
    """Straight ahead: the car leaves the road, then the playfield (-100, terminated)."""
    stats = run_side_by_side(2, 600, 3, "straight")
    assert stats["off_playfield"] >= 2, stats
    assert stats["off_playfield_reward"] == -100.0, stats


def test_a_lap_of_no_tiles_ends_at_the_first_step():
    """lap_complete_percent=0: the start tile, visited at reset, completes the lap (the reference's rule)."""
    stats = run_side_by_side(2, 3, 8, "follow", lap_complete_percent=0.0)
    assert stats["laps"] >= 2, stats


@pytest.mark.parametrize("domain_randomize", [False, True])
def test_tracks_of_many_seeds(domain_randomize, capsys):
    """The track, its tiles and borders, the colours and the car after the reset of 60 seeds are gymnasium's,
    tracks that the reference generates again (one that does not close) among them."""
    seeds = [int(s) for s in np.random.default_rng(4).integers(0, 2**63, 60)]
    env = fastvec.make(ENV_ID, len(seeds), domain_randomize=domain_randomize)
    env.reset(seed=seeds)
    got = states(env)
    env.close()
    ref = gym.make("CarRacing-v3", domain_randomize=domain_randomize, verbose=True)
    for i, s in enumerate(seeds):
        ref.reset(seed=s)
        assert_same_state(got[i], reference_state(ref, -1), f"seed {s}")
    assert "retry to generate track" in capsys.readouterr().out


@pytest.mark.parametrize("continuous", [True, False])
def test_spaces_and_limits_are_gymnasium_s(continuous):
    env = fastvec.make(ENV_ID, 2, continuous=continuous)
    ref = gym.make("CarRacing-v3", continuous=continuous)
    assert env.single_observation_space == ref.observation_space
    assert env.single_action_space == ref.action_space
    entry = fastvec.registry.lookup(ENV_ID)
    assert entry.max_episode_steps == ref.spec.max_episode_steps == 1000
    assert entry.reward_threshold == ref.spec.reward_threshold
    assert entry.options == {"continuous": True, "domain_randomize": False, "lap_complete_percent": 0.95}
    # (test-only until the observation is drawn)
    assert entry.hidden and ENV_ID not in fastvec.list_envs() and f"fastvec/{ENV_ID}" not in gym.registry
    env.close()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"continuous": 2}, "continuous"),
        ({"lap_complete_percent": "x"}, "lap_complete_percent"),
        ({"hardcore": 1}, "hardcore"),
    ],
)
def test_bad_options_are_named(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        fastvec.make(ENV_ID, 2, **kwargs)


def test_bad_actions_leave_the_pool_usable():
    env = fastvec.make(ENV_ID, 2, continuous=False)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(np.array([0, 5]))
    env.step(np.array([0, 3]))
    cont = fastvec.make(ENV_ID, 2)
    cont.reset(seed=0)
    with pytest.raises(ValueError, match=r"NaN|finite"):
        cont.step(np.array([[0.0, np.nan, 0.0], [0.0, 0.0, 0.0]]))
    cont.step(np.zeros((2, 3)))
    env.close()
    cont.close()
