#pragma once
// Acrobot's swing-up tasks, sparse or smooth: a port of dm_control/suite/acrobot.py (Balance).

#include <numbers>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::acrobot {

template <bool kSparse>
class Balance {
 public:
  static constexpr const char* kModel = "acrobot.xml";
  static constexpr double kTimeLimit = 10;
  static constexpr double kControlTimestep = 0;

  explicit Balance(const mjModel& m)
      : shoulder_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "shoulder")]),
        elbow_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "elbow")]),
        upper_arm_(object_id(m, mjOBJ_BODY, "upper_arm")),
        lower_arm_(object_id(m, mjOBJ_BODY, "lower_arm")),
        target_(object_id(m, mjOBJ_SITE, "target")),
        tip_(object_id(m, mjOBJ_SITE, "tip")),
        nv_(static_cast<int>(m.nv)),
        to_target_(0, m.site_size[3 * target_], kSparse ? 0 : 1) {}

  std::vector<core::ObsField> observation() const { return {{"orientations", {4}}, {"velocity", {nv_}}}; }

  // qpos[["shoulder", "elbow"]] = uniform(-pi, pi, 2)
  void initialize_episode(Physics& p, int i, RandomState& random) const {
    mjData& d = p.data(i);
    d.qpos[shoulder_] = random.uniform(-std::numbers::pi, std::numbers::pi);
    d.qpos[elbow_] = random.uniform(-std::numbers::pi, std::numbers::pi);
  }

  // tolerance(np.linalg.norm(target - tip), bounds=(0, the target's radius), margin=0 if sparse else 1)
  double reward(const mjModel&, const mjData& d) const {
    double tip_to_target[3];
    for (int k = 0; k < 3; ++k) tip_to_target[k] = d.site_xpos[3 * target_ + k] - d.site_xpos[3 * tip_ + k];
    return to_target_(mujoco::norm(tip_to_target, 3), Arg::kScalar);
  }

  // orientations: the arms' xmat xz, then their zz; velocity: qvel.
  void write_obs(const mjModel&, const mjData& d, double* out) const {
    *out++ = d.xmat[9 * upper_arm_ + 2];
    *out++ = d.xmat[9 * lower_arm_ + 2];
    *out++ = d.xmat[9 * upper_arm_ + 8];
    *out++ = d.xmat[9 * lower_arm_ + 8];
    std::copy(d.qvel, d.qvel + nv_, out);
  }

 private:
  int shoulder_, elbow_, upper_arm_, lower_arm_, target_, tip_, nv_;
  Tolerance to_target_;
};

}  // namespace fastvec::envs::dm_control::acrobot
