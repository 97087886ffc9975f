"""Tianshou multi-agent: a vector env of PettingZoo envs with the turns of Tianshou's ``PettingZooEnv``.

>>> from tianshou.env.pettingzoo_env import PettingZooEnv
>>> envs = fastvec.tianshou_ma_venv(lambda: tictactoe_v3.env(), 10, seed=0)
>>> # was DummyVectorEnv([lambda: PettingZooEnv(tictactoe_v3.env())] * 10)
>>> collector = Collector(MultiAgentOffPolicyAlgorithm(algorithms, env=PettingZooEnv(tictactoe_v3.env())), envs)

Tianshou's multi-agent training is turn by turn: each env hands out the observation of the one agent whose
turn it is (``{"agent_id", "obs", "mask"}``), takes that agent's action, and returns every agent's reward as
a vector; ``MultiAgentPolicy`` routes each row to the policy of its ``agent_id``. That is PettingZoo's AEC
protocol, which a turn-based game needs (tic-tac-toe cannot be run as a parallel env: PettingZoo's
``aec_to_parallel`` refuses it). So each env here is one gymnasium env in the Python-env pool whose step is
one turn, exactly as ``PettingZooEnv.step`` takes it; its observation carries the acting agent's index, its
action mask and every agent's reward, and this adapter turns them back into Tianshou's formats. Everything
else (async ``wait_num``, resets of finished envs, seeding, env calls) is :class:`TianshouVectorEnv`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from fastvec._args import autoreset_mode_name
from fastvec.adapters.tianshou import TianshouVectorEnv, _object_array
from fastvec.vector import make


class TurnEnv(gym.Env):
    """One PettingZoo env as a gymnasium env whose step is one agent's turn, as Tianshou's ``PettingZooEnv``
    steps it; runs in a worker of the Python-env pool.

    ``make_env`` returns a PettingZoo ``AECEnv``, a ``ParallelEnv`` (turned into one by PettingZoo's
    ``parallel_to_aec``, as Tianshou's users do) or a Tianshou ``PettingZooEnv`` (whose own ``reset`` and
    ``step`` are then used). The observation is a Dict: ``agent`` (the acting agent's index in
    ``possible_agents``), ``obs`` (its observation), ``rewards`` (every agent's reward, as ``PettingZooEnv``
    returns them) and, for a Discrete action space, ``mask`` (the legal actions: the env's ``action_mask``, or
    all). The gymnasium reward is 0: the rewards travel in the observation.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - replaced by the env's own in __init__

    def __init__(self, make_env: Callable[[], Any]) -> None:
        from pettingzoo.utils.conversions import parallel_to_aec
        from pettingzoo.utils.env import AECEnv, ParallelEnv

        env = make_env()
        if isinstance(env, ParallelEnv):
            env = parallel_to_aec(env)
        if not isinstance(env, AECEnv):
            raise TypeError(
                f"the multi-agent Tianshou adapter takes callables returning a PettingZoo AECEnv or ParallelEnv (or "
                f"Tianshou's PettingZooEnv), got {type(env).__name__}"
            )
        self.turns: Any = env if _is_tianshou_env(env) else _Turns(env)
        self.pz_env = env.env if _is_tianshou_env(env) else env  # the PettingZoo env
        self.possible_agents = list(self.turns.agents)
        obs_space, act_space = self.turns.observation_space, self.turns.action_space
        self.ts_observation_space = obs_space  # PettingZooEnv's observation_space, as Tianshou's venvs give it
        if isinstance(obs_space, gym.spaces.Dict) and "observation" in obs_space.spaces:
            obs_space = obs_space["observation"]
        n = len(self.possible_agents)
        spaces: dict[str, gym.Space] = {
            "agent": gym.spaces.Discrete(n),
            "obs": obs_space,
            "rewards": gym.spaces.Box(-np.inf, np.inf, (n,), np.float64),
        }
        if isinstance(act_space, gym.spaces.Discrete):
            spaces["mask"] = gym.spaces.MultiBinary(int(act_space.n))
        self._masked = "mask" in spaces
        self.observation_space = gym.spaces.Dict(spaces)
        self.action_space = act_space
        self.metadata = dict(getattr(self.pz_env, "metadata", {}))
        self.render_mode = getattr(self.pz_env.unwrapped, "render_mode", None)
        self._index = {a: i for i, a in enumerate(self.possible_agents)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        obs, info = self.turns.reset(seed=seed, options=options)
        return self._encode(obs, [0.0] * len(self.possible_agents)), info

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        obs, rewards, term, trunc, info = self.turns.step(action)
        return self._encode(obs, rewards), 0.0, bool(term), bool(trunc), info

    def render(self) -> Any:
        return self.pz_env.render()

    def close(self) -> None:
        self.pz_env.close()

    def _encode(self, obs: dict[str, Any], rewards: Sequence[float]) -> dict[str, Any]:
        out = {
            "agent": self._index[obs["agent_id"]],
            "obs": obs["obs"],
            "rewards": np.asarray(rewards, dtype=np.float64),
        }
        if self._masked:
            out["mask"] = np.asarray(obs["mask"], dtype=np.int8)
        return out


class _Turns:
    """Tianshou's ``PettingZooEnv`` (tianshou/env/pettingzoo_env.py, 2.0.1): the same reset and step over an
    AEC env, without importing Tianshou (and torch) in every worker."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.agents = list(env.possible_agents)
        self.agent_idx = {a: i for i, a in enumerate(self.agents)}
        self.rewards: list[float] = [0] * len(self.agents)
        self.observation_space = env.observation_space(self.agents[0])
        self.action_space = env.action_space(self.agents[0])
        for kind, space_of, first in (
            ("observation", env.observation_space, self.observation_space),
            ("action", env.action_space, self.action_space),
        ):
            differ = {a: space_of(a) for a in self.agents if space_of(a) != first}
            if differ:
                raise ValueError(
                    f"Tianshou's PettingZooEnv needs every agent's {kind} space equal: agent {self.agents[0]!r} has "
                    f"{first}, but {differ}"
                )

    def reset(self, **kwargs: Any) -> tuple[dict[str, Any], dict]:
        self.env.reset(**kwargs)
        observation, _, _, _, info = self.env.last()
        return self._obs(observation), info

    def step(self, action: Any) -> tuple[dict[str, Any], list[float], bool, bool, dict]:
        self.env.step(action)
        observation, _, term, trunc, info = self.env.last()
        for agent_id, reward in self.env.rewards.items():
            self.rewards[self.agent_idx[agent_id]] = reward
        return self._obs(observation), self.rewards, term, trunc, info

    def _obs(self, observation: Any) -> dict[str, Any]:
        agent = self.env.agent_selection
        if isinstance(observation, dict) and "action_mask" in observation:
            return {"agent_id": agent, "obs": observation["observation"], "mask": observation["action_mask"] == 1}
        if isinstance(self.action_space, gym.spaces.Discrete):
            return {"agent_id": agent, "obs": observation, "mask": [True] * self.env.action_space(agent).n}
        return {"agent_id": agent, "obs": observation}


def _is_tianshou_env(env: Any) -> bool:
    return any(
        c.__name__ == "PettingZooEnv" and c.__module__ == "tianshou.env.pettingzoo_env" for c in type(env).__mro__
    )


class TianshouMultiAgentVectorEnv(TianshouVectorEnv):
    """A Tianshou vector env of PettingZoo envs stepped turn by turn, as ``DummyVectorEnv`` over Tianshou's
    ``PettingZooEnv``; made by :func:`fastvec.tianshou_ma_venv`.

    Observations are an object array of per-env dicts ``{"agent_id", "obs", "mask"}`` (``mask`` for Discrete
    actions), rewards a float64 array ``(n, number of agents)``: every agent's latest reward, as
    ``PettingZooEnv`` reports them. Actions are the acting agent's, one per env.
    """

    def __init__(self, env: Any, wait_num: int | None = None, timeout: float | None = None) -> None:
        super().__init__(env, wait_num=wait_num, timeout=timeout)
        self.agents: list[Any] = env.env_call("get", "possible_agents", env_ids=[0])[0]
        self._ts_space = env.env_call("get", "ts_observation_space", env_ids=[0])[0]
        self._action_spaces = [env.single_action_space] * self.env_num

    @property
    def observation_space(self) -> list[Any]:
        """``PettingZooEnv.observation_space`` of each env (the first agent's space)."""
        return [self._ts_space] * self.env_num

    def seed(self, seed: int | Sequence[int] | None = None) -> list[Any]:
        """Seeds env ``i`` with ``seed + i`` (or ``seed[i]``) and resets it, as Tianshou's venvs seed PettingZooEnvs
        (whose ``seed`` returns None: so does this, per env)."""
        super().seed(seed)
        return [None] * self.env_num

    def reset(
        self, env_id: int | Sequence[int] | np.ndarray | None = None, **kwargs: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        obs, info = super().reset(env_id, **kwargs)
        return self._tianshou_obs(obs)[0], info

    def _translate(self, result: tuple[Any, ...], order: np.ndarray | None):
        obs, _, term, trunc, info = super()._translate(result, order)
        obs, rew = self._tianshou_obs(obs)
        return obs, rew, term, trunc, info

    def _empty(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        obs, _, term, trunc, info = super()._empty()
        return obs, np.empty((0, len(self.agents))), term, trunc, info

    def _tianshou_obs(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pool's per-env observation dicts as PettingZooEnv's, and the rewards they carry."""
        out, rewards = [], []
        for o in obs:
            d = {"agent_id": self.agents[int(o["agent"])], "obs": o["obs"]}
            if "mask" in o:
                d["mask"] = o["mask"].astype(bool)
            out.append(d)
            rewards.append(o["rewards"])
        rew = np.stack(rewards) if rewards else np.empty((0, len(self.agents)))
        return _object_array(out), rew


def tianshou_ma_venv(
    env_fn: Callable[[], Any] | Sequence[Callable[[], Any]],
    num_envs: int | None = None,
    *,
    batch_size: int | None = None,
    timeout: float | None = None,
    **kwargs: Any,
) -> TianshouMultiAgentVectorEnv:
    """A Tianshou vector env of ``num_envs`` PettingZoo envs (a callable returning an ``AECEnv``, a
    ``ParallelEnv`` or Tianshou's ``PettingZooEnv``; or a list of them, one per env), stepped in the Python-env
    pool; takes :func:`fastvec.tianshou_venv`'s arguments (``batch_size=k`` is Tianshou's ``wait_num=k``).

    >>> envs = fastvec.tianshou_ma_venv(lambda: tictactoe_v3.env(), 4, seed=0)
    >>> obs, info = envs.reset()
    >>> obs[0]["agent_id"], obs[0]["mask"].shape
    ('player_1', (9,))
    """
    if isinstance(env_fn, str):
        raise TypeError(
            "env_fn: the multi-agent Tianshou adapter takes a callable returning a PettingZoo env (or a list of "
            f"them), got the id {env_fn!r}"
        )
    if callable(env_fn):
        if num_envs is None:
            raise TypeError("num_envs is needed with one callable (or pass a list of callables, one per env)")
        fns: list[Callable[[], Any]] = [env_fn] * num_envs
    elif isinstance(env_fn, Sequence) and all(callable(f) for f in env_fn):
        if num_envs is not None and num_envs != len(env_fn):
            raise ValueError(f"num_envs ({num_envs}) differs from the number of callables ({len(env_fn)})")
        fns = list(env_fn)
    else:
        raise TypeError(f"env_fn must be a callable or a list of callables, got {type(env_fn).__name__}")
    mode = kwargs.pop("autoreset_mode", "same_step")
    if autoreset_mode_name(mode) != "same_step":
        raise ValueError(f"the Tianshou adapters need autoreset_mode='same_step' (the default), got {mode!r}")
    if kwargs.get("backend", "python") != "python":
        raise ValueError(
            f"backend: the multi-agent Tianshou adapter runs in the Python-env pool, got {kwargs['backend']!r}"
        )
    kwargs.pop("backend", None)
    n = len(fns)
    if batch_size is not None and batch_size >= n:
        batch_size = None
    pool_batch = batch_size if batch_size is not None else (None if n == 1 else n - 1)
    turn_fns = [functools.partial(TurnEnv, f) for f in fns]
    env = make(turn_fns, batch_size=pool_batch, autoreset_mode="same_step", backend="python", **kwargs)
    try:
        return TianshouMultiAgentVectorEnv(env, wait_num=batch_size, timeout=timeout)
    except BaseException:
        env.close()
        raise
