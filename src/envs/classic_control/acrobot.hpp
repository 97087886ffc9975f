#pragma once
// Acrobot-v1, a port of gymnasium/envs/classic_control/acrobot.py ("book"
// dynamics, Sutton & Barto 2018; one RK4 step of dt = 0.2 per env step).

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/fast_math.hpp"

namespace fastvec::envs {

class Acrobot {
 public:
  using Obs = float;
  using Action = int32_t;

  static core::OptionTable options() { return {}; }

  static core::Spec spec(const core::Options&) {
    core::Spec s;
    s.obs_shape = {6};
    s.obs_high = {1.0, 1.0, 1.0, 1.0, static_cast<float>(kMaxVel1), static_cast<float>(kMaxVel2)};
    for (double h : s.obs_high) s.obs_low.push_back(-h);
    s.num_actions = 3;
    s.step_cost_ns = 300;
    return s;
  }

  Acrobot(int n, const core::Options&) : s_(n) {}

  // The reference draws float64 and stores the reset state as float32.
  void reset(int i, core::Pcg64& rng) {
    for (double& v : s_[i]) v = static_cast<float>(rng.uniform(-0.1, 0.1));
  }

  core::StepResult step(int i, const Action* action) {
    static constexpr double kTorque[3] = {-1.0, 0.0, 1.0};
    const double a = kTorque[*action];
    State& y0 = s_[i];
    const double dt = kDt, dt2 = dt / 2.0;
    const State k1 = dsdt(y0, a);
    const State k2 = dsdt(axpy(y0, dt2, k1), a);
    const State k3 = dsdt(axpy(y0, dt2, k2), a);
    const State k4 = dsdt(axpy(y0, dt, k3), a);
    State ns;
    for (int j = 0; j < 4; ++j) ns[j] = y0[j] + dt / 6.0 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
    ns[0] = wrap(ns[0], -M_PI, M_PI);
    ns[1] = wrap(ns[1], -M_PI, M_PI);
    ns[2] = std::min(std::max(ns[2], -kMaxVel1), kMaxVel1);
    ns[3] = std::min(std::max(ns[3], -kMaxVel2), kMaxVel2);
    y0 = ns;
    const bool terminated = -envs::cos(ns[0]) - envs::cos(ns[1] + ns[0]) > 1.0;
    return {terminated ? 0.f : -1.f, terminated};
  }

  void write_obs(int i, float* out) const {
    const State& s = s_[i];
    out[0] = static_cast<float>(envs::cos(s[0]));
    out[1] = static_cast<float>(envs::sin(s[0]));
    out[2] = static_cast<float>(envs::cos(s[1]));
    out[3] = static_cast<float>(envs::sin(s[1]));
    out[4] = static_cast<float>(s[2]);
    out[5] = static_cast<float>(s[3]);
  }

 private:
  using State = std::array<double, 4>;
  static constexpr double kDt = 0.2, kMaxVel1 = 4 * M_PI, kMaxVel2 = 9 * M_PI;

  static State axpy(const State& y, double h, const State& k) {
    return {y[0] + h * k[0], y[1] + h * k[1], y[2] + h * k[2], y[3] + h * k[3]};
  }

  static double wrap(double x, double m, double M) {
    const double diff = M - m;
    while (x > M) x = x - diff;
    while (x < m) x = x + diff;
    return x;
  }

  // ** on the reference's float64 scalars is libm's pow: envs::square (the
  // constants' squares are exact either way).
  static State dsdt(const State& s, double a) {
    constexpr double m1 = 1.0, m2 = 1.0, l1 = 1.0, lc1 = 0.5, lc2 = 0.5, I1 = 1.0, I2 = 1.0, g = 9.8;
    const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
    const double d1 = m1 * (lc1 * lc1) + m2 * ((l1 * l1) + (lc2 * lc2) + 2 * l1 * lc2 * envs::cos(theta2)) + I1 + I2;
    const double d2 = m2 * ((lc2 * lc2) + l1 * lc2 * envs::cos(theta2)) + I2;
    const double phi2 = m2 * lc2 * g * envs::cos(theta1 + theta2 - M_PI / 2.0);
    const double phi1 = -m2 * l1 * lc2 * envs::square(dtheta2) * envs::sin(theta2) -
                        2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * envs::sin(theta2) +
                        (m1 * lc1 + m2 * l1) * g * envs::cos(theta1 - M_PI / 2) + phi2;
    const double ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * envs::square(dtheta1) * envs::sin(theta2) - phi2) /
                            (m2 * (lc2 * lc2) + I2 - envs::square(d2) / d1);
    const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    return {dtheta1, dtheta2, ddtheta1, ddtheta2};
  }

  std::vector<State> s_;  // theta1, theta2, dtheta1, dtheta2 per env
};

}  // namespace fastvec::envs
