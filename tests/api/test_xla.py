"""xla(): the pools' send/recv/step as XLA custom calls inside jitted JAX code (jax.jit, jax.lax.scan), as
EnvPool's envs.xla() and CleanRL's *_envpool_xla_jax*.py use them: the same trajectories as the Python loop,
the handle's ordering and checks, and bad use as clear errors that leave the pool usable."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import fastvec
import fastvec.envpool as envpool
import fastvec.envpool.legacy as legacy

try:
    import jax
except ImportError:  # a test dependency: each test skips without it, and CI fails on a skip. (Not a module-level
    jax = None  # importorskip: CI's numpy 1.26 pass leaves JAX out, which needs numpy 2, and deselects these tests.)
else:
    jnp = jax.numpy
    JaxRuntimeError = jax.errors.JaxRuntimeError


@pytest.fixture(autouse=True)
def _needs_jax():
    if jax is None:
        pytest.skip("needs jax (the test extra installs it)")


def scan_steps(step, handle, actions):
    """Every step's batch of stepping with ``actions`` (T, N, ...) in one jitted lax.scan."""

    def body(h, a):
        h, out = step(h, a)
        return h, out

    return jax.jit(lambda h, a: jax.lax.scan(body, h, a))(handle, actions)


def python_steps(env, actions):
    return [env.step(a) for a in actions]


def test_scan_of_step_gives_the_python_loops_trajectories_cartpole():
    n, t = 6, 300  # several episodes end (and autoreset) in 300 random steps
    actions = np.random.default_rng(0).integers(0, 2, size=(t, n))
    with fastvec.make("CartPole-v1", n, seed=3) as ref, fastvec.make("CartPole-v1", n, seed=3) as env:
        ref.reset()
        expected = python_steps(ref, actions)
        env.reset()
        handle, _, _, step = env.xla()
        handle, (obs, reward, terminated, truncated, info) = scan_steps(step, handle, jnp.asarray(actions))
        assert handle.shape == (8,) and handle.dtype == jnp.uint8
        for k, (o, r, term, trunc, _) in enumerate(expected):
            np.testing.assert_allclose(np.asarray(obs[k]), o, rtol=0, atol=0, err_msg=f"step {k}")
            np.testing.assert_array_equal(np.asarray(reward[k]), r)
            np.testing.assert_array_equal(np.asarray(terminated[k]), term)
            np.testing.assert_array_equal(np.asarray(truncated[k]), trunc)
        assert np.asarray(terminated).any()  # the comparison went through autoresets
        np.testing.assert_array_equal(np.asarray(info["env_id"]), np.tile(np.arange(n), (t, 1)))
        # The pool goes on from Python where the jitted steps left it.
        o, *_ = env.step(actions[0])
        o_ref, *_ = ref.step(actions[0])
        np.testing.assert_array_equal(o, o_ref)


def test_the_handle_threads_calls_across_jitted_functions_and_send_recv():
    n = 4
    with fastvec.make("CartPole-v1", n, seed=1) as ref, fastvec.make("CartPole-v1", n, seed=1) as env:
        ref.reset()
        env.reset()
        handle, recv, send, step = env.xla()
        jstep, jsend, jrecv = jax.jit(step), jax.jit(send), jax.jit(recv)
        for k in range(20):
            a = np.full(n, k % 2)
            if k % 2:
                handle, (obs, reward, term, trunc, _) = jstep(handle, a)
            else:
                handle, (obs, reward, term, trunc, _) = jrecv(jsend(handle, a))
            o, r, *_ = ref.step(a)
            np.testing.assert_array_equal(np.asarray(obs), o)
            np.testing.assert_array_equal(np.asarray(reward), r)


