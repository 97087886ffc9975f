"""The pool for Python gymnasium envs: worker processes exchanging batches through shared memory, the
Python-env backend of :class:`fastvec.VectorEnv`.

>>> env = fastvec.make(lambda: gymnasium.make("CartPole-v1"), num_envs=8, seed=0)
>>> obs, info = env.reset()
"""

from fastvec._core import EnvError
from fastvec.pyenv.pool import PyEnvPool, WorkerDiedError, make

__all__ = ["EnvError", "PyEnvPool", "WorkerDiedError", "make"]
