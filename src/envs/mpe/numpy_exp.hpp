#pragma once
// np.exp of one float64 as this process's numpy computes it: numpy's own float64 loop, whose kernel numpy
// picks by CPU when it loads (on AVX-512 CPUs SVML's, which differs from libm's exp in the last bit for about
// 5% of arguments). fastvec hands that loop over when it is imported (fastvec/_numpy_loops.py, through
// _core.set_numpy_exp); until then, and where it cannot be found, libm's exp.

#include <atomic>
#include <cmath>
#include <cstdint>

namespace fastvec::envs::mpe {

// numpy's PyUFuncGenericFunction: (args, dimensions, steps, data).
using NumpyLoop = void (*)(char**, const intptr_t*, const intptr_t*, void*);

// Set once at import, before any pool exists; read by the pools' workers.
inline std::atomic<NumpyLoop> numpy_exp_loop{nullptr};
inline std::atomic<void*> numpy_exp_data{nullptr};

inline double numpy_exp(double x) {
  const NumpyLoop loop = numpy_exp_loop.load(std::memory_order_relaxed);
  if (loop == nullptr) return std::exp(x);
  // In place, as np.exp(a, out=a): numpy 1.26's loop takes an output a few bytes past its input (two locals
  // side by side) for an overlap and falls back to libm's exp, which numpy's own calls on arrays never do.
  char* args[2] = {reinterpret_cast<char*>(&x), reinterpret_cast<char*>(&x)};
  const intptr_t n = 1;
  const intptr_t steps[2] = {sizeof(double), sizeof(double)};
  loop(args, &n, steps, numpy_exp_data.load(std::memory_order_relaxed));
  return x;
}

// simple_tag's and simple_world_comm's bound(x): a good agent's penalty for being x out on an axis (leaving the
// screen): 0 below 0.9, linear to 1, then min(np.exp(2 * x - 2), 10).
inline double screen_penalty(double x) {
  if (x < 0.9) return 0;
  if (x < 1.0) return (x - 0.9) * 10;
  const double e = numpy_exp(2 * x - 2);
  return 10 < e ? 10 : e;
}

}  // namespace fastvec::envs::mpe