def test_async_pool_recv_send_in_scan_follows_each_envs_trajectory():
    """batch_size < num_envs: rows come in completion order; a policy of the observation makes each env's
    trajectory independent of that order, so each env's rows equal its rows in a sync pool."""
    n, b, t = 8, 4, 40
    with fastvec.make("CartPole-v1", n, seed=5) as ref:
        obs, _ = ref.reset()
        per_env = [[o] for o in obs]
        for _ in range(2 * t):  # (an env may be stepped in every batch)
            obs, *_ = ref.step((obs[:, 2] > 0).astype(np.int64))
            for i in range(n):
                per_env[i].append(obs[i])
    with fastvec.make("CartPole-v1", n, batch_size=b, seed=5) as env:
        env.async_reset()
        handle, recv, send, _ = env.xla()

        def body(h, _):
            h, (obs, _, _, _, info) = recv(h)
            h = send(h, (obs[:, 2] > 0).astype(jnp.int32), info["env_id"])
            return h, (obs, info["env_id"])

        handle, (obs, ids) = jax.jit(lambda h: jax.lax.scan(body, h, None, length=2 * t))(handle)
        seen = [0] * n
        for o, i in zip(np.asarray(obs).reshape(-1, 4), np.asarray(ids).reshape(-1), strict=True):
            np.testing.assert_array_equal(o, per_env[i][seen[i]])
            seen[i] += 1
        assert sum(seen) == 2 * t * b


def test_envpool_xla_has_envpools_info_and_the_python_steps_values():
    n, t = 3, 50
    actions = np.random.default_rng(1).integers(0, 2, size=(t, n))
    ref = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n, seed=7)
    env = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n, seed=7)
    try:
        ref.reset()
        env.reset()
        handle, _, _, step = env.xla()
        handle, (obs, reward, term, trunc, info) = scan_steps(step, handle, jnp.asarray(actions))
        assert set(info) == {"env_id", "players", "elapsed_step"} and set(info["players"]) == {"env_id"}
        for k, (o, _, _, _, i) in enumerate(python_steps(ref, actions)):
            np.testing.assert_array_equal(np.asarray(obs[k]), o)
            np.testing.assert_array_equal(np.asarray(info["elapsed_step"][k]), i["elapsed_step"])
            np.testing.assert_array_equal(np.asarray(info["players"]["env_id"][k]), i["players"]["env_id"])
    finally:
        ref.close()
        env.close()


def test_dm_xla_gives_the_timesteps_of_the_python_loop():
    n, t = 3, 60
    actions = np.random.default_rng(3).integers(0, 2, size=(t, n))
    ref = envpool.make("CartPole-v1", env_type="dm", num_envs=n, seed=2)
    env = envpool.make("CartPole-v1", env_type="dm", num_envs=n, seed=2)
    try:
        ref.reset()
        env.reset()
        handle, _, _, step = env.xla()
        handle, ts = scan_steps(step, handle, jnp.asarray(actions))
        assert type(ts).__name__ == "TimeStep" and set(ts.observation._fields) == {"env_id", "players", "obs"}
        for k, expected in enumerate(python_steps(ref, actions)):
            np.testing.assert_array_equal(np.asarray(ts.step_type[k]), expected.step_type)
            np.testing.assert_array_equal(np.asarray(ts.discount[k]), expected.discount)
            np.testing.assert_array_equal(np.asarray(ts.reward[k]), expected.reward)
            np.testing.assert_array_equal(np.asarray(ts.observation.obs[k]), expected.observation.obs)
            np.testing.assert_array_equal(
                np.asarray(ts.observation.players.env_id[k]), expected.observation.players.env_id
            )
        assert (np.asarray(ts.step_type) == 2).any() and (np.asarray(ts.step_type) == 0).any()
    finally:
        ref.close()
        env.close()


@pytest.mark.mujoco
@pytest.mark.parametrize("x64", [False, True])
def test_float64_envs_come_as_jax_has_them_with_or_without_x64(x64):
    """Hopper's float64 observations, rewards, actions and info values: float32 in jax's default mode (converted
    by the handlers), float64 with x64; the values the Python loop gives, in that dtype."""
    n, t = 3, 80
    actions = np.random.default_rng(0).uniform(-1, 1, size=(t, n, 3)).astype(np.float32)
    with fastvec.make("Hopper-v5", n, seed=1) as ref, fastvec.make("Hopper-v5", n, seed=1) as env:
        ref.reset()
        env.reset()
        with jax.enable_x64(x64):
            handle, _, _, step = env.xla()
            handle, (obs, reward, terminated, _, info) = scan_steps(step, handle, jnp.asarray(actions))
        dtype = np.float64 if x64 else np.float32
        assert obs.dtype == reward.dtype == info["x_position"].dtype == dtype
        for k, (o, r, term, _, i) in enumerate(python_steps(ref, actions)):
            np.testing.assert_array_equal(np.asarray(obs[k]), o.astype(dtype))
            np.testing.assert_array_equal(np.asarray(reward[k]), r.astype(dtype))
            np.testing.assert_array_equal(np.asarray(terminated[k]), term)
            np.testing.assert_array_equal(np.asarray(info["x_position"][k]), i["x_position"].astype(dtype))
            np.testing.assert_array_equal(np.asarray(info["_x_position"][k]), i["_x_position"])
        assert np.asarray(terminated).any()


