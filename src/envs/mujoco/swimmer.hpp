#pragma once
// Swimmer-v5, a port of gymnasium/envs/mujoco/swimmer_v5.py.

#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::mujoco {

class Swimmer : public MujocoEnv {
 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return with_simulation_options("swimmer.xml", 4,
                                   {{"forward_reward_weight", K::kReal, 1.0},
                                    {"ctrl_cost_weight", K::kReal, 1e-4},
                                    noise_option(0.1),
                                    {"exclude_current_positions_from_observation", K::kBool, 1}});
  }
  static std::vector<core::InfoField> info() {
    return {reset_field("x_position"), reset_field("y_position"), reset_field("distance_from_origin"),
            step_field("x_velocity"),  step_field("y_velocity"),  step_field("reward_forward"),
            step_field("reward_ctrl")};
  }
  static core::Spec spec(const core::Options& o) {
    const std::shared_ptr<const mjModel> m = model_of(o);
    check_model(*m, 2, 0, "Swimmer reads its x and y positions, qpos[0:2]");
    const int64_t skip = 2 * o.flag("exclude_current_positions_from_observation");
    return simulation_spec(*m, m->nq + m->nv - skip, info(), 6e3 * o.integer("frame_skip"));
  }

  Swimmer(int n, const core::Options& o)
      : MujocoEnv(n, o, info()),
        forward_reward_weight_(o.get("forward_reward_weight")),
        ctrl_cost_weight_(o.get("ctrl_cost_weight")),
        reset_noise_scale_(o.get("reset_noise_scale")),
        skip_(o.flag("exclude_current_positions_from_observation") ? 2 : 0) {}

  void reset(int i, core::Pcg64& rng) {
    reset_with_noise(i, rng, reset_noise_scale_, VelocityNoise::kUniform);
    write_position(sim_.data(i).qpos, info_.row(i));
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    const mjData& d = sim_.data(i);
    const double before[2] = {d.qpos[0], d.qpos[1]};
    sim_.do_simulation(i, action);
    const double after[2] = {d.qpos[0], d.qpos[1]};
    const double dt = sim_.dt();
    const double x_velocity = (after[0] - before[0]) / dt, y_velocity = (after[1] - before[1]) / dt;
    const double forward_reward = forward_reward_weight_ * x_velocity;
    const double ctrl_cost = ctrl_cost_weight_ * sum_of_squares(action, sim_.model().nu);
    double* info = info_.row(i);
    write_position(after, info);
    info[3] = x_velocity;
    info[4] = y_velocity;
    info[5] = forward_reward;
    info[6] = -ctrl_cost;
    return {forward_reward - ctrl_cost, false};
  }

  void write_obs(int i, double* out) const {
    const mjData& d = sim_.data(i);
    out = std::copy(d.qpos + skip_, d.qpos + sim_.nq(), out);
    std::copy(d.qvel, d.qvel + sim_.nv(), out);
  }

 private:
  // x_position, y_position, distance_from_origin (np.linalg.norm of the two)
  static void write_position(const double* xy, double* info) {
    info[0] = xy[0];
    info[1] = xy[1];
    info[2] = norm(xy, 2);
  }

  const double forward_reward_weight_, ctrl_cost_weight_, reset_noise_scale_;
  const int skip_;
};

}  // namespace fastvec::envs::mujoco
