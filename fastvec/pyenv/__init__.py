"""The pool for Python gymnasium envs: worker processes exchanging batches through shared memory.

>>> env = fastvec.make(lambda: gymnasium.make("CartPole-v1"), num_envs=8, seed=0)
>>> obs, info = env.reset()
"""

from fastvec.pyenv.pool import EnvError, PyVectorEnv, WorkerDiedError, make

__all__ = ["EnvError", "PyVectorEnv", "WorkerDiedError", "make"]