@pytest.mark.atari
@pytest.mark.slow
def test_cleanrl_style_scan_on_pong_gives_the_python_loops_trajectories():
    """What ppo_atari_envpool_xla_jax_scan.py does with envs.xla(), on fastvec.envpool.legacy's Pong."""
    n, t = 2, 40
    kwargs = dict(env_type="gym", num_envs=n, episodic_life=True, reward_clip=True, seed=1)
    actions = np.random.default_rng(2).integers(0, 6, size=(t, n))
    ref, env = legacy.make("Pong-v5", **kwargs), legacy.make("Pong-v5", **kwargs)
    try:
        ref.reset()
        env.reset()
        handle, _, _, step_env = env.xla()

        def step_once(carry, a):
            returns, h = carry
            h, (next_obs, reward, next_done, info) = step_env(h, a)
            returns = (returns + info["reward"]) * (1 - info["terminated"]) * (1 - info["TimeLimit.truncated"])
            return (returns, h), (next_obs, reward, next_done, info["lives"])

        (_, handle), (obs, reward, done, lives) = jax.jit(lambda c, a: jax.lax.scan(step_once, c, a))(
            (jnp.zeros(n, jnp.float32), handle), jnp.asarray(actions)
        )
        assert obs.shape == (t, n, 4, 84, 84) and obs.dtype == jnp.uint8
        for k, (o, r, d, i) in enumerate(python_steps(ref, actions)):
            np.testing.assert_array_equal(np.asarray(obs[k]), o, err_msg=f"step {k}")
            np.testing.assert_array_equal(np.asarray(reward[k]), r)
            np.testing.assert_array_equal(np.asarray(done[k]), d)
            np.testing.assert_array_equal(np.asarray(lives[k]), i["lives"])
    finally:
        ref.close()
        env.close()


# -- bad use ---------------------------------------------------------------------------------------------------


@pytest.fixture
def cartpole():
    with fastvec.make("CartPole-v1", 4, seed=0) as env:
        env.reset()
        yield env


def test_wrong_actions_are_refused_when_traced(cartpole):
    handle, _, send, step = cartpole.xla()
    with pytest.raises(ValueError, match=r"actions must have shape \(4,\), got \(3,\)"):
        jax.jit(step)(handle, jnp.zeros(3, jnp.int32))
    with pytest.raises(TypeError, match="must be integers, got dtype float32"):
        jax.jit(step)(handle, jnp.zeros(4, jnp.float32))
    with pytest.raises(TypeError, match="handle must be the"):
        step(jnp.zeros(4, jnp.uint8), jnp.zeros(4, jnp.int32))
    with pytest.raises(ValueError, match=r"env_id must name batch_size \(4\) envs"):
        send(handle, jnp.zeros(4, jnp.int32), jnp.arange(2))
    handle, (obs, *_) = jax.jit(step)(handle, jnp.zeros(4, jnp.int32))  # the pool is untouched: steps on
    assert obs.shape == (4, 4)


def test_out_of_range_actions_are_an_error_and_the_handle_stays_current(cartpole):
    handle, _, _, step = cartpole.xla()
    jstep = jax.jit(step)
    with pytest.raises(JaxRuntimeError, match=r"actions\[1\] = 2 is out of range for Discrete\(2\)"):
        jax.block_until_ready(jstep(handle, jnp.array([0, 2, 0, 0])))
    handle, (obs, *_) = jstep(handle, jnp.array([0, 1, 0, 1]))
    assert np.isfinite(np.asarray(obs)).all()


def test_a_stale_handle_or_another_pools_handle_is_an_error(cartpole):
    first, _, _, step = cartpole.xla()
    jstep = jax.jit(step)
    handle, _ = jstep(first, jnp.zeros(4, jnp.int32))
    with pytest.raises(JaxRuntimeError, match="stale handle: it was already used"):
        jax.block_until_ready(jstep(first, jnp.zeros(4, jnp.int32)))
    handle, _ = jstep(handle, jnp.zeros(4, jnp.int32))  # the current one still works
    assert np.array_equal(np.asarray(cartpole.xla().handle), np.asarray(handle))  # xla() gives the current one
    with fastvec.make("CartPole-v1", 4, seed=0) as other:
        other.reset()
        other_handle = other.xla().handle
        with pytest.raises(JaxRuntimeError, match="belongs to another pool"):
            jax.block_until_ready(jstep(other_handle, jnp.zeros(4, jnp.int32)))


