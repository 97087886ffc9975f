#pragma once
// InvertedPendulum-v5 and InvertedDoublePendulum-v5, ports of gymnasium/envs/mujoco/inverted_pendulum_v5.py
// and inverted_double_pendulum_v5.py.

#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::mujoco {

class InvertedPendulum : public MujocoEnv {
 public:
  static core::OptionTable options() {
    return with_simulation_options("inverted_pendulum.xml", 2, {noise_option(0.01)});
  }
  // reward_survive is a Python int in gymnasium's info: int64 in its vector envs.
  static std::vector<core::InfoField> info() {
    return {{.name = "reward_survive", .type = core::InfoField::Type::kInt64, .at_reset = false}};
  }
  static core::Spec spec(const core::Options& o) {
    const std::shared_ptr<const mjModel> m = model_of(o);
    check_model(*m, 2, 0, "the pendulum's angle is qpos[1]");
    return simulation_spec(*m, m->nq + m->nv, info(), 4e3 * o.integer("frame_skip"));
  }

  InvertedPendulum(int n, const core::Options& o)
      : MujocoEnv(n, o, info()), reset_noise_scale_(o.get("reset_noise_scale")) {}

  void reset(int i, core::Pcg64& rng) { reset_with_noise(i, rng, reset_noise_scale_, VelocityNoise::kUniform); }

  core::BasicStepResult<double> step(int i, const Action* action) {
    sim_.do_simulation(i, action);
    const mjData& d = sim_.data(i);
    bool finite = true;
    for (int k = 0; k < sim_.nq(); ++k) finite &= std::isfinite(d.qpos[k]);
    for (int k = 0; k < sim_.nv(); ++k) finite &= std::isfinite(d.qvel[k]);
    const bool terminated = !finite || std::fabs(d.qpos[1]) > 0.2;
    const int64_t survive = terminated ? 0 : 1;  // reward_survive: an int64 in the info row's slot
    std::memcpy(info_.row(i), &survive, sizeof(survive));
    return {static_cast<double>(survive), terminated};
  }

  void write_obs(int i, double* out) const {
    const mjData& d = sim_.data(i);
    out = std::copy(d.qpos, d.qpos + sim_.nq(), out);
    std::copy(d.qvel, d.qvel + sim_.nv(), out);
  }

 private:
  const double reset_noise_scale_;
};

class InvertedDoublePendulum : public MujocoEnv {
 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return with_simulation_options("inverted_double_pendulum.xml", 5,
                                   {{"healthy_reward", K::kReal, 10.0}, noise_option(0.1)});
  }
  static std::vector<core::InfoField> info() {
    return {step_field("reward_survive"), step_field("distance_penalty"), step_field("velocity_penalty")};
  }
  static core::Spec spec(const core::Options& o) {
    const std::shared_ptr<const mjModel> m = model_of(o);
    check_model(*m, 1, 3, "the double pendulum reads qpos[0] and qvel[1:3]");
    if (m->nsite < 1) throw std::invalid_argument("xml_file: the double pendulum's tip is site 0, but the model has none");
    return simulation_spec(*m, 1 + 2 * (m->nq - 1) + m->nv + 1, info(), 4.6e3 * o.integer("frame_skip"));
  }

  InvertedDoublePendulum(int n, const core::Options& o)
      : MujocoEnv(n, o, info()),
        healthy_reward_(o.get("healthy_reward")),
        reset_noise_scale_(o.get("reset_noise_scale")) {}

  void reset(int i, core::Pcg64& rng) { reset_with_noise(i, rng, reset_noise_scale_, VelocityNoise::kNormal); }

  core::BasicStepResult<double> step(int i, const Action* action) {
    sim_.do_simulation(i, action);
    const mjData& d = sim_.data(i);
    const double x = d.site_xpos[0], y = d.site_xpos[2];
    const bool terminated = y <= 1;
    const double v1 = d.qvel[1], v2 = d.qvel[2];
    const double dist_penalty = 0.01 * scalar_pow(x, 2) + scalar_pow(y - 2, 2);
    const double vel_penalty = 0.001 * scalar_pow(v1, 2) + 0.005 * scalar_pow(v2, 2);
    const double alive_bonus = healthy_reward_ * static_cast<double>(!terminated);
    double* info = info_.row(i);
    info[0] = alive_bonus;
    info[1] = -dist_penalty;
    info[2] = -vel_penalty;
    return {alive_bonus - dist_penalty - vel_penalty, terminated};
  }

  // qpos[:1], sin(qpos[1:]), cos(qpos[1:]), clip(qvel, -10, 10), clip(qfrc_constraint, -10, 10)[:1]
  void write_obs(int i, double* out) const {
    const mjData& d = sim_.data(i);
    const int nq = sim_.nq();
    *out++ = d.qpos[0];
    for (int k = 1; k < nq; ++k) *out++ = std::sin(d.qpos[k]);
    for (int k = 1; k < nq; ++k) *out++ = std::cos(d.qpos[k]);
    for (int k = 0; k < sim_.nv(); ++k) *out++ = clip(d.qvel[k], -10.0, 10.0);
    *out = clip(d.qfrc_constraint[0], -10.0, 10.0);
  }

 private:
  const double healthy_reward_, reset_noise_scale_;
};

}  // namespace fastvec::envs::mujoco
