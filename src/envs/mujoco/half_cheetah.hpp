#pragma once
// HalfCheetah-v5, a port of gymnasium/envs/mujoco/half_cheetah_v5.py.

#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::mujoco {

class HalfCheetah {
 public:
  using Obs = double;
  using Action = double;
  using Reward = double;

  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return with_simulation_options("half_cheetah.xml", 5,
                                   {{"forward_reward_weight", K::kReal, 1.0},
                                    {"ctrl_cost_weight", K::kReal, 0.1},
                                    {"reset_noise_scale", K::kReal, 0.1},
                                    {"exclude_current_positions_from_observation", K::kBool, 1}});
  }
  static std::vector<core::InfoField> info() {
    return {reset_field("x_position"), step_field("x_velocity"), step_field("reward_forward"), step_field("reward_ctrl")};
  }
  static core::Spec spec(const core::Options& o) {
    const std::shared_ptr<const mjModel> m = load_model(o.text("xml_file"));
    const int64_t skip = o.flag("exclude_current_positions_from_observation");
    return simulation_spec(*m, m->nq + m->nv - skip, info(), 4e3 * o.integer("frame_skip"));
  }

  HalfCheetah(int n, const core::Options& o)
      : sim_(n, o),
        info_(n, info()),
        forward_reward_weight_(o.get("forward_reward_weight")),
        ctrl_cost_weight_(o.get("ctrl_cost_weight")),
        reset_noise_scale_(o.get("reset_noise_scale")),
        skip_(o.flag("exclude_current_positions_from_observation") ? 1 : 0),
        qpos_(sim_.nq()),
        qvel_(sim_.nv()) {}

  void reset(int i, core::Pcg64& rng) {
    sim_.reset_data(i);
    const double s = reset_noise_scale_;
    Simulation::add_uniform(rng, sim_.init_qpos(), -s, s, sim_.nq(), qpos_.data());
    Simulation::add_normal(rng, sim_.init_qvel(), s, sim_.nv(), qvel_.data());
    sim_.set_state(i, qpos_.data(), qvel_.data());
    double* info = info_.row(i);
    info[0] = sim_.data(i).qpos[0];  // x_position
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    const mjData& d = sim_.data(i);
    const double x_before = d.qpos[0];
    sim_.do_simulation(i, action);
    const double x_after = d.qpos[0];
    const double x_velocity = (x_after - x_before) / sim_.dt();
    const double forward_reward = forward_reward_weight_ * x_velocity;
    const double ctrl_cost = ctrl_cost_weight_ * sum_of_squares(action, sim_.model().nu);
    double* info = info_.row(i);
    info[0] = x_after;
    info[1] = x_velocity;
    info[2] = forward_reward;
    info[3] = -ctrl_cost;
    return {forward_reward - ctrl_cost, false};
  }

  void write_obs(int i, double* out) const {
    const mjData& d = sim_.data(i);
    const int nq = sim_.nq(), nv = sim_.nv();
    std::copy(d.qpos + skip_, d.qpos + nq, out);
    std::copy(d.qvel, d.qvel + nv, out + nq - skip_);
  }

  void write_info(int i, std::byte* out) const noexcept { info_.write(i, out); }

 private:
  Simulation sim_;
  InfoRows info_;
  const double forward_reward_weight_, ctrl_cost_weight_, reset_noise_scale_;
  const int skip_;
  std::vector<double> qpos_, qvel_;  // reset scratch
};

}  // namespace fastvec::envs::mujoco
