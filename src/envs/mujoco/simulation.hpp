#pragma once
// What gymnasium's MuJoCo envs share, in C++: the model (loaded once per
// file and shared, read-only, by every env of every pool that uses it), one
// mjData per env, gymnasium's MujocoEnv step and reset, and the numpy
// arithmetic their rewards are computed with, reproduced operation for
// operation so that rewards and infos are bit-identical to gymnasium's.
// Reference: gymnasium/envs/mujoco/mujoco_env.py (MujocoEnv).
//
// A Simulation belongs to one block of envs: the pool calls it from one
// thread at a time. The model cache is guarded by its own mutex.

#include <mujoco/mujoco.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"

namespace fastvec::envs::mujoco {

// The compiled model of `path` (gymnasium's MjModel.from_xml_path), shared by
// everyone who loads the same file contents while any of them holds it.
// Throws std::invalid_argument naming the path when MuJoCo cannot load it, and std::runtime_error naming the
// callback while mujoco's Python bindings have set one of MuJoCo's callbacks to a Python function.
std::shared_ptr<const mjModel> load_model(const std::string& path);

// Checks that the MuJoCo library this process loaded is the one fastvec was
// built against (its headers describe the structs): std::runtime_error if not.
void check_library_version();

// Calls fn(arg), which calls into MuJoCo and holds nothing with a destructor across those calls, with MuJoCo's
// fatal errors thrown as core::EnvError("MuJoCo: ..."), once back in C++ frames (simulation.cpp).
void call_catching_errors(void (*fn)(void*), void* arg);

// f() (calls into MuJoCo, by a lambda that captures by reference) with MuJoCo's errors thrown as core::EnvError.
template <class F>
void catching_errors(F&& f) {
  using Fn = std::remove_reference_t<F>;
  call_catching_errors([](void* p) { (*static_cast<Fn*>(p))(); }, &f);
}

// Called before every call into MuJoCo that may run a callback: core::EnvError while mujoco's Python bindings
// have set one of MuJoCo's callbacks that takes an mjData to a Python function (simulation.cpp).
void refuse_python_callbacks();

// -- numpy's arithmetic, as gymnasium's envs call it ----------------------------
//
// Every function here does what the numpy expression in its comment does,
// with the same roundings in the same order (this file is compiled without
// floating-point contraction: a * b + c is two roundings unless std::fma
// says otherwise).

// numpy's pairwise summation (numpy/_core/src/umath/loops_utils.h.src), of
// f(0), ..., f(n - 1): np.add.reduce starts from the identity, 0.0.
template <class F>
double pairwise_sum(const F& f, int64_t lo, int64_t n) {
  if (n < 8) {
    double res = 0.0;
    for (int64_t i = 0; i < n; ++i) res += f(lo + i);
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = f(lo + j);
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += f(lo + i + j);
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += f(lo + i);
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(f, lo, n2) + pairwise_sum(f, lo + n2, n - n2);
}

// np.sum(np.square(a)) of n float64 values.
inline double sum_of_squares(const double* a, int64_t n) {
  return 0.0 + pairwise_sum([a](int64_t i) { return a[i] * a[i]; }, 0, n);
}

// np.clip(x, lo, hi) of a float64: min(max(x, lo), hi) (hi when lo > hi; NaN stays NaN, -0.0 stays -0.0).
inline double clip(double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }

// np.sum(np.square(np.clip(a, lo, hi))) of n float64 values.
inline double sum_of_clipped_squares(const double* a, int64_t n, double lo, double hi) {
  return 0.0 + pairwise_sum(
                   [a, lo, hi](int64_t i) {
                     const double c = clip(a[i], lo, hi);
                     return c * c;
                   },
                   0, n);
}

// How numpy's dot (OpenBLAS's ddot) sums a short vector: OpenBLAS picks its
// kernel by CPU when it loads, and kernels differ between its releases.
// Seen: fused multiply-adds in order (kFused: numpy 2's OpenBLAS on AVX-512
// CPUs), a multiply then an add in order (kSeparate: its AVX2 kernels, AMD
// Zen's too), and the squares of even and odd positions summed apart, then
// added (kTwoLanes: numpy 1.26's OpenBLAS 0.3.23 on AVX-512 CPUs; for 2
// values the same as kSeparate). So it is asked of the numpy in the process,
// once, when fastvec is imported (fastvec/mujoco_models.py, numpy_dot_kind),
// before any env runs; kFused until then. Written once, read by every env.
enum class DotKind : int { kFused, kSeparate, kTwoLanes };
inline std::atomic<DotKind> numpy_dot{DotKind::kFused};

// a.dot(a) of a contiguous float64 vector (a few values here), summed as numpy's dot sums it (numpy_dot).
// (Compiled without contraction: a * a + b is two roundings but where std::fma says one.)
inline double self_dot(const double* a, int64_t n) {
  double dot = 0.0;
  switch (numpy_dot.load(std::memory_order_relaxed)) {
    case DotKind::kFused:
      for (int64_t i = 0; i < n; ++i) dot = std::fma(a[i], a[i], dot);
      break;
    case DotKind::kSeparate:
      for (int64_t i = 0; i < n; ++i) dot = dot + a[i] * a[i];
      break;
    case DotKind::kTwoLanes: {
      double lane[2] = {0.0, 0.0};
      for (int64_t i = 0; i < n; ++i) lane[i & 1] = lane[i & 1] + a[i] * a[i];
      dot = lane[0] + lane[1];
      break;
    }
  }
  return dot;
}

// np.linalg.norm(a) of a contiguous float64 vector (2 or 3 values here): sqrt(a.dot(a)).
inline double norm(const double* a, int64_t n) { return std::sqrt(self_dot(a, n)); }

// A numpy float64 scalar's x ** y: libm's pow (which is not always x * x for
// y = 2: they differ in the last bit for about 1 value in 1,000). The
// exponent is hidden from the compiler, which would fold pow(x, 2.0) into x * x.
inline double scalar_pow(double x, double y) {
  asm("" : "+x"(y));
  return std::pow(x, y);
}

// -- the simulation -----------------------------------------------------------

struct DataDeleter {
  void operator()(mjData* d) const { mj_deleteData(d); }
};
using DataPtr = std::unique_ptr<mjData, DataDeleter>;

// Refuses (std::invalid_argument naming xml_file) a model smaller than what the
// env reads of it: at least min_nq positions and min_nv velocities (`what`
// says why), so that a user's model of another robot is an error, not a read
// out of bounds.
void check_model(const mjModel& m, int64_t min_nq, int64_t min_nv, const char* what);

// reset_noise_scale, with the env's default: numpy's uniform(-s, s) needs 2 s
// finite (gymnasium's reset raises OverflowError past it).
inline core::OptionSpec noise_option(double fallback) {
  return {.name = "reset_noise_scale", .kind = core::OptionSpec::Kind::kReal, .fallback = fallback, .low = -8e307,
          .high = 8e307};
}

// The options every MuJoCo env takes (gymnasium's MujocoEnv arguments that
// change the physics), with the env's defaults.
inline core::OptionTable simulation_options(const char* xml_file, int frame_skip) {
  using K = core::OptionSpec::Kind;
  return {
      {.name = "xml_file", .kind = K::kFile, .text_fallback = xml_file},
      {.name = "frame_skip", .kind = K::kInt, .fallback = static_cast<double>(frame_skip), .low = 1, .high = 1e6},
  };
}

// An option table: the simulation's options, then the env's own.
inline core::OptionTable with_simulation_options(const char* xml_file, int frame_skip, core::OptionTable own) {
  core::OptionTable table = simulation_options(xml_file, frame_skip);
  table.insert(table.end(), own.begin(), own.end());
  return table;
}

// A Box(-inf, inf) float64 observation of `size` elements, a float32 Box of
// the model's control ranges for actions (gymnasium's _set_action_space),
// and the info fields, all float64 unless said; step_cost_ns is per env and
// step (each env's per-frame cost, measured with fastvec._core.loop_rate on
// gymnasium's model, times frame_skip).
core::Spec simulation_spec(const mjModel& m, int64_t obs_size, std::vector<core::InfoField> info,
                           double step_cost_ns);

// A float64 info field present in a step's info only, or in a reset's too.
inline core::InfoField step_field(const char* name, int64_t size = 1) {
  return {.name = name, .type = core::InfoField::Type::kFloat64, .size = size, .at_reset = false};
}
inline core::InfoField reset_field(const char* name, int64_t size = 1) {
  return {.name = name, .type = core::InfoField::Type::kFloat64, .size = size, .at_reset = true};
}

class Simulation {
 public:
  // n envs of the model the options name, none reset yet.
  Simulation(int n, const core::Options& o);

  const mjModel& model() const { return *model_; }
  const std::shared_ptr<const mjModel>& shared_model() const { return model_; }
  mjData& data(int i) { return *data_[i]; }
  const mjData& data(int i) const { return *data_[i]; }
  int nq() const { return static_cast<int>(model_->nq); }
  int nv() const { return static_cast<int>(model_->nv); }
  // MujocoEnv.dt: the model's timestep times frame_skip.
  double dt() const { return model_->opt.timestep * frame_skip_; }
  // init_qpos, init_qvel: the state mj_makeData starts from (qpos0, zeros).
  const double* init_qpos() const { return init_qpos_.data(); }
  const double* init_qvel() const { return init_qvel_.data(); }

  // These three call MuJoCo: its fatal errors are thrown as core::EnvError("MuJoCo: ..."), and so is a callback
  // set to a Python function through mujoco's Python bindings (which run it only on their own MjData), before
  // anything is done (simulation.cpp).
  // MujocoEnv.do_simulation: ctrl = action; frame_skip mj_steps; mj_rnePostConstraint.
  void do_simulation(int i, const double* action);
  // MujocoEnv.reset's mj_resetData, before the env draws its state.
  void reset_data(int i);
  // MujocoEnv.set_state: qpos, qvel, then mj_forward.
  void set_state(int i, const double* qpos, const double* qvel);

  // init + uniform(lo, hi, size=n) and init + scale * standard_normal(n), drawn as numpy draws them.
  static void add_uniform(core::Pcg64& rng, const double* init, double lo, double hi, int n, double* out);
  static void add_normal(core::Pcg64& rng, const double* init, double scale, int n, double* out);

  // The index of body `name`; absent, std::invalid_argument naming `option` (the option that asked for it).
  int body(const char* name, const char* option = "xml_file") const;

 private:
  std::shared_ptr<const mjModel> model_;
  std::vector<DataPtr> data_;
  std::vector<double> init_qpos_, init_qvel_;
  int frame_skip_;
};

// The info values of a block of envs: one row of 8-byte slots per env (every
// MuJoCo info field is float64 or int64), written by the env at each step and
// reset, copied out by write_info.
class InfoRows {
 public:
  InfoRows(int n, const std::vector<core::InfoField>& fields)
      : row_bytes_(core::info_row_bytes(fields)), rows_(static_cast<size_t>(n) * row_bytes_ / 8, 0.0) {}
  double* row(int i) { return rows_.data() + static_cast<size_t>(i) * row_bytes_ / 8; }
  void write(int i, std::byte* out) const noexcept {
    std::memcpy(out, rows_.data() + static_cast<size_t>(i) * row_bytes_ / 8, row_bytes_);
  }

 private:
  size_t row_bytes_;
  std::vector<double> rows_;
};

// The model an env's options name, for its spec().
inline std::shared_ptr<const mjModel> model_of(const core::Options& o) { return load_model(o.text("xml_file")); }

// What every MuJoCo env is to the pool (float64 observations, actions and
// rewards; its info rows) and holds (its block's simulation, and scratch for
// the state a reset draws). An env derives from it and adds options(),
// info(), spec(), reset(), step() and write_obs().
class MujocoEnv {
 public:
  using Obs = double;
  using Action = double;
  using Reward = double;

  void write_info(int i, std::byte* out) const noexcept { info_.write(i, out); }

 protected:
  MujocoEnv(int n, const core::Options& o, const std::vector<core::InfoField>& info)
      : sim_(n, o), info_(n, info), qpos_(sim_.nq()), qvel_(sim_.nv()) {}

  // How a reset draws the velocities around init_qvel (the positions: always uniform).
  enum class VelocityNoise { kUniform, kNormal };

  // gymnasium's usual reset_model, after mj_resetData: qpos = init_qpos + uniform(-s, s, nq), qvel = init_qvel +
  // uniform(-s, s, nv) or + s * standard_normal(nv), then set_state.
  void reset_with_noise(int i, core::Pcg64& rng, double s, VelocityNoise velocity) {
    sim_.reset_data(i);
    Simulation::add_uniform(rng, sim_.init_qpos(), -s, s, sim_.nq(), qpos_.data());
    if (velocity == VelocityNoise::kNormal) {
      Simulation::add_normal(rng, sim_.init_qvel(), s, sim_.nv(), qvel_.data());
    } else {
      Simulation::add_uniform(rng, sim_.init_qvel(), -s, s, sim_.nv(), qvel_.data());
    }
    sim_.set_state(i, qpos_.data(), qvel_.data());
  }

  Simulation sim_;
  InfoRows info_;
  std::vector<double> qpos_, qvel_;  // a reset's scratch
};

}  // namespace fastvec::envs::mujoco
