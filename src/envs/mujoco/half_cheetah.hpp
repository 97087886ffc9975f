#pragma once
// HalfCheetah-v5, a port of gymnasium/envs/mujoco/half_cheetah_v5.py.

#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::mujoco {

class HalfCheetah : public MujocoEnv {
 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return with_simulation_options("half_cheetah.xml", 5,
                                   {{"forward_reward_weight", K::kReal, 1.0},
                                    {"ctrl_cost_weight", K::kReal, 0.1},
                                    noise_option(0.1),
                                    {"exclude_current_positions_from_observation", K::kBool, 1}});
  }
  static std::vector<core::InfoField> info() {
    return {reset_field("x_position"), step_field("x_velocity"), step_field("reward_forward"),
            step_field("reward_ctrl")};
  }
  static core::Spec spec(const core::Options& o) {
    const std::shared_ptr<const mjModel> m = model_of(o);
    check_model(*m, 1, 0, "HalfCheetah reads its x position, qpos[0]");
    const int64_t skip = o.flag("exclude_current_positions_from_observation");
    return simulation_spec(*m, m->nq + m->nv - skip, info(), 4e3 * o.integer("frame_skip"));
  }

  HalfCheetah(int n, const core::Options& o)
      : MujocoEnv(n, o, info()),
        forward_reward_weight_(o.get("forward_reward_weight")),
        ctrl_cost_weight_(o.get("ctrl_cost_weight")),
        reset_noise_scale_(o.get("reset_noise_scale")),
        skip_(o.flag("exclude_current_positions_from_observation") ? 1 : 0) {}

  void reset(int i, core::Pcg64& rng) {
    reset_with_noise(i, rng, reset_noise_scale_, VelocityNoise::kNormal);
    info_.row(i)[0] = sim_.data(i).qpos[0];  // x_position
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    const mjData& d = sim_.data(i);
    const double x_before = d.qpos[0];
    sim_.do_simulation(i, action);
    const double x_velocity = (d.qpos[0] - x_before) / sim_.dt();
    const double forward_reward = forward_reward_weight_ * x_velocity;
    const double ctrl_cost = ctrl_cost_weight_ * sum_of_squares(action, sim_.model().nu);
    double* info = info_.row(i);
    info[0] = d.qpos[0];
    info[1] = x_velocity;
    info[2] = forward_reward;
    info[3] = -ctrl_cost;
    return {forward_reward - ctrl_cost, false};
  }

  void write_obs(int i, double* out) const {
    const mjData& d = sim_.data(i);
    out = std::copy(d.qpos + skip_, d.qpos + sim_.nq(), out);
    std::copy(d.qvel, d.qvel + sim_.nv(), out);
  }

 private:
  const double forward_reward_weight_, ctrl_cost_weight_, reset_noise_scale_;
  const int skip_;
};

}  // namespace fastvec::envs::mujoco
