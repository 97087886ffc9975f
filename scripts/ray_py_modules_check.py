"""Checks docs/guides/rllib.md's recipe for Ray clusters (CI's wheel stage): ``python ray_py_modules_check.py WHEEL``.

Run by a Python that has Ray but not fastvec, outside the source tree. Starts a local two-node Ray cluster (the head
and one more node, each its own raylet), connects with ``runtime_env={"py_modules": [WHEEL]}`` as the recipe does,
and runs a task on the second node that makes and steps a fastvec pool; asserts that the task ran there and that the
fastvec it imported is the one Ray installed from the wheel into the job's runtime env.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import ray
from ray.cluster_utils import Cluster


@ray.remote(resources={"second_node": 1})
def step_cartpole() -> dict:
    import gymnasium
    import numpy as np

    import fastvec

    with fastvec.make("CartPole-v1", num_envs=4, num_threads=1, seed=0) as env:
        obs, _ = env.reset(seed=0)
        for _ in range(10):
            obs, rew, *_ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and np.isin(rew, (0.0, 1.0)).all()
    return {
        "node_id": ray.get_runtime_context().get_node_id(),
        "fastvec": fastvec._core.__file__,
        "gymnasium": f"{gymnasium.__version__} from {gymnasium.__file__}",
        "obs_shape": obs.shape,
    }


def main(wheel: str) -> None:
    wheel_path = Path(wheel).resolve()
    assert wheel_path.suffix == ".whl" and wheel_path.is_file(), f"not a wheel: {wheel}"
    assert importlib.util.find_spec("fastvec") is None, "the driver can import fastvec: the check would prove nothing"
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1, resources={"second_node": 1})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, runtime_env={"py_modules": [str(wheel_path)]})
        nodes = {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}
        got = ray.get(step_cartpole.remote(), timeout=600)
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(got)
    assert len(nodes) == 2, f"expected two nodes: {nodes}"
    assert "second_node" in nodes[got["node_id"]], f"the task ran on the head node: {got['node_id']} of {nodes}"
    # Ray installs a wheel in py_modules with pip install --target into <session>/runtime_resources/py_modules_files
    assert "/runtime_resources/py_modules_files/" in got["fastvec"], f"fastvec imported from {got['fastvec']}"
    assert got["obs_shape"] == (4, 4), got


if __name__ == "__main__":
    main(*sys.argv[1:])
