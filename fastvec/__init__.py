"""fastvec: vectorized RL environments stepped in a C++ thread pool.

>>> import fastvec
>>> env = fastvec.make("CartPole-v1", num_envs=8, seed=0)
>>> obs, info = env.reset()
>>> obs.shape
(8, 4)
"""

from fastvec.adapters import rllib_env, sb3_vec, tianshou_venv
from fastvec.registry import list_envs, register_gymnasium_envs
from fastvec.vector import VectorEnv, make

__all__ = ["VectorEnv", "list_envs", "make", "rllib_env", "sb3_vec", "tianshou_venv"]
__version__ = "0.1.0"

register_gymnasium_envs()
