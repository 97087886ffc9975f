#pragma once
// Pendulum-v1, a port of gymnasium/envs/classic_control/pendulum.py.

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/fast_math.hpp"

namespace fastvec::envs {

class Pendulum {
 public:
  using Obs = float;
  using Action = float;

  static core::OptionTable options() { return {{"g", core::OptionSpec::Kind::kReal, 10.0}}; }

  static core::Spec spec(const core::Options&) {
    core::Spec s;
    s.obs_shape = {3};
    s.obs_low = {-1.0, -1.0, -kMaxSpeed};
    s.obs_high = {1.0, 1.0, kMaxSpeed};
    s.action_shape = {1};
    s.action_low = {-kMaxTorque};
    s.action_high = {kMaxTorque};
    s.step_cost_ns = 30;
    return s;
  }

  Pendulum(int n, const core::Options& o) : g_(o.get("g")), th_(n), thdot_(n) {}

  void reset(int i, core::Pcg64& rng) {
    th_[i] = rng.uniform(-M_PI, M_PI);
    thdot_[i] = rng.uniform(-1.0, 1.0);
  }

  core::StepResult step(int i, const Action* action) {
    const double th = th_[i], thdot = thdot_[i];
    const double u = std::clamp(static_cast<double>(*action), -kMaxTorque, kMaxTorque);
    // ** on the reference's float64 scalars is libm's pow: envs::square
    const double costs = envs::square(angle_normalize(th)) + 0.1 * envs::square(thdot) + 0.001 * envs::square(u);
    double newthdot = thdot + (3 * g_ / (2 * kL) * envs::sin(th) + 3.0 / (kM * kL * kL) * u) * kDt;
    newthdot = std::clamp(newthdot, -kMaxSpeed, kMaxSpeed);
    th_[i] = th + newthdot * kDt;
    thdot_[i] = newthdot;
    return {static_cast<float>(-costs), false};
  }

  void write_obs(int i, float* out) const {
    out[0] = static_cast<float>(envs::cos(th_[i]));
    out[1] = static_cast<float>(envs::sin(th_[i]));
    out[2] = static_cast<float>(thdot_[i]);
  }

 private:
  static constexpr double kMaxSpeed = 8, kMaxTorque = 2.0, kDt = 0.05, kM = 1.0, kL = 1.0;

  // ((x + pi) % (2 pi)) - pi with Python's floored modulo.
  static double angle_normalize(double x) {
    double r = std::fmod(x + M_PI, 2 * M_PI);
    if (r < 0) r += 2 * M_PI;
    return r - M_PI;
  }

  double g_;
  std::vector<double> th_, thdot_;
};

}  // namespace fastvec::envs
