"""The DeepMind Control Suite's tasks under EnvPool's ids: the one table of which ``dm_control.suite.load(domain,
task)`` an id such as ``WalkerWalk-v1`` names, for the tests and the benchmark (which load dm_control's own env
beside fastvec's).

As in EnvPool's registration, the (domain, task) pairs are the data and the ids are spelled from them, each part
capitalized and joined (``ball_in_cup``, ``catch``: ``BallInCupCatch-v1``); the pairs are EnvPool 1.2.5's 51.
Which of them this fastvec runs is the registry's business (``fastvec.registry.family_ids("dm_control")``).
"""

from __future__ import annotations

import functools

#: dm_control's (domain, task) of every task EnvPool names.
SUITE_TASKS: tuple[tuple[str, str], ...] = (
    ("acrobot", "swingup"),
    ("acrobot", "swingup_sparse"),
    ("ball_in_cup", "catch"),
    ("cartpole", "balance"),
    ("cartpole", "balance_sparse"),
    ("cartpole", "swingup"),
    ("cartpole", "swingup_sparse"),
    ("cheetah", "run"),
    ("hopper", "hop"),
    ("hopper", "stand"),
    ("pendulum", "swingup"),
    ("point_mass", "easy"),
    ("walker", "stand"),
    ("walker", "walk"),
    ("walker", "run"),
    ("humanoid", "stand"),
    ("humanoid", "walk"),
    ("humanoid", "run"),
    ("humanoid", "run_pure_state"),
    ("quadruped", "walk"),
    ("quadruped", "run"),
    ("quadruped", "fetch"),
    ("quadruped", "escape"),
    ("fish", "upright"),
    ("fish", "swim"),
    ("swimmer", "swimmer6"),
    ("swimmer", "swimmer15"),
    ("lqr", "lqr_2_1"),
    ("lqr", "lqr_6_2"),
    ("manipulator", "bring_ball"),
    ("manipulator", "bring_peg"),
    ("manipulator", "insert_ball"),
    ("manipulator", "insert_peg"),
    ("stacker", "stack_2"),
    ("stacker", "stack_4"),
    ("reacher", "easy"),
    ("reacher", "hard"),
    ("finger", "spin"),
    ("finger", "turn_easy"),
    ("finger", "turn_hard"),
    ("point_mass", "hard"),
    ("cartpole", "two_poles"),
    ("cartpole", "three_poles"),
    ("humanoid_CMU", "stand"),
    ("humanoid_CMU", "walk"),
    ("humanoid_CMU", "run"),
    ("dog", "stand"),
    ("dog", "walk"),
    ("dog", "trot"),
    ("dog", "run"),
    ("dog", "fetch"),
)


def envpool_id(domain: str, task: str) -> str:
    """EnvPool's id of the suite's task: ``envpool_id("ball_in_cup", "catch") == "BallInCupCatch-v1"``."""

    def camel(name: str) -> str:
        return "".join(part[:1].upper() + part[1:] for part in name.split("_"))

    return f"{camel(domain)}{camel(task)}-v1"


@functools.cache
def _by_id() -> dict[str, tuple[str, str]]:
    return {envpool_id(domain, task): (domain, task) for domain, task in SUITE_TASKS}


def suite_task(env_id: str) -> tuple[str, str]:
    """The suite's (domain, task) of an EnvPool-style id: ``suite_task("LqrLqr21-v1") == ("lqr", "lqr_2_1")``; a
    ValueError naming ``env_id`` for an id that is not one of the suite's tasks."""
    pair = _by_id().get(env_id.removeprefix("fastvec/"))
    if pair is None:
        raise ValueError(f"env_id {env_id!r} is not a DeepMind Control Suite task under EnvPool's ids")
    return pair