def test_a_closed_pool_is_an_error_not_a_crash():
    env = fastvec.make("CartPole-v1", 4, seed=0)
    env.reset()
    handle, _, _, step = env.xla()
    jstep = jax.jit(step)
    handle, _ = jstep(handle, jnp.zeros(4, jnp.int32))
    env.close()
    with pytest.raises(JaxRuntimeError, match="the pool is closed"):
        jax.block_until_ready(jstep(handle, jnp.zeros(4, jnp.int32)))
    del env  # the pool's memory goes; its handle still finds nothing to step
    with pytest.raises(JaxRuntimeError, match="the pool is closed"):
        jax.block_until_ready(jstep(handle, jnp.zeros(4, jnp.int32)))
    with pytest.raises(fastvec.vector.ClosedError):
        closed = fastvec.make("CartPole-v1", 2)
        closed.close()
        closed.xla()


def test_an_envs_exception_is_an_error_naming_it_and_the_pool_goes_on():
    with fastvec.make("_Debug-v0", 2, seed=0, throw_at_step=3) as env:
        env.reset()
        handle, _, _, step = env.xla()
        with pytest.raises(JaxRuntimeError, match=r"an env raised \(env \d\)"):
            jax.block_until_ready(scan_steps(step, handle, jnp.zeros((5, 2), jnp.int32)))
        env.reset()
        handle = env.xla().handle  # (the scan's last handle never came back: xla() gives the current one)
        handle, (obs, *_) = jax.jit(step)(handle, jnp.zeros(2, jnp.int32))
        np.testing.assert_array_equal(np.asarray(obs)[:, 0], [1, 1])


def test_closing_the_pool_under_a_waiting_jitted_call_ends_it_with_an_error():
    """close() from another thread while a jitted step waits for slow envs: the call ends with "closed" (or,
    if close came first, is refused so), and nothing hangs."""
    env = fastvec.make("_Debug-v0", 2, batch_size=1, num_threads=2, block_size=1, seed=0, sleep_us=2e6)
    env.async_reset()
    handle, recv, send, _ = env.xla()
    handle, _ = jax.jit(recv)(handle)
    handle, (obs, _, _, _, info) = jax.jit(recv)(handle)  # both envs' resets received: nothing in flight
    jsend_recv = jax.jit(lambda h, a, i: recv(send(h, a, i)))
    jsend_recv.lower(handle, jnp.zeros(1, jnp.int32), info["env_id"]).compile()
    errors = []

    def call():
        try:
            jax.block_until_ready(jsend_recv(handle, jnp.zeros(1, jnp.int32), info["env_id"]))
        except JaxRuntimeError as e:
            errors.append(str(e))

    import threading

    thread = threading.Thread(target=call)
    thread.start()
    env.close()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(errors) == 1 and "the pool is closed" in errors[0]


@pytest.mark.parametrize("make", [legacy.make_gym, envpool.make_gymnasium, envpool.make_dm])
def test_the_calls_hold_no_reference_to_the_env(make):
    """As a Python step function would not: dropping the env closes its pool, and its calls then say so."""
    import gc
    import weakref

    env = make("CartPole-v1", num_envs=2, seed=0)
    env.reset()
    handle, _, _, step = env.xla()
    handle, _ = jax.jit(step)(handle, jnp.zeros(2, jnp.int32))
    dropped = weakref.ref(env)
    del env
    gc.collect()
    assert dropped() is None
    with pytest.raises(JaxRuntimeError, match="the pool is closed"):
        jax.block_until_ready(jax.jit(step)(handle, jnp.zeros(2, jnp.int32)))


def test_a_step_before_reset_is_an_error_and_the_pool_goes_on():
    with fastvec.make("CartPole-v1", 2, seed=0) as env:
        handle, _, _, step = env.xla()
        with pytest.raises(JaxRuntimeError, match="has not been reset"):
            jax.block_until_ready(jax.jit(step)(handle, jnp.zeros(2, jnp.int32)))
        env.reset()
        handle, (obs, *_) = jax.jit(step)(handle, jnp.zeros(2, jnp.int32))
        assert obs.shape == (2, 4)


