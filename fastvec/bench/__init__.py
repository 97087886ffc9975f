"""The benchmark machinery behind ``fastvec bench`` and the scripts in ``benchmarks/``.

- ``runners``: what is stepped, the contenders (fastvec, EnvPool, ale-py, gymnasium, SB3, RLlib, Ray)
  with the same work for each, and the ceiling (one native env in a C++ loop);
- ``measure``: how it is timed (warm-up, chunked timing, interleaved repetitions) and its memory taken;
- ``machine``: the CPU, other processes' load, process trees and their memory, versions, the checkout;
- ``report``: markdown tables, ratios, JSON and plots;
- ``cli``: ``fastvec bench`` itself (``main``).
"""
