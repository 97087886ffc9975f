#pragma once
// Pendulum's swing-up task: a port of dm_control/suite/pendulum.py (SwingUp).

#include <cmath>
#include <numbers>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::pendulum {

class SwingUp {
 public:
  static constexpr const char* kModel = "pendulum.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = 0;

  explicit SwingUp(const mjModel& m)
      : hinge_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "hinge")]),
        hinge_dof_(m.jnt_dofadr[object_id(m, mjOBJ_JOINT, "hinge")]),
        pole_(object_id(m, mjOBJ_BODY, "pole")) {}

  std::vector<core::ObsField> observation() const { return {{"orientation", {2}}, {"velocity", {1}}}; }

  void initialize_episode(Physics& p, int i, RandomState& random) const {
    p.data(i).qpos[hinge_] = random.uniform(-std::numbers::pi, std::numbers::pi);
  }

  double reward(const mjModel&, const mjData& d) const { return upright_(d.xmat[9 * pole_ + 8], Arg::kScalar); }

  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out[0] = d.xmat[9 * pole_ + 8];
    out[1] = d.xmat[9 * pole_ + 2];
    out[2] = d.qvel[hinge_dof_];
  }

 private:
  // _COSINE_BOUND = np.cos(np.deg2rad(8)): numpy's deg2rad multiplies by pi / 180.
  static double cosine_bound() { return std::cos(8 * (std::numbers::pi / 180.0)); }

  int hinge_, hinge_dof_, pole_;
  Tolerance upright_{cosine_bound(), 1};
};

}  // namespace fastvec::envs::dm_control::pendulum
