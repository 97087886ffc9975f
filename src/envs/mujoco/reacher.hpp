#pragma once
// Reacher-v5 and Pusher-v5, ports of gymnasium/envs/mujoco/reacher_v5.py and pusher_v5.py: arms rewarded for
// bringing their fingertip to a target (Reacher) or an object to a goal (Pusher).

#include <array>

#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::mujoco {

class Reacher : public MujocoEnv {
 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return with_simulation_options("reacher.xml", 2,
                                   {{"reward_dist_weight", K::kReal, 1.0}, {"reward_control_weight", K::kReal, 1.0}});
  }
  static std::vector<core::InfoField> info() { return {step_field("reward_dist"), step_field("reward_ctrl")}; }
  static core::Spec spec(const core::Options& o) {
    const std::shared_ptr<const mjModel> m = model_of(o);
    check_model(*m, 4, 2, "Reacher's model has two arm joints and a two-coordinate target");
    return simulation_spec(*m, 2 + 2 + (m->nq - 2) + 2 + 2, info(), 5e3 * o.integer("frame_skip"));
  }

  Reacher(int n, const core::Options& o)
      : MujocoEnv(n, o, info()),
        reward_dist_weight_(o.get("reward_dist_weight")),
        reward_control_weight_(o.get("reward_control_weight")),
        fingertip_(sim_.body("fingertip")),
        target_(sim_.body("target")) {}

  void reset(int i, core::Pcg64& rng) {
    sim_.reset_data(i);
    const int nq = sim_.nq(), nv = sim_.nv();
    Simulation::add_uniform(rng, sim_.init_qpos(), -0.1, 0.1, nq, qpos_.data());
    double goal[2];
    do {
      goal[0] = rng.uniform(-0.2, 0.2);
      goal[1] = rng.uniform(-0.2, 0.2);
    } while (!(norm(goal, 2) < 0.2));
    qpos_[nq - 2] = goal[0];
    qpos_[nq - 1] = goal[1];
    Simulation::add_uniform(rng, sim_.init_qvel(), -0.005, 0.005, nv, qvel_.data());
    qvel_[nv - 2] = qvel_[nv - 1] = 0.0;
    sim_.set_state(i, qpos_.data(), qvel_.data());
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    sim_.do_simulation(i, action);
    const std::array<double, 3> vec = fingertip_to_target(sim_.data(i));
    const double reward_dist = -norm(vec.data(), 3) * reward_dist_weight_;
    const double reward_ctrl = -sum_of_squares(action, sim_.model().nu) * reward_control_weight_;
    double* info = info_.row(i);
    info[0] = reward_dist;
    info[1] = reward_ctrl;
    return {reward_dist + reward_ctrl, false};
  }

  // cos(qpos[:2]), sin(qpos[:2]), qpos[2:], qvel[:2], (fingertip - target)[:2]
  void write_obs(int i, double* out) const {
    const mjData& d = sim_.data(i);
    *out++ = std::cos(d.qpos[0]);
    *out++ = std::cos(d.qpos[1]);
    *out++ = std::sin(d.qpos[0]);
    *out++ = std::sin(d.qpos[1]);
    out = std::copy(d.qpos + 2, d.qpos + sim_.nq(), out);
    *out++ = d.qvel[0];
    *out++ = d.qvel[1];
    const std::array<double, 3> vec = fingertip_to_target(d);
    out[0] = vec[0];
    out[1] = vec[1];
  }

 private:
  // get_body_com("fingertip") - get_body_com("target")
  std::array<double, 3> fingertip_to_target(const mjData& d) const {
    const double* f = d.xpos + 3 * fingertip_;
    const double* t = d.xpos + 3 * target_;
    return {f[0] - t[0], f[1] - t[1], f[2] - t[2]};
  }

  const double reward_dist_weight_, reward_control_weight_;
  const int fingertip_, target_;
};

class Pusher : public MujocoEnv {
 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return with_simulation_options("pusher_v5.xml", 5,
                                   {{"reward_near_weight", K::kReal, 0.5},
                                    {"reward_dist_weight", K::kReal, 1.0},
                                    {"reward_control_weight", K::kReal, 0.1}});
  }
  static std::vector<core::InfoField> info() {
    return {step_field("reward_dist"), step_field("reward_ctrl"), step_field("reward_near")};
  }
  static core::Spec spec(const core::Options& o) {
    const std::shared_ptr<const mjModel> m = model_of(o);
    check_model(*m, 11, 7, "Pusher's model has seven arm joints, an object and a goal");
    return simulation_spec(*m, 7 + 7 + 3 * 3, info(), 4.4e3 * o.integer("frame_skip"));
  }

  Pusher(int n, const core::Options& o)
      : MujocoEnv(n, o, info()),
        reward_near_weight_(o.get("reward_near_weight")),
        reward_dist_weight_(o.get("reward_dist_weight")),
        reward_control_weight_(o.get("reward_control_weight")),
        tips_arm_(sim_.body("tips_arm")),
        object_(sim_.body("object")),
        goal_(sim_.body("goal")) {}

  void reset(int i, core::Pcg64& rng) {
    sim_.reset_data(i);
    const int nq = sim_.nq(), nv = sim_.nv();
    std::copy(sim_.init_qpos(), sim_.init_qpos() + nq, qpos_.begin());
    double cylinder[2];
    do {
      cylinder[0] = rng.uniform(-0.3, 0.0);
      cylinder[1] = rng.uniform(-0.2, 0.2);
    } while (!(norm(cylinder, 2) > 0.17));  // its distance to the goal, at (0, 0)
    qpos_[nq - 4] = cylinder[0];
    qpos_[nq - 3] = cylinder[1];
    qpos_[nq - 2] = qpos_[nq - 1] = 0.0;
    Simulation::add_uniform(rng, sim_.init_qvel(), -0.005, 0.005, nv, qvel_.data());
    for (int k = nv - 4; k < nv; ++k) qvel_[k] = 0.0;
    sim_.set_state(i, qpos_.data(), qvel_.data());
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    sim_.do_simulation(i, action);
    const mjData& d = sim_.data(i);
    const std::array<double, 3> vec_1 = between(d, tips_arm_, object_), vec_2 = between(d, goal_, object_);
    const double reward_near = -norm(vec_1.data(), 3) * reward_near_weight_;
    const double reward_dist = -norm(vec_2.data(), 3) * reward_dist_weight_;
    const double reward_ctrl = -sum_of_squares(action, sim_.model().nu) * reward_control_weight_;
    double* info = info_.row(i);
    info[0] = reward_dist;
    info[1] = reward_ctrl;
    info[2] = reward_near;
    return {reward_dist + reward_ctrl + reward_near, false};
  }

  // qpos[:7], qvel[:7], the centres of tips_arm, object and goal
  void write_obs(int i, double* out) const {
    const mjData& d = sim_.data(i);
    out = std::copy(d.qpos, d.qpos + 7, out);
    out = std::copy(d.qvel, d.qvel + 7, out);
    for (int b : {tips_arm_, object_, goal_}) out = std::copy(d.xpos + 3 * b, d.xpos + 3 * b + 3, out);
  }

 private:
  // get_body_com(to) - get_body_com(from)
  static std::array<double, 3> between(const mjData& d, int from, int to) {
    const double* a = d.xpos + 3 * to;
    const double* b = d.xpos + 3 * from;
    return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
  }

  const double reward_near_weight_, reward_dist_weight_, reward_control_weight_;
  const int tips_arm_, object_, goal_;
};

}  // namespace fastvec::envs::mujoco
