#pragma once
// Humanoid-v5 and HumanoidStandup-v5, ports of gymnasium/envs/mujoco/humanoid_v5.py and humanoidstandup_v5.py:
// the same body and observation, rewarded for walking forward or for standing up.

#include <array>
#include <limits>

#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::mujoco {

// What Humanoid and HumanoidStandup share: the observation (positions, velocities, and as asked the bodies'
// com-based inertia and velocity, the actuator forces and the external contact forces), the reset and the
// tendon infos; Task adds the reward, the termination and the rest of the info.
template <class Task>
class HumanoidBody : public MujocoEnv {
 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    core::OptionTable own = Task::task_options();
    own.insert(own.end(), {noise_option(1e-2),
                           {"exclude_current_positions_from_observation", K::kBool, 1},
                           {"include_cinert_in_observation", K::kBool, 1},
                           {"include_cvel_in_observation", K::kBool, 1},
                           {"include_qfrc_actuator_in_observation", K::kBool, 1},
                           {"include_cfrc_ext_in_observation", K::kBool, 1}});
    return with_simulation_options(Task::kXml, 5, own);
  }
  static core::Spec spec(const core::Options& o) {
    const std::shared_ptr<const mjModel> m = model_of(o);
    check_model(*m, 3, o.flag("include_qfrc_actuator_in_observation") ? 6 : 0,
                "a humanoid reads its x, y and z, qpos[0:3], and its actuator forces are qfrc_actuator[6:]");
    const int64_t bodies = m->nbody - 1;
    const int64_t size = m->nq + m->nv - 2 * o.flag("exclude_current_positions_from_observation") +
                         bodies * 10 * o.flag("include_cinert_in_observation") +
                         bodies * 6 * o.flag("include_cvel_in_observation") +
                         (m->nv - 6) * o.flag("include_qfrc_actuator_in_observation") +
                         bodies * 6 * o.flag("include_cfrc_ext_in_observation");
    return simulation_spec(*m, size, Task::info(m->ntendon), Task::kStepCostNs * o.integer("frame_skip"));
  }

  HumanoidBody(int n, const core::Options& o)
      : MujocoEnv(n, o, Task::info(model_of(o)->ntendon)),
        task_(o, sim_),
        reset_noise_scale_(o.get("reset_noise_scale")),
        skip_(o.flag("exclude_current_positions_from_observation") ? 2 : 0),
        cinert_(o.flag("include_cinert_in_observation")),
        cvel_(o.flag("include_cvel_in_observation")),
        qfrc_actuator_(o.flag("include_qfrc_actuator_in_observation")),
        cfrc_ext_(o.flag("include_cfrc_ext_in_observation")) {}

  void reset(int i, core::Pcg64& rng) {
    reset_with_noise(i, rng, reset_noise_scale_, VelocityNoise::kUniform);
    task_.reset_info(sim_, sim_.data(i), info_.row(i));
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    return task_.step(sim_, i, action, info_.row(i));
  }

  void write_obs(int i, double* out) const {
    const mjData& d = sim_.data(i);
    const int64_t nbody = sim_.model().nbody;
    out = std::copy(d.qpos + skip_, d.qpos + sim_.nq(), out);
    out = std::copy(d.qvel, d.qvel + sim_.nv(), out);
    if (cinert_) out = std::copy(d.cinert + 10, d.cinert + 10 * nbody, out);
    if (cvel_) out = std::copy(d.cvel + 6, d.cvel + 6 * nbody, out);
    if (qfrc_actuator_) out = std::copy(d.qfrc_actuator + 6, d.qfrc_actuator + sim_.nv(), out);
    if (cfrc_ext_) std::copy(d.cfrc_ext + 6, d.cfrc_ext + 6 * nbody, out);
  }

  // The info slots of data.ten_length and data.ten_velocity, from `at`.
  static void write_tendons(const mjModel& m, const mjData& d, double* at) {
    at = std::copy(d.ten_length, d.ten_length + m.ntendon, at);
    std::copy(d.ten_velocity, d.ten_velocity + m.ntendon, at);
  }

 private:
  Task task_;
  const double reset_noise_scale_;
  const int skip_;
  const bool cinert_, cvel_, qfrc_actuator_, cfrc_ext_;
};

