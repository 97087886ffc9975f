"""Multi-agent envs (PettingZoo ParallelEnv and AEC envs, RLlib MultiAgentEnv, MPE ids) stepped by fastvec's pools.

>>> env = fastvec.make(lambda: mpe2.simple_spread_v3.parallel_env(), 8, seed=0)   # a MultiAgentVectorEnv
>>> obs, infos = env.reset()
>>> obs, rewards, terminations, truncations, infos = env.step({a: actions[a] for a in env.possible_agents})

:class:`MultiAgentVectorEnv` (:mod:`fastvec.multiagent.vector`) is the façade over a plain ``fastvec.VectorEnv``
and a rows translator (:mod:`fastvec.multiagent.rows`); the Python-env pool steps each env wrapped as one
gymnasium env (:mod:`fastvec.multiagent.as_one_env`); :mod:`fastvec.multiagent.routing` is ``fastvec.make``'s
part, and :func:`make` is ``fastvec.make`` typed as returning a :class:`MultiAgentVectorEnv`.
"""

from fastvec.multiagent.routing import make
from fastvec.multiagent.rows import AgentRows, PyPoolRows, RowsTranslator
from fastvec.multiagent.vector import MultiAgentVectorEnv

__all__ = ["AgentRows", "MultiAgentVectorEnv", "PyPoolRows", "RowsTranslator", "make"]
