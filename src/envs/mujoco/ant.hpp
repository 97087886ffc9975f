#pragma once
// Ant-v5, a port of gymnasium/envs/mujoco/ant_v5.py.

#include <array>
#include <climits>

#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::mujoco {

class Ant : public MujocoEnv {
 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return with_simulation_options(
        "ant.xml", 5,
        {{"forward_reward_weight", K::kReal, 1.0},
         {"ctrl_cost_weight", K::kReal, 0.5},
         {"contact_cost_weight", K::kReal, 5e-4},
         {"healthy_reward", K::kReal, 1.0},
         {.name = "main_body", .kind = K::kName, .text_fallback = "index:1"},
         {"terminate_when_unhealthy", K::kBool, 1},
         {.name = "healthy_z_range", .kind = K::kRange, .fallback = 0.2, .fallback_high = 1.0},
         {.name = "contact_force_range", .kind = K::kRange, .fallback = -1.0, .fallback_high = 1.0},
         noise_option(0.1),
         {"exclude_current_positions_from_observation", K::kBool, 1},
         {"include_cfrc_ext_in_observation", K::kBool, 1}});
  }
  static std::vector<core::InfoField> info() {
    return {reset_field("x_position"),    reset_field("y_position"),  reset_field("distance_from_origin"),
            step_field("x_velocity"),     step_field("y_velocity"),   step_field("reward_forward"),
            step_field("reward_ctrl"),    step_field("reward_contact"), step_field("reward_survive")};
  }
  static core::Spec spec(const core::Options& o) {
    const std::shared_ptr<const mjModel> m = model_of(o);
    check_model(*m, 3, 0, "Ant reads its x, y and z, qpos[0:3]");
    const int64_t size = m->nq + m->nv - 2 * o.flag("exclude_current_positions_from_observation") +
                         (m->nbody - 1) * 6 * o.flag("include_cfrc_ext_in_observation");
    return simulation_spec(*m, size, info(), 30e3 * o.integer("frame_skip"));
  }

  Ant(int n, const core::Options& o)
      : MujocoEnv(n, o, info()),
        forward_reward_weight_(o.get("forward_reward_weight")),
        ctrl_cost_weight_(o.get("ctrl_cost_weight")),
        contact_cost_weight_(o.get("contact_cost_weight")),
        healthy_reward_(o.get("healthy_reward")),
        reset_noise_scale_(o.get("reset_noise_scale")),
        healthy_z_(o.range("healthy_z_range")),
        contact_force_(o.range("contact_force_range")),
        main_body_(main_body(sim_, o.text("main_body"))),
        terminate_when_unhealthy_(o.flag("terminate_when_unhealthy")),
        skip_(o.flag("exclude_current_positions_from_observation") ? 2 : 0),
        cfrc_ext_(o.flag("include_cfrc_ext_in_observation")) {}

  void reset(int i, core::Pcg64& rng) {
    reset_with_noise(i, rng, reset_noise_scale_, VelocityNoise::kNormal);
    write_position(sim_.data(i), info_.row(i));
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    const mjData& d = sim_.data(i);
    const mjModel& m = sim_.model();
    const double before[2] = {d.xpos[3 * main_body_], d.xpos[3 * main_body_ + 1]};
    sim_.do_simulation(i, action);
    const double dt = sim_.dt();
    const double x_velocity = (d.xpos[3 * main_body_] - before[0]) / dt;
    const double y_velocity = (d.xpos[3 * main_body_ + 1] - before[1]) / dt;
    const bool healthy = is_healthy(d);
    const double forward_reward = x_velocity * forward_reward_weight_;
    const double healthy_reward = static_cast<double>(healthy) * healthy_reward_;
    const double rewards = forward_reward + healthy_reward;
    const double ctrl_cost = ctrl_cost_weight_ * sum_of_squares(action, m.nu);
    const double contact_cost =
        contact_cost_weight_ * sum_of_clipped_squares(d.cfrc_ext, 6 * m.nbody, contact_force_[0], contact_force_[1]);
    const double costs = ctrl_cost + contact_cost;
    double* info = info_.row(i);
    write_position(d, info);
    info[3] = x_velocity;
    info[4] = y_velocity;
    info[5] = forward_reward;
    info[6] = -ctrl_cost;
    info[7] = -contact_cost;
    info[8] = healthy_reward;
    return {rewards - costs, !healthy && terminate_when_unhealthy_};
  }

  void write_obs(int i, double* out) const {
    const mjData& d = sim_.data(i);
    out = std::copy(d.qpos + skip_, d.qpos + sim_.nq(), out);
    out = std::copy(d.qvel, d.qvel + sim_.nv(), out);
    if (!cfrc_ext_) return;
    const int64_t n = 6 * sim_.model().nbody;
    for (int64_t k = 6; k < n; ++k) *out++ = clip(d.cfrc_ext[k], contact_force_[0], contact_force_[1]);
  }


 private:
  // x_position, y_position, distance_from_origin (np.linalg.norm(qpos[0:2]))
  static void write_position(const mjData& d, double* info) {
    info[0] = d.qpos[0];
    info[1] = d.qpos[1];
    info[2] = norm(d.qpos, 2);
  }

  // np.isfinite(state_vector()).all() and min_z <= qpos[2] <= max_z
  bool is_healthy(const mjData& d) const {
    bool finite = true;
    for (int k = 0; k < sim_.nq(); ++k) finite &= std::isfinite(d.qpos[k]);
    for (int k = 0; k < sim_.nv(); ++k) finite &= std::isfinite(d.qvel[k]);
    return finite && healthy_z_[0] <= d.qpos[2] && d.qpos[2] <= healthy_z_[1];
  }

  // gymnasium's data.body(main_body): a body index ("index:<n>", n >= 0) or a body name ("name:<s>").
  static int main_body(const Simulation& sim, const std::string& body) {
    if (body.starts_with("name:")) return sim.body(body.c_str() + 5, "main_body");
    const std::string digits = body.substr(body.find(':') + 1);
    const bool index = body.starts_with("index:") && !digits.empty() &&
                       digits.find_first_not_of("0123456789") == std::string::npos;
    if (!index) throw std::invalid_argument("main_body must be a body index or name, got '" + body + "'");
    const long long id = digits.size() > 18 ? LLONG_MAX : std::stoll(digits);
    if (id >= sim.model().nbody)
      throw std::invalid_argument("main_body " + digits + " is out of range: the model has " +
                                  std::to_string(sim.model().nbody) + " bodies");
    return static_cast<int>(id);
  }

  const double forward_reward_weight_, ctrl_cost_weight_, contact_cost_weight_, healthy_reward_, reset_noise_scale_;
  const std::array<double, 2> healthy_z_, contact_force_;
  const int main_body_;
  const bool terminate_when_unhealthy_;
  const int skip_;
  const bool cfrc_ext_;
};

}  // namespace fastvec::envs::mujoco
