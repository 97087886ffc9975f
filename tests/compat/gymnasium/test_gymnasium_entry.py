"""gymnasium's other entry points for fastvec's native ids: ``gymnasium.make("fastvec/...")`` (one env, a
``gymnasium.Env``), ``gymnasium.make_vec(..., vectorization_mode="sync"/"async")`` over it, and the spec of a
native pool."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError, ResetNeeded
from gymnasium.utils.env_checker import check_env, data_equivalence
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit

import fastvec
from fastvec._single_env import NativeEnv

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)

CLASSIC_IDS = [e for e in fastvec.list_envs() if not fastvec.registry.lookup(e).family]
PONG = ["Pong-v5"]  # (conftest marks Atari parameters atari: a build without Atari deselects them)


def _actions(space: gym.Space, n: int, seed: int) -> list:
    space.seed(seed)
    return [space.sample() for _ in range(n)]


def _pool_episodes(env_id: str, seed: int, actions: list, **kw) -> list:
    """``fastvec.make(env_id, num_envs=1)``'s trajectory from ``reset(seed=seed)`` under ``actions``, as the
    single env's would be: each row (obs, reward, terminated, truncated); next-step autoreset's reset rows taken as
    the single env's ``reset()`` (obs only)."""
    pool = fastvec.make(env_id, num_envs=1, **kw)
    obs, _ = pool.reset(seed=seed)
    rows: list = [("reset", obs[0].copy())]
    ended = False
    for a in actions:
        obs, rew, term, trunc, _ = pool.step(np.asarray(a)[np.newaxis])
        rows.append(("reset", obs[0].copy()) if ended else ("step", obs[0].copy(), rew[0], term[0], trunc[0]))
        ended = bool(term[0] or trunc[0])
    pool.close()
    return rows


def _single_episodes(env: gym.Env, seed: int, actions: list) -> list:
    obs, info = env.reset(seed=seed)
    rows: list = [("reset", obs)]
    ended = False
    for a in actions:
        if ended:
            obs, info = env.reset()
            rows.append(("reset", obs))
            ended = False
            continue
        obs, rew, term, trunc, info = env.step(a)
        assert type(rew) is float and type(term) is bool and type(trunc) is bool and type(info) is dict
        rows.append(("step", obs, rew, term, trunc))
        ended = term or trunc
    for row in rows:  # the space's dtype, and arrays of their own: no view of a buffer a later step writes
        assert type(row[1]) is np.ndarray and row[1].dtype == env.observation_space.dtype
        assert row[1].flags.owndata and row[1] in env.observation_space
    return rows


def _assert_same_rows(got: list, want: list) -> None:
    assert [r[0] for r in got] == [r[0] for r in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g[1], w[1])
        assert g[2:] == tuple(x.item() for x in w[2:])


@pytest.mark.parametrize("env_id", [*CLASSIC_IDS, *PONG])
def test_make_gives_one_env_with_the_pools_trajectory(env_id):
    env = gym.make(f"fastvec/{env_id}")
    assert isinstance(env, TimeLimit) and isinstance(env.env, OrderEnforcing)
    assert isinstance(env.env.env, PassiveEnvChecker) and isinstance(env.unwrapped, NativeEnv)
    pool = fastvec.make(env_id, 1)
    assert env.observation_space == pool.single_observation_space
    assert env.action_space == pool.single_action_space
    assert env.metadata["render_modes"] == ["rgb_array"] and env.render_mode is None and env.unwrapped.render() is None
    assert env.spec.id == f"fastvec/{env_id}" and env.spec.max_episode_steps == pool.max_episode_steps
    pool.close()
    steps = 40 if env_id in PONG else 150  # (CartPole: several episodes under random actions)
    actions = _actions(env.action_space, steps, seed=1)
    got = _single_episodes(env, 7, actions)
    _assert_same_rows(got, _pool_episodes(env_id, 7, actions))
    assert env.unwrapped.np_random_seed == 7  # gymnasium's np_random, seeded as gymnasium's envs seed it
    # a later reset(seed=...) starts that trajectory again; another seed gives another
    again = _single_episodes(env, 7, actions)
    _assert_same_rows(again, _pool_episodes(env_id, 7, actions))
    if env_id not in PONG:  # (Pong's first frames do not show the seed: test_atari checks seeds on play)
        assert not np.array_equal(env.reset(seed=8)[0], got[0][1])
    env.close()


