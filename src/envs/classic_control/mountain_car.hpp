#pragma once
// MountainCar-v0 and MountainCarContinuous-v0, ports of
// gymnasium/envs/classic_control/mountain_car.py and continuous_mountain_car.py
// (Moore 1990).

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/fast_math.hpp"

namespace fastvec::envs {

class MountainCar {
 public:
  using Obs = float;
  using Action = int32_t;

  static core::OptionTable options() { return {{"goal_velocity", core::OptionSpec::Kind::kReal, 0.0}}; }

  static core::Spec spec(const core::Options&) {
    core::Spec s;
    s.obs_shape = {2};
    s.obs_low = {kMinPosition, static_cast<float>(-kMaxSpeed)};
    s.obs_high = {kMaxPosition, static_cast<float>(kMaxSpeed)};
    s.num_actions = 3;
    s.step_cost_ns = 15;
    return s;
  }

  MountainCar(int n, const core::Options& o) : goal_velocity_(o.get("goal_velocity")), pos_(n), vel_(n) {}

  void reset(int i, core::Pcg64& rng) {
    pos_[i] = rng.uniform(-0.6, -0.4);
    vel_[i] = 0;
  }

  core::StepResult step(int i, const Action* action) {
    double velocity = vel_[i] + (*action - 1) * kForce + envs::cos(3 * pos_[i]) * (-kGravity);
    velocity = std::clamp(velocity, -kMaxSpeed, kMaxSpeed);
    double position = std::clamp(pos_[i] + velocity, kMinPosition, kMaxPosition);
    if (position == kMinPosition && velocity < 0) velocity = 0;
    pos_[i] = position;
    vel_[i] = velocity;
    return {-1.f, position >= kGoalPosition && velocity >= goal_velocity_};
  }

  void write_obs(int i, float* out) const {
    out[0] = static_cast<float>(pos_[i]);
    out[1] = static_cast<float>(vel_[i]);
  }

 private:
  static constexpr double kMinPosition = -1.2, kMaxPosition = 0.6, kMaxSpeed = 0.07;
  static constexpr double kGoalPosition = 0.5, kForce = 0.001, kGravity = 0.0025;

  double goal_velocity_;
  std::vector<double> pos_, vel_;
};

class MountainCarContinuous {
 public:
  using Obs = float;
  using Action = float;

  static core::OptionTable options() { return {{"goal_velocity", core::OptionSpec::Kind::kReal, 0.0}}; }

  static core::Spec spec(const core::Options&) {
    core::Spec s;
    s.obs_shape = {2};
    s.obs_low = {kMinPosition, static_cast<float>(-kMaxSpeed)};
    s.obs_high = {kMaxPosition, static_cast<float>(kMaxSpeed)};
    s.action_shape = {1};
    s.action_low = {-1.0};
    s.action_high = {1.0};
    s.step_cost_ns = 15;
    return s;
  }

  MountainCarContinuous(int n, const core::Options& o)
      : goal_velocity_(o.get("goal_velocity")), pos_(n), vel_(n) {}

  // The reference keeps float64 state after reset and float32 state after
  // every step; so do we.
  void reset(int i, core::Pcg64& rng) {
    pos_[i] = rng.uniform(-0.6, -0.4);
    vel_[i] = 0;
  }

  core::StepResult step(int i, const Action* action) {
    // The force is clipped to [-1, 1]; the action cost uses the raw action.
    const double force = std::min(std::max(static_cast<double>(*action), -1.0), 1.0);
    double velocity = vel_[i] + (force * kPower - 0.0025 * envs::cos(3 * pos_[i]));
    velocity = std::min(std::max(velocity, -kMaxSpeed), kMaxSpeed);
    double position = std::min(std::max(pos_[i] + velocity, kMinPosition), kMaxPosition);
    if (position == kMinPosition && velocity < 0) velocity = 0;
    const bool terminated = position >= kGoalPosition && velocity >= goal_velocity_;
    double reward = terminated ? 100.0 : 0.0;
    reward -= std::pow(static_cast<double>(*action), 2) * 0.1;
    pos_[i] = static_cast<float>(position);
    vel_[i] = static_cast<float>(velocity);
    return {static_cast<float>(reward), terminated};
  }

  void write_obs(int i, float* out) const {
    out[0] = static_cast<float>(pos_[i]);
    out[1] = static_cast<float>(vel_[i]);
  }

 private:
  static constexpr double kMinPosition = -1.2, kMaxPosition = 0.6, kMaxSpeed = 0.07;
  static constexpr double kGoalPosition = 0.45, kPower = 0.0015;

  double goal_velocity_;
  std::vector<double> pos_, vel_;
};

}  // namespace fastvec::envs