// Humanoid's task: walk forward (its mass center's x velocity), stay healthy (the torso's z in range).
class WalkTask {
 public:
  static constexpr const char* kXml = "humanoid.xml";
  static constexpr double kStepCostNs = 30e3;  // per frame
  static core::OptionTable task_options() {
    using K = core::OptionSpec::Kind;
    const double inf = std::numeric_limits<double>::infinity();
    return {{"forward_reward_weight", K::kReal, 1.25},
            {"ctrl_cost_weight", K::kReal, 0.1},
            {"contact_cost_weight", K::kReal, 5e-7},
            {.name = "contact_cost_range", .kind = K::kRange, .fallback = -inf, .fallback_high = 10.0},
            {"healthy_reward", K::kReal, 5.0},
            {"terminate_when_unhealthy", K::kBool, 1},
            {.name = "healthy_z_range", .kind = K::kRange, .fallback = 1.0, .fallback_high = 2.0}};
  }
  static std::vector<core::InfoField> info(int64_t ntendon) {
    return {reset_field("x_position"),        reset_field("y_position"),
            reset_field("tendon_length", ntendon), reset_field("tendon_velocity", ntendon),
            reset_field("distance_from_origin"), step_field("x_velocity"),
            step_field("y_velocity"),         step_field("reward_survive"),
            step_field("reward_forward"),     step_field("reward_ctrl"),
            step_field("reward_contact")};
  }

  WalkTask(const core::Options& o, const Simulation& sim)
      : forward_reward_weight_(o.get("forward_reward_weight")),
        ctrl_cost_weight_(o.get("ctrl_cost_weight")),
        contact_cost_weight_(o.get("contact_cost_weight")),
        healthy_reward_(o.get("healthy_reward")),
        contact_cost_range_(o.range("contact_cost_range")),
        healthy_z_(o.range("healthy_z_range")),
        terminate_when_unhealthy_(o.flag("terminate_when_unhealthy")),
        total_mass_(0.0 + pairwise_sum([&sim](int64_t b) { return sim.model().body_mass[b]; }, 0,
                                       sim.model().nbody)) {}

  void reset_info(const Simulation& sim, const mjData& d, double* info) const {
    const mjModel& m = sim.model();
    info[0] = d.qpos[0];
    info[1] = d.qpos[1];
    HumanoidBody<WalkTask>::write_tendons(m, d, info + 2);
    info[2 + 2 * m.ntendon] = norm(d.qpos, 2);
  }

  core::BasicStepResult<double> step(Simulation& sim, int i, const double* action, double* info) const {
    const mjModel& m = sim.model();
    const mjData& d = sim.data(i);
    const std::array<double, 2> before = mass_center(m, d);
    sim.do_simulation(i, action);
    const std::array<double, 2> after = mass_center(m, d);
    const double dt = sim.dt();
    const double x_velocity = (after[0] - before[0]) / dt, y_velocity = (after[1] - before[1]) / dt;
    const bool healthy = healthy_z_[0] < d.qpos[2] && d.qpos[2] < healthy_z_[1];
    const double forward_reward = forward_reward_weight_ * x_velocity;
    const double healthy_reward = static_cast<double>(healthy) * healthy_reward_;
    const double rewards = forward_reward + healthy_reward;
    const double ctrl_cost = ctrl_cost_weight_ * sum_of_squares(d.ctrl, m.nu);
    const double contact_cost = clip(contact_cost_weight_ * sum_of_squares(d.cfrc_ext, 6 * m.nbody),
                                     contact_cost_range_[0], contact_cost_range_[1]);
    const double costs = ctrl_cost + contact_cost;
    reset_info(sim, d, info);
    double* rest = info + 3 + 2 * m.ntendon;
    rest[0] = x_velocity;
    rest[1] = y_velocity;
    rest[2] = healthy_reward;
    rest[3] = forward_reward;
    rest[4] = -ctrl_cost;
    rest[5] = -contact_cost;
    return {rewards - costs, !healthy && terminate_when_unhealthy_};
  }

