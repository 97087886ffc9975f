#pragma once
// Point mass's easy task: a port of dm_control/suite/point_mass.py (PointMass, randomize_gains=False). The hard
// task draws each episode's actuator gains into the model (wrap_prm), which a block's envs share here: not ported.

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::point_mass {

class Easy {
 public:
  static constexpr const char* kModel = "point_mass.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = 0;

  explicit Easy(const mjModel& m)
      : target_(object_id(m, mjOBJ_GEOM, "target")),
        pointmass_(object_id(m, mjOBJ_GEOM, "pointmass")),
        nq_(static_cast<int>(m.nq)),
        nv_(static_cast<int>(m.nv)),
        nu_(static_cast<int>(m.nu)),
        near_target_(0, m.geom_size[3 * target_], m.geom_size[3 * target_]) {}

  std::vector<core::ObsField> observation() const { return {{"position", {nq_}}, {"velocity", {nv_}}}; }

  void initialize_episode(Physics& p, int i, RandomState& random) const {
    randomize_limited_and_rotational_joints(p.model(), p.data(i), random);
  }

  // near_target * (control_reward + 4) / 5, control_reward the mean of each control's quadratic tolerance
  double reward(const mjModel&, const mjData& d) const {
    double to_target[3];
    for (int k = 0; k < 3; ++k) to_target[k] = d.geom_xpos[3 * target_ + k] - d.geom_xpos[3 * pointmass_ + k];
    const double near_target = near_target_(mujoco::norm(to_target, 3), Arg::kScalar);
    const double control_reward =
        mujoco::pairwise_sum([&](int64_t k) { return small_control_(d.ctrl[k], Arg::kArray); }, 0, nu_) / nu_;
    const double small_control = (control_reward + 4) / 5;
    return near_target * small_control;
  }

  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out = std::copy(d.qpos, d.qpos + nq_, out);
    std::copy(d.qvel, d.qvel + nv_, out);
  }

 private:
  int target_, pointmass_, nq_, nv_, nu_;
  Tolerance near_target_, small_control_{0, 0, 1, Sigmoid::kQuadratic, 0};
};

}  // namespace fastvec::envs::dm_control::point_mass
