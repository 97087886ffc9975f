#pragma once
// Hopper-v5 and Walker2d-v5, ports of gymnasium/envs/mujoco/hopper_v5.py and walker2d_v5.py: planar walkers
// rewarded for moving forward and for staying healthy, with the same observation (qpos without x, qvel
// clipped to [-10, 10]) and info, and different health checks.

#include <array>
#include <limits>

#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::mujoco {

// What Hopper and Walker2d share; Health says when the walker is healthy.
template <class Health>
class PlanarWalker : public MujocoEnv {
 public:
  static std::vector<core::InfoField> info() {
    return {reset_field("x_position"), reset_field("z_distance_from_origin"), step_field("x_velocity"),
            step_field("reward_forward"), step_field("reward_ctrl"), step_field("reward_survive")};
  }
  static core::Spec spec(const core::Options& o) {
    const std::shared_ptr<const mjModel> m = model_of(o);
    check_model(*m, 3, 0, "a planar walker reads its x, z and angle, qpos[0:3]");
    const int64_t skip = o.flag("exclude_current_positions_from_observation");
    return simulation_spec(*m, m->nq + m->nv - skip, info(), Health::kStepCostNs * o.integer("frame_skip"));
  }

  PlanarWalker(int n, const core::Options& o)
      : MujocoEnv(n, o, info()),
        health_(o),
        forward_reward_weight_(o.get("forward_reward_weight")),
        ctrl_cost_weight_(o.get("ctrl_cost_weight")),
        healthy_reward_(o.get("healthy_reward")),
        reset_noise_scale_(o.get("reset_noise_scale")),
        terminate_when_unhealthy_(o.flag("terminate_when_unhealthy")),
        skip_(o.flag("exclude_current_positions_from_observation") ? 1 : 0) {}

  void reset(int i, core::Pcg64& rng) {
    reset_with_noise(i, rng, reset_noise_scale_, VelocityNoise::kUniform);
    write_position(sim_.data(i), info_.row(i));
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    const mjData& d = sim_.data(i);
    const double x_before = d.qpos[0];
    sim_.do_simulation(i, action);
    const double x_velocity = (d.qpos[0] - x_before) / sim_.dt();
    const bool healthy = health_(sim_.model(), d);
    const double forward_reward = forward_reward_weight_ * x_velocity;
    const double healthy_reward = static_cast<double>(healthy) * healthy_reward_;  // (-0.0 when unhealthy and < 0)
    const double rewards = forward_reward + healthy_reward;
    const double ctrl_cost = ctrl_cost_weight_ * sum_of_squares(action, sim_.model().nu);
    double* info = info_.row(i);
    write_position(d, info);
    info[2] = x_velocity;
    info[3] = forward_reward;
    info[4] = -ctrl_cost;
    info[5] = healthy_reward;
    return {rewards - ctrl_cost, !healthy && terminate_when_unhealthy_};
  }

  void write_obs(int i, double* out) const {
    const mjData& d = sim_.data(i);
    const int nq = sim_.nq(), nv = sim_.nv();
    out = std::copy(d.qpos + skip_, d.qpos + nq, out);
    for (int k = 0; k < nv; ++k) out[k] = clip(d.qvel[k], -10.0, 10.0);
  }


 private:
  // x_position, z_distance_from_origin
  void write_position(const mjData& d, double* info) const {
    info[0] = d.qpos[0];
    info[1] = d.qpos[1] - sim_.init_qpos()[1];
  }

  const Health health_;
  const double forward_reward_weight_, ctrl_cost_weight_, healthy_reward_, reset_noise_scale_;
  const bool terminate_when_unhealthy_;
  const int skip_;
};

// Hopper's is_healthy: every state component past qpos[:2] strictly inside healthy_state_range, z and the
// angle (qpos[1], qpos[2]) strictly inside theirs.
struct HopperHealth {
  static constexpr double kStepCostNs = 11e3;  // per frame (RK4), measured with fastvec._core.loop_rate
  explicit HopperHealth(const core::Options& o)
      : state_(o.range("healthy_state_range")), z_(o.range("healthy_z_range")), angle_(o.range("healthy_angle_range")) {}
  bool operator()(const mjModel& m, const mjData& d) const {
    bool healthy_state = true;
    for (int64_t k = 2; k < m.nq; ++k) healthy_state &= state_[0] < d.qpos[k] && d.qpos[k] < state_[1];
    for (int64_t k = 0; k < m.nv; ++k) healthy_state &= state_[0] < d.qvel[k] && d.qvel[k] < state_[1];
    const double z = d.qpos[1], angle = d.qpos[2];
    return healthy_state && z_[0] < z && z < z_[1] && angle_[0] < angle && angle < angle_[1];
  }
  std::array<double, 2> state_, z_, angle_;
};

// Walker2d's is_healthy: z and the angle (qpos[1], qpos[2]) strictly inside their ranges.
struct Walker2dHealth {
  static constexpr double kStepCostNs = 16e3;
  explicit Walker2dHealth(const core::Options& o) : z_(o.range("healthy_z_range")), angle_(o.range("healthy_angle_range")) {}
  bool operator()(const mjModel&, const mjData& d) const {
    const double z = d.qpos[1], angle = d.qpos[2];
    return z_[0] < z && z < z_[1] && angle_[0] < angle && angle < angle_[1];
  }
  std::array<double, 2> z_, angle_;
};

class Hopper : public PlanarWalker<HopperHealth> {
 public:
  using PlanarWalker::PlanarWalker;
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    const double inf = std::numeric_limits<double>::infinity();
    return with_simulation_options(
        "hopper.xml", 4,
        {{"forward_reward_weight", K::kReal, 1.0},
         {"ctrl_cost_weight", K::kReal, 1e-3},
         {"healthy_reward", K::kReal, 1.0},
         {"terminate_when_unhealthy", K::kBool, 1},
         {.name = "healthy_state_range", .kind = K::kRange, .fallback = -100.0, .fallback_high = 100.0},
         {.name = "healthy_z_range", .kind = K::kRange, .fallback = 0.7, .fallback_high = inf},
         {.name = "healthy_angle_range", .kind = K::kRange, .fallback = -0.2, .fallback_high = 0.2},
         noise_option(5e-3),
         {"exclude_current_positions_from_observation", K::kBool, 1}});
  }
};

class Walker2d : public PlanarWalker<Walker2dHealth> {
 public:
  using PlanarWalker::PlanarWalker;
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return with_simulation_options(
        "walker2d_v5.xml", 4,
        {{"forward_reward_weight", K::kReal, 1.0},
         {"ctrl_cost_weight", K::kReal, 1e-3},
         {"healthy_reward", K::kReal, 1.0},
         {"terminate_when_unhealthy", K::kBool, 1},
         {.name = "healthy_z_range", .kind = K::kRange, .fallback = 0.8, .fallback_high = 2.0},
         {.name = "healthy_angle_range", .kind = K::kRange, .fallback = -1.0, .fallback_high = 1.0},
         noise_option(5e-3),
         {"exclude_current_positions_from_observation", K::kBool, 1}});
  }
};

}  // namespace fastvec::envs::mujoco