 private:
  // humanoid_v5.mass_center: np.einsum("b,bj->j", body_mass, xipos) / body_mass.sum(), its x and y. einsum
  // sums body by body, from 0; the total is numpy's (pairwise) sum.
  std::array<double, 2> mass_center(const mjModel& m, const mjData& d) const {
    double x = 0.0, y = 0.0;
    for (int64_t b = 0; b < m.nbody; ++b) {
      x += m.body_mass[b] * d.xipos[3 * b];
      y += m.body_mass[b] * d.xipos[3 * b + 1];
    }
    return {x / total_mass_, y / total_mass_};
  }

  const double forward_reward_weight_, ctrl_cost_weight_, contact_cost_weight_, healthy_reward_;
  const std::array<double, 2> contact_cost_range_, healthy_z_;
  const bool terminate_when_unhealthy_;
  const double total_mass_;
};

// HumanoidStandup's task: raise the torso (its z over the timestep), never terminated.
class StandupTask {
 public:
  static constexpr const char* kXml = "humanoidstandup.xml";
  static constexpr double kStepCostNs = 65e3;  // per frame
  static core::OptionTable task_options() {
    using K = core::OptionSpec::Kind;
    const double inf = std::numeric_limits<double>::infinity();
    return {{"uph_cost_weight", K::kReal, 1.0},
            {"ctrl_cost_weight", K::kReal, 0.1},
            {"impact_cost_weight", K::kReal, 5e-7},
            {.name = "impact_cost_range", .kind = K::kRange, .fallback = -inf, .fallback_high = 10.0}};
  }
  static std::vector<core::InfoField> info(int64_t ntendon) {
    return {reset_field("x_position"),           reset_field("y_position"),
            reset_field("z_distance_from_origin"), reset_field("tendon_length", ntendon),
            reset_field("tendon_velocity", ntendon), step_field("reward_linup"),
            step_field("reward_quadctrl"),       step_field("reward_impact")};
  }

  // uph_cost_weight is accepted and unused, as in gymnasium's v5 (its reward_linup is not weighted).
  StandupTask(const core::Options& o, const Simulation&)
      : ctrl_cost_weight_(o.get("ctrl_cost_weight")),
        impact_cost_weight_(o.get("impact_cost_weight")),
        impact_cost_range_(o.range("impact_cost_range")) {}

  void reset_info(const Simulation& sim, const mjData& d, double* info) const {
    info[0] = d.qpos[0];
    info[1] = d.qpos[1];
    info[2] = d.qpos[2] - sim.init_qpos()[2];
    HumanoidBody<StandupTask>::write_tendons(sim.model(), d, info + 3);
  }

  core::BasicStepResult<double> step(Simulation& sim, int i, const double* action, double* info) const {
    const mjModel& m = sim.model();
    const mjData& d = sim.data(i);
    sim.do_simulation(i, action);
    const double uph_cost = (d.qpos[2] - 0) / m.opt.timestep;
    const double quad_ctrl_cost = ctrl_cost_weight_ * sum_of_squares(d.ctrl, m.nu);
    const double quad_impact_cost = clip(impact_cost_weight_ * sum_of_squares(d.cfrc_ext, 6 * m.nbody),
                                         impact_cost_range_[0], impact_cost_range_[1]);
    reset_info(sim, d, info);
    double* rest = info + 3 + 2 * m.ntendon;
    rest[0] = uph_cost;
    rest[1] = -quad_ctrl_cost;
    rest[2] = -quad_impact_cost;
    return {uph_cost - quad_ctrl_cost - quad_impact_cost + 1, false};
  }

 private:
  const double ctrl_cost_weight_, impact_cost_weight_;
  const std::array<double, 2> impact_cost_range_;
};

using Humanoid = HumanoidBody<WalkTask>;
using HumanoidStandup = HumanoidBody<StandupTask>;

}  // namespace fastvec::envs::mujoco
