#pragma once
// CartPole-v1, a port of gymnasium/envs/classic_control/cartpole.py
// (Barto, Sutton & Anderson 1983; Euler integration, as the reference).
// State is kept in float64 as the reference does, observed as float32.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/fast_math.hpp"

namespace fastvec::envs {

class CartPole {
 public:
  using Obs = float;
  using Action = int32_t;

  static core::OptionTable options() { return {{"sutton_barto_reward", core::OptionSpec::Kind::kBool, 0}}; }

  static core::Spec spec(const core::Options&) {
    const double inf = std::numeric_limits<double>::infinity();
    core::Spec s;
    s.obs_shape = {4};
    s.obs_high = {kXThreshold * 2, inf, static_cast<float>(kThetaThreshold * 2), inf};
    s.obs_low = {-s.obs_high[0], -inf, -s.obs_high[2], -inf};
    s.num_actions = 2;
    s.step_cost_ns = 20;
    return s;
  }

  CartPole(int n, const core::Options& o)
      : sutton_barto_reward_(o.flag("sutton_barto_reward")), x_(n), x_dot_(n), theta_(n), theta_dot_(n) {}

  void reset(int i, core::Pcg64& rng) {
    x_[i] = rng.uniform(-0.05, 0.05);
    x_dot_[i] = rng.uniform(-0.05, 0.05);
    theta_[i] = rng.uniform(-0.05, 0.05);
    theta_dot_[i] = rng.uniform(-0.05, 0.05);
  }

  core::StepResult step(int i, const Action* action) noexcept {
    double sintheta, costheta;
    envs::sincos(theta_[i], &sintheta, &costheta);
    return physics(x_[i], x_dot_[i], theta_[i], theta_dot_[i], sintheta, costheta, *action, sutton_barto_reward_);
  }

  // Every env of the block takes a step: the same physics in a loop the
  // compiler can vectorize.
  void step_block(int n, const Action* actions, float* reward, bool* terminated) noexcept {
    step_loop(n, x_.data(), x_dot_.data(), theta_.data(), theta_dot_.data(), actions, reward, terminated,
              sutton_barto_reward_);
  }

  // Observations of the whole block, rows of 4.
  void write_obs_block(int n, float* out) const noexcept {
    obs_loop(n, x_.data(), x_dot_.data(), theta_.data(), theta_dot_.data(), out);
  }

  void write_obs(int i, float* out) const {
    out[0] = static_cast<float>(x_[i]);
    out[1] = static_cast<float>(x_dot_[i]);
    out[2] = static_cast<float>(theta_[i]);
    out[3] = static_cast<float>(theta_dot_[i]);
  }

 private:
  FASTVEC_SIMD_CLONES static void obs_loop(int n, const double* __restrict x, const double* __restrict x_dot,
                                           const double* __restrict theta, const double* __restrict theta_dot,
                                           float* __restrict out) noexcept {
    for (int i = 0; i < n; ++i) {
      out[4 * i + 0] = static_cast<float>(x[i]);
      out[4 * i + 1] = static_cast<float>(x_dot[i]);
      out[4 * i + 2] = static_cast<float>(theta[i]);
      out[4 * i + 3] = static_cast<float>(theta_dot[i]);
    }
  }

  // __restrict on parameters (GCC ignores it on locals) lets the loops
  // vectorize. Per tile: sin and cos of every theta (as libm's, see
  // fast_math.hpp), then the physics.
  FASTVEC_SIMD_CLONES static void step_loop(int n, double* __restrict x, double* __restrict x_dot, double* __restrict theta,
                        double* __restrict theta_dot, const Action* __restrict actions, float* __restrict reward,
                        bool* __restrict terminated, bool sutton_barto) noexcept {
    constexpr int kTile = envs::SinCosBlock::kTile;
    alignas(64) double sin_t[kTile], cos_t[kTile];
    for (int base = 0; base < n; base += kTile) {
      const int m = std::min(kTile, n - base);
      envs::SinCosBlock::run(m, theta + base, sin_t, cos_t);
      for (int i = 0; i < m; ++i) {
        const int e = base + i;
        double xi = x[e], x_dot_i = x_dot[e], theta_i = theta[e], theta_dot_i = theta_dot[e];
        const core::StepResult r =
            physics(xi, x_dot_i, theta_i, theta_dot_i, sin_t[i], cos_t[i], actions[e], sutton_barto);
        x[e] = xi;
        x_dot[e] = x_dot_i;
        theta[e] = theta_i;
        theta_dot[e] = theta_dot_i;
        reward[e] = r.reward;
        terminated[e] = r.terminated;
      }
    }
  }

  // sintheta and costheta must be libm's sin and cos of theta, as the
  // reference's np.sin and np.cos are.
  static core::StepResult physics(double& x, double& x_dot, double& theta, double& theta_dot, double sintheta,
                                  double costheta, Action action, bool sutton_barto) noexcept {
    const double force = action == 1 ? kForceMag : -kForceMag;
    const double temp = (force + kPolemassLength * (theta_dot * theta_dot) * sintheta) / kTotalMass;
    const double thetaacc = (kGravity * sintheta - costheta * temp) /
                            (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
    const double xacc = temp - kPolemassLength * thetaacc * costheta / kTotalMass;
    x = x + kTau * x_dot;
    x_dot = x_dot + kTau * xacc;
    theta = theta + kTau * theta_dot;
    theta_dot = theta_dot + kTau * thetaacc;
    const double ended = (x < -kXThreshold) | (x > kXThreshold) | (theta < -kThetaThreshold) |
                                 (theta > kThetaThreshold)
                             ? 1.0
                             : 0.0;
    // +1 every step, or with sutton_barto_reward 0 and -1 on termination;
    // arithmetic in doubles rather than selects so the block loop vectorizes.
    const double reward = (sutton_barto ? 0.0 : 1.0) - (sutton_barto ? 1.0 : 0.0) * ended;
    return {static_cast<float>(reward), ended != 0.0};
  }

  static constexpr double kGravity = 9.8, kMassCart = 1.0, kMassPole = 0.1;
  static constexpr double kTotalMass = kMassPole + kMassCart;
  static constexpr double kLength = 0.5, kPolemassLength = kMassPole * kLength;
  static constexpr double kForceMag = 10.0, kTau = 0.02;
  static constexpr double kThetaThreshold = 12 * 2 * M_PI / 360, kXThreshold = 2.4;

  bool sutton_barto_reward_;
  std::vector<double> x_, x_dot_, theta_, theta_dot_;  // structure of arrays, one entry per env
};

}  // namespace fastvec::envs