def test_observations_belong_to_the_caller():
    env = gym.make("fastvec/Acrobot-v1")
    first, _ = env.reset(seed=0)
    kept = [first, *(env.step(0)[0] for _ in range(5))]
    copies = [o.copy() for o in kept]
    for _ in range(5):
        env.step(1)
    for o, c in zip(kept, copies, strict=True):
        np.testing.assert_array_equal(o, c)
    assert len({id(o) for o in kept}) == len(kept)


def test_env_kwargs_reach_the_native_env():
    env = gym.make("fastvec/CartPole-v1", sutton_barto_reward=True)
    env.reset(seed=0)
    assert env.step(0)[1] == 0.0  # (1.0 with the default reward)
    assert env.spec.kwargs == {"sutton_barto_reward": True}
    remade = env.spec.make()
    remade.reset(seed=0)
    assert remade.step(0)[1] == 0.0
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'gravity' \(accepted: sutton_barto_reward\)"):
        gym.make("fastvec/CartPole-v1", gravity=3.0)
    for pool_keyword in ("num_envs", "seed", "autoreset_mode", "max_episode_steps"):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{pool_keyword}'"):
            NativeEnv("CartPole-v1", **{pool_keyword: 1})


@pytest.mark.parametrize("env_id", PONG)
def test_atari_options_pass_through_make(env_id):
    actions = _actions(gym.make(f"fastvec/{env_id}").action_space, 30, seed=2)
    env = gym.make(f"fastvec/{env_id}", frame_skip=2, noop_max=0)
    assert env.unwrapped.spec.kwargs == {"frame_skip": 2, "noop_max": 0}
    got = _single_episodes(env, 3, actions)
    _assert_same_rows(got, _pool_episodes(env_id, 3, actions, frame_skip=2, noop_max=0))
    default = _single_episodes(gym.make(f"fastvec/{env_id}", noop_max=0), 3, actions)
    assert not all(np.array_equal(g[1], d[1]) for g, d in zip(got, default, strict=True))


def _steps_to_truncation(env: gym.Env, steps: int) -> list[int]:
    """The steps (1-based) at which ``env`` truncated in ``steps`` steps from a reset, never resetting again."""
    env.reset(seed=0)
    flags = []
    for t in range(1, steps + 1):
        _, _, terminated, truncated, _ = env.step(np.zeros(1, np.float32))
        assert not terminated  # (Pendulum never terminates)
        if truncated:
            flags.append(t)
    return flags


def test_truncation_happens_once_at_the_limit():
    # Pendulum never terminates and is truncated at 200 steps, by gymnasium's TimeLimit only (the env's pool has no
    # limit of its own): once, at the limit, as fastvec's pool truncates it.
    env = gym.make("fastvec/Pendulum-v1")
    assert env.spec.max_episode_steps == 200 and env._max_episode_steps == 200
    assert _steps_to_truncation(env, 200) == [200]
    pool = fastvec.make("Pendulum-v1", 1, autoreset_mode="disabled")
    pool.reset(seed=0)
    assert [t for t in range(1, 201) if pool.step(np.zeros((1, 1), np.float32))[3][0]] == [200]
    # gymnasium.make's max_episode_steps: shorter or longer than the id's, or none (-1)
    for limit in (7, 300):
        env = gym.make("fastvec/Pendulum-v1", max_episode_steps=limit)
        assert env.spec.max_episode_steps == limit
        assert _steps_to_truncation(env, limit) == [limit]
    env = gym.make("fastvec/Pendulum-v1", max_episode_steps=-1)
    assert not isinstance(env, TimeLimit)
    assert _steps_to_truncation(env, 250) == []
    # and the single env on its own has no limit, as gymnasium's own envs
    assert _steps_to_truncation(NativeEnv("Pendulum-v1"), 250) == []


def test_cartpole_truncates_at_500_as_the_pool():
    # CartPole, held up by a controller for 500 steps: truncated (not terminated) exactly at step 500
    env = gym.make("fastvec/CartPole-v1")
    obs, _ = env.reset(seed=0)
    ends = []
    for t in range(1, 501):
        obs, _, terminated, truncated, _ = env.step(int(obs[2] + 0.5 * obs[3] > 0))
        if terminated or truncated:
            ends.append((t, terminated, truncated))
            break
    assert ends == [(500, False, True)]


