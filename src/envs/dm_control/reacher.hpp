#pragma once
// Reacher's easy and hard tasks: a port of dm_control/suite/reacher.py (Reacher). Each reset sizes and moves the
// target in the model, so each env owns its model.

#include <algorithm>
#include <cmath>
#include <numbers>

#include "envs/dm_control/dm_control_env.hpp"

namespace fastvec::envs::dm_control::reacher {

// kHard: the small target (.015), else the big one (.05).
template <bool kHard>
class Reacher {
 public:
  static constexpr const char* kModel = "reacher.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = 0;
  static constexpr bool kModelPerEnv = true;
  static constexpr double kTargetSize = kHard ? .015 : .05;

  explicit Reacher(const mjModel& m)
      : target_(object_id(m, mjOBJ_GEOM, "target")),
        finger_(object_id(m, mjOBJ_GEOM, "finger")),
        nq_(static_cast<int>(m.nq)),
        nv_(static_cast<int>(m.nv)),
        finger_size_(m.geom_size[3 * finger_]) {}

  std::vector<core::ObsField> observation() const {
    return {{"position", {nq_}}, {"to_target", {2}}, {"velocity", {nv_}}};
  }

  // The target's size, the joints, then the target at a random angle and radius (x = r sin, y = r cos).
  void initialize_episode(Physics& p, int i, RandomState& random) const {
    mjModel& m = p.own_model(i);
    m.geom_size[3 * target_] = kTargetSize;
    randomize_limited_and_rotational_joints(m, p.data(i), random);
    const double angle = random.uniform(0, 2 * std::numbers::pi);
    const double radius = random.uniform(.05, .20);
    m.geom_pos[3 * target_] = radius * std::sin(angle);
    m.geom_pos[3 * target_ + 1] = radius * std::cos(angle);
  }

  // tolerance(|finger_to_target|, (0, target + finger radii)): 1 within the radii, else 0.
  double reward(const mjModel&, const mjData& d) const {
    double to_target[2];
    finger_to_target(d, to_target);
    const double distance = mujoco::norm(to_target, 2);
    const double radii = 0.0 + kTargetSize + finger_size_;  // np.sum from 0.0
    return 0 <= distance && distance <= radii ? 1.0 : 0.0;
  }

  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out = std::copy(d.qpos, d.qpos + nq_, out);
    finger_to_target(d, out);
    std::copy(d.qvel, d.qvel + nv_, out + 2);
  }

 private:
  void finger_to_target(const mjData& d, double* out) const {
    for (int k = 0; k < 2; ++k) out[k] = d.geom_xpos[3 * target_ + k] - d.geom_xpos[3 * finger_ + k];
  }

  int target_, finger_, nq_, nv_;
  double finger_size_;
};

}  // namespace fastvec::envs::dm_control::reacher
