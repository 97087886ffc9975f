"""The benchmark machinery behind ``fastvec bench`` and the scripts in ``benchmarks/``.

- ``contenders``: the rows compared (fastvec, EnvPool, ale-py, gymnasium, SB3, RLlib, Ray, the ceiling; on
  multi-agent envs fastvec, SuperSuit, AgileRL and RLlib), each made by one of ``fastvec_runners``,
  ``library_runners``, ``multiagent_runners``, ``ray_runners`` or ``ceiling`` (one native env in a C++ loop),
  some in a process of their own (``own_process``), all doing the same ``work``;
- ``runners``: what is stepped and how one is timed: the Runner (warm-up, chunked timing), its sync and
  async loops;
- ``measure``: interleaved repetitions over several contenders, and their memory taken;
- ``machine``: the CPU, other processes' load, process trees and their memory, versions, the checkout;
- ``report``: markdown tables, ratios, JSON and plots;
- ``cli``: ``fastvec bench`` itself (``main``).
"""