@pytest.mark.parametrize("env_id", [*CLASSIC_IDS, *PONG])
def test_check_env_passes(env_id):
    """gymnasium's env checker, with no warning but those it gives gymnasium's own env of that id (about its
    spaces' bounds, which fastvec's match); gymnasium.make's passive checker runs in the other tests, where
    warnings are errors."""
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        env = gym.make(f"fastvec/{env_id}")
        check_env(env.unwrapped)
        env.close()
    expected: set[str] = set()
    if env_id not in PONG:
        with warnings.catch_warnings(record=True) as reference:
            warnings.simplefilter("always")
            check_env(gym.make(env_id).unwrapped, skip_render_check=True)  # (its renderer needs pygame)
        expected = {str(w.message) for w in reference}
    assert {str(w.message) for w in ours} == expected


def test_check_env_fails_for_an_env_that_breaks_its_contract():
    """(check_env can fail here: an env whose reset ignores the seed.)"""

    class Unseeded(NativeEnv):
        def reset(self, *, seed=None, options=None):
            return super().reset(seed=None, options=options)

    with pytest.raises(AssertionError, match=r"non-deterministic|super"):
        check_env(Unseeded("Acrobot-v1"))


@pytest.mark.parametrize(
    ("env_id", "mode"),
    [("CartPole-v1", "sync"), ("CartPole-v1", "async"), *((p, m) for p in PONG for m in ("sync", "async"))],
)
def test_make_vec_sync_and_async_match_the_pool(env_id, mode):
    num_envs, steps = (2, 12) if env_id in PONG else (4, 80)
    kwargs = {"vector_kwargs": {"context": "forkserver"}} if mode == "async" else {}
    vec = gym.make_vec(f"fastvec/{env_id}", num_envs=num_envs, vectorization_mode=mode, **kwargs)
    assert isinstance(vec, gym.vector.SyncVectorEnv if mode == "sync" else gym.vector.AsyncVectorEnv)
    pool = gym.make_vec(f"fastvec/{env_id}", num_envs=num_envs, vectorization_mode="vector_entry_point")
    assert isinstance(pool, fastvec.VectorEnv)
    assert vec.single_observation_space == pool.single_observation_space
    assert vec.single_action_space == pool.single_action_space
    actions = _actions(pool.action_space, steps, seed=3)
    results = []
    for env in (vec, pool):
        obs, info = env.reset(seed=5)
        out = [(obs, info.get("lives"))]
        for a in actions:
            obs, rew, term, trunc, info = env.step(a)
            out.append((obs, rew, term, trunc, info.get("lives")))
        results.append(out)
        env.close()
    ended = 0
    for got, want in zip(*results, strict=True):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        ended += int(np.sum(got[2] | got[3])) if len(got) > 2 else 0
    assert env_id in PONG or ended >= num_envs  # (CartPole's episodes end, and autoreset, on the way)


def test_spec_of_a_native_pool_makes_it_again():
    env = fastvec.make("Pendulum-v1", 3, max_episode_steps=50, g=9.81)
    spec = env.spec
    assert spec is not None and spec.id == "fastvec/Pendulum-v1" and spec.max_episode_steps == 50
    assert spec == env.get_attr("spec")[0] and spec.kwargs["g"] == 9.81
    again = gym.make_vec(spec, num_envs=2)
    assert isinstance(again, fastvec.VectorEnv) and again.num_envs == 2
    assert again.max_episode_steps == 50 and again.get_attr("g") == (9.81, 9.81)
    assert data_equivalence(fastvec.make("Pendulum-v1", 2, g=9.81).reset(seed=4), again.reset(seed=4), exact=True)
    for e in (env, again):
        e.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_spec_of_a_native_pool_makes_one_env_and_gymnasiums_vector_envs(mode):
    """The pool's spec has the registered single-env entry point: gymnasium.make(spec) is one env with the pool's
    options and episode limit, and make_vec(spec, "sync"/"async") steps the pool's trajectories."""
    pool = fastvec.make("Pendulum-v1", 2, max_episode_steps=7, g=9.0)
    spec = pool.spec
    assert spec.entry_point == gym.spec("fastvec/Pendulum-v1").entry_point
    one = gym.make(spec)
    assert isinstance(one.unwrapped, NativeEnv) and one.unwrapped.spec.kwargs == {"g": 9.0}
    assert one.spec.max_episode_steps == 7
    first, _ = one.reset(seed=5)
    assert data_equivalence(first, pool.reset(seed=[5, 6])[0][0], exact=True)
    for t in range(7):
        _, _, terminated, truncated, _ = one.step(np.zeros(1, dtype=np.float32))
        assert (terminated, truncated) == (False, t == 6)
    kwargs = {"vector_kwargs": {"context": "forkserver"}} if mode == "async" else {}
    vec = gym.make_vec(spec, num_envs=2, vectorization_mode=mode, **kwargs)
    assert isinstance(vec, gym.vector.SyncVectorEnv if mode == "sync" else gym.vector.AsyncVectorEnv)
    assert data_equivalence(vec.reset(seed=5)[0], pool.reset(seed=5)[0], exact=True)
    actions = np.random.default_rng(0).uniform(-2, 2, (9, 2, 1)).astype(np.float32)
    for a in actions:  # across the limit of 7 and the next-step autoreset (both modes')
        for got, want in zip(vec.step(a)[:4], pool.step(a)[:4], strict=True):  # (gymnasium's rewards: float64)
            np.testing.assert_array_equal(got, want)
    for e in (one, vec, pool):
        e.close()


