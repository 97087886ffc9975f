#pragma once
// LQR's lqr_2_1 and lqr_6_2: a port of dm_control/suite/lqr.py (LQRLevel). The suite builds the model from the
// environment's RandomState before the task draws from it: each joint's stiffness uniform in [15, 25] and its
// damping uniform in [0, 0], joint by joint. Here the model is lqr.py's _make_model with placeholder values
// (fastvec/dm_control_models.py), and each env, which owns its model, draws them into it when it is seeded.
// An episode ends (discount 0) when the state's norm falls below 1e-6; the time limit is infinite.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "envs/dm_control/dm_control_env.hpp"

namespace fastvec::envs::dm_control::lqr {

template <int kBodies, int kActuators>
class Level {
 public:
  static constexpr const char* kModel = kBodies == 2 ? "lqr_2_1.xml" : "lqr_6_2.xml";
  static constexpr double kTimeLimit = std::numeric_limits<double>::infinity();
  static constexpr double kControlTimestep = 0;
  static constexpr bool kModelPerEnv = true;

  explicit Level(const mjModel& m) : nq_(static_cast<int>(m.nq)), nv_(static_cast<int>(m.nv)) {
    if (m.njnt != kBodies || m.nq != kBodies || m.nv != kBodies || m.nu != kActuators || m.na != 0)
      throw std::invalid_argument("xml_file: the LQR model must have " + std::to_string(kBodies) +
                                  " joints and " + std::to_string(kActuators) + " motors");
  }

  std::vector<core::ObsField> observation() const { return {{"position", {nq_}}, {"velocity", {nv_}}}; }

  // _make_model's draws, body by body: stiffness uniform(15, 25), damping uniform(0, 0).
  void seeded(Physics& p, int i, RandomState& random) const {
    mjModel& m = p.own_model(i);
    for (int j = 0; j < kBodies; ++j) {
      m.jnt_stiffness[j] = random.uniform(15, 25);
      m.dof_damping[m.jnt_dofadr[j]] = random.uniform(0, 0);
    }
  }

  // qpos: a random direction, of norm sqrt(2).
  void initialize_episode(Physics& p, int i, RandomState& random) const {
    mjData& d = p.data(i);
    double unit[kBodies];
    for (double& u : unit) u = random.standard_normal();
    const double norm = mujoco::norm(unit, kBodies);
    for (int k = 0; k < kBodies; ++k) d.qpos[k] = std::sqrt(2.0) * unit[k] / norm;
  }

  // 1 - (0.5 position.dot(position) + 0.5 control.dot(control) * 0.1)
  double reward(const mjModel&, const mjData& d) const {
    const double state_cost = 0.5 * mujoco::self_dot(d.qpos, nq_);
    const double control_l2_norm = 0.5 * mujoco::self_dot(d.ctrl, kActuators);
    return 1 - (state_cost + control_l2_norm * kControlCostCoef);
  }

  // state_norm() < 1e-6: the norm of physics.state(), (qpos, qvel) (no activations).
  bool terminated(const mjModel&, const mjData& d) const {
    double state[2 * kBodies];
    std::copy(d.qpos, d.qpos + nq_, state);
    std::copy(d.qvel, d.qvel + nv_, state + nq_);
    return mujoco::norm(state, 2 * kBodies) < kTerminalTol;
  }

  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out = std::copy(d.qpos, d.qpos + nq_, out);
    std::copy(d.qvel, d.qvel + nv_, out);
  }

 private:
  static constexpr double kControlCostCoef = 0.1, kTerminalTol = 1e-6;
  int nq_, nv_;
};

}  // namespace fastvec::envs::dm_control::lqr