def test_async_send_needs_env_id():
    with fastvec.make("CartPole-v1", 4, batch_size=2, seed=0) as env:
        env.async_reset()
        handle, recv, send, _ = env.xla()
        with pytest.raises(ValueError, match="without env_id"):
            send(handle, jnp.zeros(2, jnp.int32))


def test_what_xla_cannot_step_is_refused():
    with (
        fastvec.make("CartPole-v1", 2, autoreset_mode="same_step") as env,
        pytest.raises(ValueError, match="next_step"),
    ):
        env.xla()
    with fastvec.make("CartPole-v1", 2, backend="python") as env, pytest.raises(TypeError, match="native envs only"):
        env.xla()


def test_without_jax_xla_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    with fastvec.make("CartPole-v1", 2) as env, pytest.raises(ImportError, match=r"pip install 'fastvec\[xla\]'"):
        env.xla()


# -- learning ----------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_cleanrl_style_jitted_ppo_rollout_learns_cartpole():
    """PPO as CleanRL's ppo_atari_envpool_xla_jax_scan.py does it (the rollout a jitted lax.scan over
    envs.xla()'s step, episode returns tracked in the scan's carry), with a small MLP: 120 updates of 1024 steps
    (a few seconds, once compiled) raise the mean return of the episodes that end from a random policy's (about
    22) to over 100."""
    n, steps, updates, epochs, minibatches = 16, 64, 120, 4, 4
    env = legacy.make("CartPole-v1", env_type="gym", num_envs=n, seed=0)
    key = jax.random.PRNGKey(0)

    def dense(k, i, o, scale):
        return {"w": jax.nn.initializers.orthogonal(scale)(k, (i, o)), "b": jnp.zeros(o)}

    keys = jax.random.split(key, 5)
    params = {
        "h1": dense(keys[0], 4, 64, np.sqrt(2)),
        "h2": dense(keys[1], 64, 64, np.sqrt(2)),
        "pi": dense(keys[2], 64, 2, 0.01),
        "v": dense(keys[3], 64, 1, 1.0),
    }

    def forward(p, x):
        h = jnp.tanh(x @ p["h1"]["w"] + p["h1"]["b"])
        h = jnp.tanh(h @ p["h2"]["w"] + p["h2"]["b"])
        return h @ p["pi"]["w"] + p["pi"]["b"], (h @ p["v"]["w"] + p["v"]["b"])[:, 0]

    def rollout(params, obs, done, ep, key, handle):
        def step_once(carry, _):
            obs, done, ep, key, handle = carry
            logits, value = forward(params, obs)
            key, sub = jax.random.split(key)
            action = jax.random.categorical(sub, logits)
            logp = jax.nn.log_softmax(logits)[jnp.arange(n), action]
            handle, (next_obs, reward, next_done, info) = step_env(handle, action)
            ret = ep + info["reward"] if "reward" in info else ep + reward
            finished = jnp.where(next_done, ret, jnp.nan)
            ep = ret * (1 - next_done)
            return (next_obs, next_done, ep, key, handle), (obs, action, logp, value, reward, done, finished)

        return jax.lax.scan(step_once, (obs, done, ep, key, handle), None, length=steps)

    def loss(params, obs, action, logp, adv, ret):
        logits, value = forward(params, obs)
        new_logp = jax.nn.log_softmax(logits)[jnp.arange(len(action)), action]
        ratio = jnp.exp(new_logp - logp)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg = jnp.maximum(-adv * ratio, -adv * jnp.clip(ratio, 0.8, 1.2)).mean()
        entropy = -(jax.nn.softmax(logits) * jax.nn.log_softmax(logits)).sum(-1).mean()
        return pg + 0.5 * ((value - ret) ** 2).mean() - 0.01 * entropy

    @jax.jit
    def update(params, opt, carry):
        (obs, done, ep, key, handle), (b_obs, b_act, b_logp, b_val, b_rew, b_done, finished) = rollout(params, *carry)
        _, next_value = forward(params, obs)
        values = jnp.concatenate([b_val, next_value[None]])
        dones = jnp.concatenate([b_done[1:], done[None]])

        def gae(a, x):
            d, v, v_next, r = x
            a = r + 0.99 * v_next * (1 - d) - v + 0.99 * 0.95 * (1 - d) * a
            return a, a

        _, adv = jax.lax.scan(gae, jnp.zeros(n), (dones, values[:-1], values[1:], b_rew), reverse=True)
        flat = [x.reshape(steps * n, *x.shape[2:]) for x in (b_obs, b_act, b_logp, adv, adv + b_val)]
        key, sub = jax.random.split(key)
        order = jnp.concatenate([jax.random.permutation(k, steps * n) for k in jax.random.split(sub, epochs)])
        batches = [x[order].reshape(epochs * minibatches, -1, *x.shape[1:]) for x in flat]

        def adam(state, batch):  # (Adam by hand: no optax needed)
            params, m, v, t = state
            grads = jax.grad(loss)(params, *batch)
            t = t + 1
            m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, grads)
            v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, v, grads)
            c1, c2 = 1 - 0.9**t, 1 - 0.999**t
            params = jax.tree.map(lambda p, m, v: p - 2.5e-3 * (m / c1) / (jnp.sqrt(v / c2) + 1e-5), params, m, v)
            return (params, m, v, t), None

        (params, m, v, t), _ = jax.lax.scan(adam, (params, *opt), batches)
        opt = (m, v, t)
        return params, opt, (obs, done, ep, key, handle), finished

    try:
        handle, _, _, step_env = env.xla()
        obs = jnp.asarray(env.reset())
        zeros = jax.tree.map(jnp.zeros_like, params)
        opt = (zeros, zeros, jnp.zeros((), jnp.int32))
        carry = (obs, jnp.zeros(n, bool), jnp.zeros(n, jnp.float32), keys[4], handle)
        returns = []
        for _ in range(updates):
            params, opt, carry, finished = update(params, opt, carry)
            returns.append(np.asarray(finished))
        first = np.nanmean(np.concatenate([r.ravel() for r in returns[:5]]))
        last = np.nanmean(np.concatenate([r.ravel() for r in returns[-20:]]))
        assert first < 40 and last > 100, (first, last)
    finally:
        env.close()


