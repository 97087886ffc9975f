"""A multi-agent env as ONE gymnasium env, so that the Python-env pool steps it unchanged in its workers.

:class:`AsOneEnv` wraps a PettingZoo ``ParallelEnv`` (an AEC env goes through PettingZoo's ``aec_to_parallel``
first) or an RLlib ``MultiAgentEnv``. Its observation is a Dict that carries everything per agent, so that it
travels in the pool's shared memory and nothing per agent is pickled on the hot path::

    Dict({"obs": Dict(agent -> that agent's observation space),
          "rewards": Box(float64, (A,)), "returns": Box(float64, (A,)),
          "terminations": MultiBinary(A), "truncations": MultiBinary(A), "active": MultiBinary(A)})

with the A agents in sorted order (the Dict's). ``active``: the agent has an observation in this result (the keys
of the env's observation dict); an agent with none has zeros in ``obs``. ``returns``: each agent's return so far
in this episode (the per-agent episode statistics). Its action space is ``Dict(agent -> action space)``: every
agent gets a row, and the wrapper passes the env only the actions of the agents due to act. Its reward is the sum
over agents, and ``terminated``/``truncated`` say that the episode is over (no agent left: PettingZoo's
``env.agents`` empty, RLlib's ``"__all__"``), so the pool autoresets, truncates and counts as for any env. Its
info holds the agents' non-empty info dicts (and RLlib's ``"__common__"``).

Every dict of the env is walked here, in the worker process. Each step checks what the parent cannot see: an
agent id outside ``possible_agents``, an agent whose spaces changed between resets, an agent the env lists as
alive that had no observation (so was given no action). The exceptions name the env's class and the agent; the
pool re-raises them in the parent with a note naming the env id.

:class:`Maker` wraps an env constructor for the pool: in the worker it calls it and wraps what it returns when it
is multi-agent (detected by duck typing, RLlib's class only if ``ray`` is imported already: a PettingZoo user never
imports ray), and passes a gymnasium env through as it is. The parent learns that the envs are multi-agent from
the metadata the workers report (:data:`MARKER`), without making an env of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from fastvec.multiagent.aec_step import parallel_stepper

MARKER = "fastvec.multiagent"  #: metadata key of an AsOneEnv: its possible_agents (the parent's sign of one)

PARALLEL, RLLIB = "parallel", "rllib"
# The env-call name under which an AsOneEnv answers the agents it will give actions to next step (None: not reset),
# which the parent asks for when a step's results were lost to another env's exception.
ACTING = "__fastvec_acting__"


def multiagent_kind(env: Any) -> str | None:
    """``"rllib"`` for an RLlib MultiAgentEnv, ``"aec"`` for a PettingZoo AEC env, ``"parallel"`` for a PettingZoo
    ParallelEnv (or anything with its methods), None for anything else (a gymnasium env)."""
    module = sys.modules.get("ray.rllib.env.multi_agent_env")  # an instance's class was imported with its module
    if module is not None and isinstance(env, module.MultiAgentEnv):
        return RLLIB
    if isinstance(env, gym.Env) or not hasattr(env, "possible_agents"):
        return None
    if callable(getattr(env, "agent_iter", None)) and callable(getattr(env, "last", None)):
        return "aec"
    if callable(getattr(env, "step", None)) and callable(getattr(env, "observation_space", None)):
        return PARALLEL
    return None


class Maker:
    """An env constructor for the Python-env pool that makes its env ONE gymnasium env when it is multi-agent (a
    gymnasium env is returned as it is)."""

    def __init__(self, env_fn: Callable[[], Any]) -> None:
        self.env_fn = env_fn

    def __call__(self) -> Any:
        env = self.env_fn()
        kind = multiagent_kind(env)
        if kind is None:
            return env
        if kind == "aec":
            from pettingzoo.utils.conversions import aec_to_parallel

            if not (getattr(env, "metadata", None) or {}).get("is_parallelizable", False):
                name = type(getattr(env, "unwrapped", env)).__name__
                raise ValueError(
                    f"{name} is an AEC env whose metadata does not say is_parallelizable: PettingZoo's "
                    "aec_to_parallel, which the pool steps AEC envs through, is safe only for envs whose agents all "
                    "act once per cycle (not turn-based games such as chess or tic-tac-toe)"
                )
            env, kind = aec_to_parallel(env), PARALLEL
        return AsOneEnv(env, kind)


def _zero(space: gym.Space) -> Any:
    """The observation of an agent without one: zeros of its space's structure, shapes and dtypes."""
    if isinstance(space, gym.spaces.Dict):
        return {k: _zero(s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_zero(s) for s in space.spaces)
    if isinstance(space, gym.spaces.Discrete):
        return np.zeros((), dtype=space.dtype)
    return np.zeros(space.shape or (), dtype=space.dtype)


class AsOneEnv(gym.Env):
    """A multi-agent env (``kind``: ``"parallel"`` or ``"rllib"``) as one gymnasium env; see the module's doc."""

    def __init__(self, env: Any, kind: str) -> None:
        self.env = env
        self._rllib = kind == RLLIB
        # PettingZoo's AEC-to-parallel step, done at a fraction of its cost where its wrapper chain is the standard
        self._env_step = (None if self._rllib else parallel_stepper(env)) or env.step
        self._name = type(getattr(env, "unwrapped", env)).__name__
        agents = list(getattr(env, "possible_agents", None) or [])
        if not agents:
            raise ValueError(f"{self._name}: possible_agents is empty or missing; a multi-agent env must list them")
        for a in agents:
            if not isinstance(a, str):
                raise TypeError(f"{self._name}: agent ids must be str, got {type(a).__name__} {a!r}")
        if len(set(agents)) != len(agents):
            raise ValueError(f"{self._name}: possible_agents lists an agent twice: {agents}")
        self.possible_agents = agents
        # An agent's slot in the per-agent vectors: its place among the sorted ids (as the Dict space sorts them), so
        # that envs listing the same agents in another order share one layout, which the pool's spaces check sees.
        self._index = {a: i for i, a in enumerate(sorted(agents))}
        self._obs_spaces = {a: self._space("observation", a) for a in agents}
        self._act_spaces = {a: self._space("action", a) for a in agents}
        n = len(agents)
        self.observation_space = gym.spaces.Dict(
            {
                "obs": gym.spaces.Dict(self._obs_spaces),
                "rewards": gym.spaces.Box(-np.inf, np.inf, (n,), np.float64),
                "returns": gym.spaces.Box(-np.inf, np.inf, (n,), np.float64),
                "terminations": gym.spaces.MultiBinary(n),
                "truncations": gym.spaces.MultiBinary(n),
                "active": gym.spaces.MultiBinary(n),
            }
        )
        self.action_space = gym.spaces.Dict(self._act_spaces)
        self.metadata = {**dict(getattr(env, "metadata", None) or {}), MARKER: list(agents)}
        self.render_mode = getattr(env, "render_mode", None)
        self._zeros = {a: _zero(s) for a, s in self._obs_spaces.items()}
        self._returns = np.zeros(n)
        self._acting: list[str] | None = None  # the agents given actions next step (None: not reset)

    def _space(self, kind: str, agent: str) -> gym.Space:
        env = self.env
        try:
            if self._rllib:
                space = getattr(env, f"get_{kind}_space")(agent)
            else:
                space = getattr(env, f"{kind}_space")(agent)
        except Exception as exc:
            raise type(exc)(f"{self._name}: the {kind} space of agent {agent!r}: {exc}") from exc
        if not isinstance(space, gym.spaces.Space):
            raise TypeError(f"{self._name}: agent {agent!r} has {kind} space {space!r}, not a gymnasium Space")
        return space

    # -- the gymnasium env ---------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, infos = self.env.reset(seed=seed, options=options)
        self._returns = np.zeros(len(self.possible_agents))
        self._check_spaces(obs)
        out, active = self._pack(obs, {}, {}, {})
        out["returns"] = self._returns.copy()
        self._acting = active
        return out, self._infos(infos)

    def step(self, action: Mapping[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        acting = self._acting
        if acting is None:
            raise RuntimeError(f"{self._name}: step() before reset(); reset the env first")
        if not self._rllib:
            live = self.env.agents
            if len(live) != len(acting) or live != acting:
                known = set(acting)
                for a in live:
                    if a not in known:
                        raise ValueError(
                            f"{self._name}: agent {a!r} is in env.agents but had no observation in the last "
                            "result, so it was given no action (a ParallelEnv returns an observation for every "
                            "live agent)"
                        )
            acting = live
        actions = {a: action[a] for a in acting}
        obs, rewards, terminations, truncations, infos = self._env_step(actions)
        if self._rllib:
            over = bool(terminations.get("__all__") or truncations.get("__all__"))
        else:
            over = not self.env.agents
        out, active = self._pack(obs, rewards, terminations, truncations)
        terms, truncs = out["terminations"], out["truncations"]
        if over:  # every agent with an observation ends with the episode, flagged or not
            unflagged = (out["active"] == 1) & (terms == 0) & (truncs == 0)
            if unflagged.any():
                (terms if self._rllib and terminations.get("__all__") else truncs)[unflagged] = 1
            self._acting = []
        else:
            self._acting = [a for a in active if not (terminations.get(a) or truncations.get(a))]
        self._returns += out["rewards"]
        out["returns"] = self._returns.copy()
        terminated = over and bool(terms.any())
        return out, float(np.add.reduce(out["rewards"])), terminated, over and not terminated, self._infos(infos)

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    # -- env calls reach the multi-agent env, not this wrapper ----------------

    @property
    def unwrapped(self) -> Any:  # type: ignore[override]
        return getattr(self.env, "unwrapped", self.env)

    def get_wrapper_attr(self, name: str) -> Any:
        if name == ACTING:
            return self._acting
        return getattr(self.env, name)

    def has_wrapper_attr(self, name: str) -> bool:
        return hasattr(self.env, name)

    def set_wrapper_attr(self, name: str, value: Any, *, force: bool = True) -> bool:
        setattr(self.env, name, value)
        return True

    # -- helpers ----------------------------------------------------------

    def _agent(self, agent: Any, where: str) -> int:
        i = self._index.get(agent)
        if i is None:
            raise ValueError(
                f"{self._name}: agent {agent!r} (a key of its {where}) is not one of possible_agents "
                f"{self.possible_agents}"
            )
        return i

    def _pack(
        self, obs: Mapping[str, Any], rewards: Mapping[str, Any], terms: Mapping[str, Any], truncs: Mapping[str, Any]
    ) -> tuple[dict[str, Any], list[str]]:
        """The observation of the one env, and the agents with an observation in the env's order (its ``returns``:
        the returns so far, not copied: the caller puts a copy there)."""
        index = self._index
        n = len(index)
        per_agent = dict(self._zeros)
        flags = np.zeros((3, n), np.int8)  # terminations, truncations, active: views of one array
        active_flags = flags[2]
        for a, value in obs.items():
            i = index.get(a)
            active_flags[self._agent(a, "observations") if i is None else i] = 1
            per_agent[a] = value
        reward = np.zeros(n)
        for a, r in rewards.items():
            i = index.get(a)
            reward[self._agent(a, "rewards") if i is None else i] = r
        for f, values, where in ((flags[0], terms, "terminations"), (flags[1], truncs, "truncations")):
            for a, v in values.items():
                if a != "__all__" and v:
                    i = index.get(a)
                    f[self._agent(a, where) if i is None else i] = 1
        out = {
            "obs": per_agent,
            "rewards": reward,
            "returns": self._returns,  # (the caller copies it)
            "terminations": flags[0],
            "truncations": flags[1],
            "active": active_flags,
        }
        return out, list(obs)

    def _infos(self, infos: Mapping[str, Any] | None) -> dict[str, Any]:
        """The agents' non-empty info dicts (and RLlib's ``__common__``), checked."""
        out: dict[str, Any] = {}
        for a, info in (infos or {}).items():
            if not info:
                continue
            if a != "__common__":
                self._agent(a, "infos")
            out[a] = info
        return out

    def _check_spaces(self, obs: Mapping[str, Any]) -> None:
        """An agent's spaces may not change between resets: the pool laid out its shared memory by them."""
        for a in obs:
            self._agent(a, "observations")
            for kind, declared in (("observation", self._obs_spaces), ("action", self._act_spaces)):
                space = self._space(kind, a)
                if space is not declared[a] and space != declared[a]:
                    raise ValueError(
                        f"{self._name}: agent {a!r}'s {kind} space changed after the env was made: {declared[a]} "
                        f"then, {space} at this reset; the pool needs each agent's spaces fixed"
                    )
