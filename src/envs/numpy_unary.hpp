#pragma once
// A float64 -> float64 ufunc of this process's numpy, one value at a time: numpy's own loop, whose kernel numpy
// picks by CPU when it loads (on AVX-512 CPUs SVML's, which differs from libm's in the last bit for some
// arguments). fastvec hands the loops over when it is imported (fastvec/_numpy_loops.py); until then, and where
// one cannot be found, libm's function.

#include <atomic>
#include <cmath>
#include <cstdint>

namespace fastvec::envs {

class NumpyUnary {
 public:
  // numpy's PyUFuncGenericFunction: (args, dimensions, steps, data).
  using Loop = void (*)(char**, const intptr_t*, const intptr_t*, void*);

  explicit constexpr NumpyUnary(double (*fallback)(double)) : fallback_(fallback) {}

  // Called once at import, before any pool exists.
  void set(Loop loop, void* data) {
    data_.store(data, std::memory_order_relaxed);
    loop_.store(loop, std::memory_order_release);
  }

  // Read by the pools' workers.
  double operator()(double x) const {
    const Loop loop = loop_.load(std::memory_order_acquire);
    if (loop == nullptr) return fallback_(x);
    // In place, as np.exp(a, out=a): numpy 1.26's loops take an output a few bytes past the input (two locals
    // side by side) for an overlap and fall back to libm, which numpy's own calls on arrays never do.
    char* args[2] = {reinterpret_cast<char*>(&x), reinterpret_cast<char*>(&x)};
    const intptr_t n = 1;
    const intptr_t steps[2] = {sizeof(double), sizeof(double)};
    loop(args, &n, steps, data_.load(std::memory_order_relaxed));
    return x;
  }

 private:
  double (*fallback_)(double);
  std::atomic<Loop> loop_{nullptr};
  std::atomic<void*> data_{nullptr};
};

// np.exp (MPE's simple_tag and simple_world_comm, dm_control's rewards.tolerance): numpy's AVX-512 loop differs
// from libm's in the last bit for about 5% of arguments.
inline double libm_exp(double x) { return std::exp(x); }
inline NumpyUnary numpy_exp{libm_exp};

// np.log1p (dm_control's hopper observes the log1p of its touch sensors).
inline double libm_log1p(double x) { return std::log1p(x); }
inline NumpyUnary numpy_log1p{libm_log1p};

// np.arcsinh (dm_control's quadruped observes the arcsinh of its toes' force and torque sensors).
inline double libm_asinh(double x) { return std::asinh(x); }
inline NumpyUnary numpy_arcsinh{libm_asinh};

// np.tanh (dm_control's quadruped escape observes the tanh of its rangefinders): numpy's AVX-512 loop differs from
// libm's in the last bit for about 30% of arguments.
inline double libm_tanh(double x) { return std::tanh(x); }
inline NumpyUnary numpy_tanh{libm_tanh};

// np.cos (dm_control's quadruped escape: its terrain's bowl, its upright reward's deviation angle).
inline double libm_cos(double x) { return std::cos(x); }
inline NumpyUnary numpy_cos{libm_cos};

// The same for a (float64, float64) -> float64 ufunc.
class NumpyBinary {
 public:
  using Loop = NumpyUnary::Loop;

  explicit constexpr NumpyBinary(double (*fallback)(double, double)) : fallback_(fallback) {}

  // Called once at import, before any pool exists.
  void set(Loop loop, void* data) {
    data_.store(data, std::memory_order_relaxed);
    loop_.store(loop, std::memory_order_release);
  }

  // Read by the pools' workers.
  double operator()(double x, double y) const {
    const Loop loop = loop_.load(std::memory_order_acquire);
    if (loop == nullptr) return fallback_(x, y);
    // Into x, as np.arctan2(a, b, out=a): an output a few bytes from an input is an overlap to numpy 1.26's loops,
    // which then fall back to libm (as the unary loops above).
    char* args[3] = {reinterpret_cast<char*>(&x), reinterpret_cast<char*>(&y), reinterpret_cast<char*>(&x)};
    const intptr_t n = 1;
    const intptr_t steps[3] = {sizeof(double), sizeof(double), sizeof(double)};
    loop(args, &n, steps, data_.load(std::memory_order_relaxed));
    return x;
  }

 private:
  double (*fallback_)(double, double);
  std::atomic<Loop> loop_{nullptr};
  std::atomic<void*> data_{nullptr};
};

// np.arctan2 (dm_control's manipulator puts a ball in the hand at the grasp's angle): numpy's differs from libm's
// in the last bit for about 8% of arguments, scalars included, on AVX-512 CPUs.
inline double libm_atan2(double y, double x) { return std::atan2(y, x); }
inline NumpyBinary numpy_arctan2{libm_atan2};

}  // namespace fastvec::envs