def test_make_vecs_spec_of_the_pool_agrees_with_fastvecs():
    """gymnasium's make_vec sets a spec of its own on the pool (the registered one, its arguments in kwargs): the
    same env as fastvec.make's spec, and it makes the pool again too."""
    made = gym.make_vec("fastvec/Pendulum-v1", num_envs=3, vectorization_mode="vector_entry_point")
    ours = fastvec.make("Pendulum-v1", 3).spec
    for a in ("id", "max_episode_steps", "reward_threshold", "vector_entry_point"):
        assert getattr(made.spec, a) == getattr(ours, a), a
    assert made.spec.vector_entry_point == gym.spec("fastvec/Pendulum-v1").vector_entry_point
    assert gym.make_vec(made.spec).num_envs == 3
    # a limit given to make_vec is in its spec's kwargs (gymnasium leaves spec.max_episode_steps the registered
    # one, as it does for its own envs), and the pool made again from it has that limit
    made = gym.make_vec("fastvec/Pendulum-v1", num_envs=2, vectorization_mode="vector_entry_point", max_episode_steps=9)
    assert made.max_episode_steps == 9 and made.spec.kwargs["max_episode_steps"] == 9
    remade = gym.make_vec(made.spec)
    assert isinstance(remade, fastvec.VectorEnv) and remade.num_envs == 2 and remade.max_episode_steps == 9
    for e in (made, remade):
        e.close()


def test_spec_of_the_single_env_makes_it_again():
    env = gym.make("fastvec/Acrobot-v1", max_episode_steps=20)
    assert env.spec.max_episode_steps == 20
    remade = gym.make(env.spec)
    assert isinstance(remade.unwrapped, NativeEnv) and remade.spec.max_episode_steps == 20
    assert data_equivalence(env.reset(seed=1), remade.reset(seed=1), exact=True)
    alone = NativeEnv("fastvec/Acrobot-v1")  # on its own: a spec that makes it again, without TimeLimit
    assert alone.spec.id == "fastvec/Acrobot-v1" and alone.spec.max_episode_steps is None
    assert isinstance(alone.spec.make().unwrapped, NativeEnv)


@pytest.mark.parametrize("render_mode", ["human", "rgb_array_list", "ansi"])
def test_render_modes_other_than_rgb_array_are_refused(render_mode):
    """(tests/envs/test_render.py has what rgb_array renders)"""
    with pytest.raises(ValueError, match=rf"render_mode must be None or one of \['rgb_array'\].*got '{render_mode}'"):
        gym.make("fastvec/CartPole-v1", render_mode=render_mode)
    assert gym.make("fastvec/CartPole-v1", render_mode=None).render_mode is None
    assert gym.make("fastvec/CartPole-v1", render_mode="rgb_array").render_mode == "rgb_array"


def test_reset_step_and_close_rules():
    env = NativeEnv("CartPole-v1")
    with pytest.raises(ResetNeeded, match=r"Cannot call env\.step\(\) before calling env\.reset\(\)"):
        env.step(0)
    with pytest.raises(ValueError, match=r"takes no reset options, got \['reset_mask'\]"):
        env.reset(options={"reset_mask": np.ones(1, bool)})
    env.reset(seed=0, options={})
    with pytest.raises(ValueError, match=r"must have shape \(\), got shape \(1,\)"):
        env.step([0])
    while not env.step(1)[2]:
        pass
    with pytest.raises(ResetNeeded, match="the episode has terminated"):
        env.step(1)
    env.reset()
    env.step(np.int32(1))
    env.close()
    env.close()
    for call in (lambda: env.step(0), env.reset):
        with pytest.raises(ClosedEnvironmentError):
            call()