def test_a_build_without_xla_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(fastvec._core, "has_xla", False)
    with fastvec.make("CartPole-v1", 2) as env, pytest.raises(ImportError, match="this build of fastvec has no xla"):
        env.xla()


def test_a_gpu_backend_is_refused_as_cpu_only_for_now(monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    with fastvec.make("CartPole-v1", 2) as env, pytest.raises(RuntimeError, match="CPU backend only for now"):
        env.xla()


def test_cleanrl_xla_scripts_env_setup_is_taken():
    """What ppo_atari_envpool_xla_jax*.py do to the env before xla(): set num_envs, the single spaces and
    is_vector_env (EnvPool 0.6-0.8 took these; 1.2.5 has no setter for is_vector_env or num_envs), check the gym
    space; then reset() after xla(), and step. A value the pool does not have is refused."""
    import gym

    envs = legacy.make("CartPole-v1", env_type="gym", num_envs=2, seed=1)
    try:
        envs.num_envs = 2
        envs.single_action_space = envs.action_space
        envs.single_observation_space = envs.observation_space
        envs.is_vector_env = True
        assert isinstance(envs.single_action_space, gym.spaces.Discrete) and envs.is_vector_env is True
        handle, _, _, step_env = envs.xla()
        next_obs = envs.reset()  # (the scripts reset after xla(): the handle stays current)
        handle, (obs, reward, done, info) = jax.jit(step_env)(handle, jnp.zeros(2, jnp.int32))
        assert obs.shape == next_obs.shape == (2, 4) and set(info) >= {"TimeLimit.truncated", "elapsed_step"}
        with pytest.raises(ValueError, match="is_vector_env is True for this pool and cannot change, got False"):
            envs.is_vector_env = False
    finally:
        envs.close()


# -- CleanRL's episode statistics ---------------------------------------------------------------------------------


def cleanrl_rollout(step_env, num_envs, num_steps, scan):
    """The rollout of CleanRL's ppo_atari_envpool_xla_jax.py (``scan=False``: a Python loop unrolled in the jitted
    function) or ppo_atari_envpool_xla_jax_scan.py (``scan=True``: lax.scan), its episode statistics kept in JAX
    from the info of EnvPool 0.6-0.8's xla step as those scripts keep them, and actions drawn inside the jitted
    function. Returns the jitted ``rollout(stats, handle, key) -> (stats, handle, key, actions)``."""

    def step_with_stats(stats, handle, action):
        returns, lengths, last_returns, last_lengths = stats
        handle, (next_obs, reward, next_done, info) = step_env(handle, action)
        new_returns, new_lengths = returns + info["reward"], lengths + 1
        kept = (1 - info["terminated"]) * (1 - info["TimeLimit.truncated"])  # (int32 and bool, as EnvPool's)
        ended = info["terminated"] + info["TimeLimit.truncated"]
        stats = (
            new_returns * kept,
            new_lengths * kept,
            jnp.where(ended, new_returns, last_returns),
            jnp.where(ended, new_lengths, last_lengths),
        )
        return stats, handle, next_done

    def choose(key):
        key, sub = jax.random.split(key)
        return key, jax.random.randint(sub, (num_envs,), 0, 4)

    def rollout_loop(stats, handle, key):
        actions = []
        for _ in range(num_steps):
            key, action = choose(key)
            stats, handle, _ = step_with_stats(stats, handle, action)
            actions.append(action)
        return stats, handle, key, jnp.stack(actions)

    def rollout_scan(stats, handle, key):
        def step_once(carry, _):
            stats, handle, key = carry
            key, action = choose(key)
            stats, handle, _ = step_with_stats(stats, handle, action)
            return (stats, handle, key), action

        (stats, handle, key), actions = jax.lax.scan(step_once, (stats, handle, key), (), num_steps)
        return stats, handle, key, actions

    return jax.jit(rollout_scan if scan else rollout_loop)


@pytest.mark.atari
@pytest.mark.parametrize("scan", [False, True], ids=["loop", "scan"])
def test_cleanrl_episode_statistics_from_xla_info_equal_the_python_loops(scan):
    """CleanRL's xla PPO scripts on fastvec.envpool.legacy (CleanRL's Breakout-v5 settings; a short time limit so
    that episodes end both ways within the budget): the returns and lengths of the last ended episodes that their
    jitted rollouts compute from info["reward"], info["terminated"] and info["TimeLimit.truncated"], after each
    rollout, equal those a Python loop computes from the same actions on a pool made the same way."""
    n, num_steps, iterations = 2, 24, 12
    kwargs = dict(env_type="gym", num_envs=n, episodic_life=True, reward_clip=True, seed=1, max_episode_steps=40)
    env, ref = legacy.make("Breakout-v5", **kwargs), legacy.make("Breakout-v5", **kwargs)
    try:
        env.reset()
        ref.reset()
        handle, _, _, step_env = env.xla()
        rollout = cleanrl_rollout(step_env, n, num_steps, scan)
        stats = (jnp.zeros(n, jnp.float32), jnp.zeros(n, jnp.int32), jnp.zeros(n, jnp.float32), jnp.zeros(n, jnp.int32))
        key = jax.random.PRNGKey(1)
        returns, lengths = np.zeros(n), np.zeros(n, np.int64)  # the Python loop's: the episodes running
        last_returns, last_lengths = np.zeros(n), np.zeros(n, np.int64)  # and the last ended
        game_overs = truncations = 0
        for _ in range(iterations):
            stats, handle, key, actions = rollout(stats, handle, key)
            for a in np.asarray(actions):
                _, _, _, info = ref.step(a)
                for i in range(n):
                    returns[i] += info["reward"][i]
                    lengths[i] += 1
                    if info["terminated"][i] or info["TimeLimit.truncated"][i]:
                        last_returns[i], last_lengths[i] = returns[i], lengths[i]
                        returns[i], lengths[i] = 0, 0
                        game_overs += int(info["terminated"][i])
                        truncations += int(info["TimeLimit.truncated"][i])
            np.testing.assert_array_equal(np.asarray(stats[0]), returns)
            np.testing.assert_array_equal(np.asarray(stats[1]), lengths)
            np.testing.assert_array_equal(np.asarray(stats[2]), last_returns)
            np.testing.assert_array_equal(np.asarray(stats[3]), last_lengths)
        assert game_overs > 0 and truncations > 0, (game_overs, truncations)  # both ways of ending went through
        assert last_returns.max() > 0  # (points were scored: the returns compared are not all zero)
    finally:
        env.close()
        ref.close()
