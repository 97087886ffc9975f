#pragma once
// CartPole-v1, a port of gymnasium/envs/classic_control/cartpole.py
// (Barto, Sutton & Anderson 1983; Euler integration, as the reference).
// State is kept in float64 as the reference does, observed as float32.

#include <cmath>
#include <limits>
#include <vector>

#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/fast_math.hpp"

namespace fastvec::envs {

class CartPole {
 public:
  using Obs = float;
  using Action = int32_t;

  static core::Spec spec(const core::Options&) {
    const double fmax = std::numeric_limits<float>::max();
    core::Spec s;
    s.obs_shape = {4};
    s.obs_high = {kXThreshold * 2, fmax, static_cast<float>(kThetaThreshold * 2), fmax};
    s.obs_low = {-s.obs_high[0], -fmax, -s.obs_high[2], -fmax};
    s.num_actions = 2;
    s.step_cost_ns = 20;
    return s;
  }

  CartPole(int n, const core::Options& o)
      : sutton_barto_reward_(o.get("sutton_barto_reward", 0) != 0), x_(n), x_dot_(n), theta_(n), theta_dot_(n) {}

  void reset(int i, core::Pcg64& rng) {
    x_[i] = rng.uniform(-0.05, 0.05);
    x_dot_[i] = rng.uniform(-0.05, 0.05);
    theta_[i] = rng.uniform(-0.05, 0.05);
    theta_dot_[i] = rng.uniform(-0.05, 0.05);
  }

  core::StepResult step(int i, const Action* action) {
    const double force = *action == 1 ? kForceMag : -kForceMag;
    double sintheta, costheta;
    envs::sincos(theta_[i], &sintheta, &costheta);
    const double temp = (force + kPolemassLength * (theta_dot_[i] * theta_dot_[i]) * sintheta) / kTotalMass;
    const double thetaacc = (kGravity * sintheta - costheta * temp) /
                            (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
    const double xacc = temp - kPolemassLength * thetaacc * costheta / kTotalMass;
    x_[i] = x_[i] + kTau * x_dot_[i];
    x_dot_[i] = x_dot_[i] + kTau * xacc;
    theta_[i] = theta_[i] + kTau * theta_dot_[i];
    theta_dot_[i] = theta_dot_[i] + kTau * thetaacc;
    const bool terminated = x_[i] < -kXThreshold || x_[i] > kXThreshold || theta_[i] < -kThetaThreshold ||
                            theta_[i] > kThetaThreshold;
    const float reward = sutton_barto_reward_ ? (terminated ? -1.f : 0.f) : 1.f;
    return {reward, terminated};
  }

  void write_obs(int i, float* out) const {
    out[0] = static_cast<float>(x_[i]);
    out[1] = static_cast<float>(x_dot_[i]);
    out[2] = static_cast<float>(theta_[i]);
    out[3] = static_cast<float>(theta_dot_[i]);
  }

 private:
  static constexpr double kGravity = 9.8, kMassCart = 1.0, kMassPole = 0.1;
  static constexpr double kTotalMass = kMassPole + kMassCart;
  static constexpr double kLength = 0.5, kPolemassLength = kMassPole * kLength;
  static constexpr double kForceMag = 10.0, kTau = 0.02;
  static constexpr double kThetaThreshold = 12 * 2 * M_PI / 360, kXThreshold = 2.4;

  bool sutton_barto_reward_;
  std::vector<double> x_, x_dot_, theta_, theta_dot_;  // structure of arrays, one entry per env
};

}  // namespace fastvec::envs
