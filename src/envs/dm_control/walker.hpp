#pragma once
// Walker's stand, walk and run tasks: a port of dm_control/suite/walker.py (PlanarWalker).

#include <algorithm>
#include <limits>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::walker {

inline constexpr double kStandHeight = 1.2;

// kMoveSpeed: 0 (stand), 1 (walk) or 8 (run).
template <int kMoveSpeed>
class PlanarWalker {
 public:
  static constexpr const char* kModel = "walker.xml";
  static constexpr double kTimeLimit = 25;
  static constexpr double kControlTimestep = .025;

  explicit PlanarWalker(const mjModel& m)
      : torso_(object_id(m, mjOBJ_BODY, "torso")),
        velocity_(m.sensor_adr[object_id(m, mjOBJ_SENSOR, "torso_subtreelinvel")]),
        nbody_(static_cast<int>(m.nbody)),
        nv_(static_cast<int>(m.nv)) {}

  std::vector<core::ObsField> observation() const {
    return {{"orientations", {2 * (nbody_ - 1)}}, {"height", {}}, {"velocity", {nv_}}};
  }

  void initialize_episode(Physics& p, int i, RandomState& random) const {
    randomize_limited_and_rotational_joints(p.model(), p.data(i), random);
  }

  double reward(const mjModel&, const mjData& d) const {
    const double standing = standing_(d.xpos[3 * torso_ + 2], Arg::kScalar);
    const double upright = (1 + d.xmat[9 * torso_ + 8]) / 2;
    const double stand_reward = (3 * standing + upright) / 4;
    if (kMoveSpeed == 0) return stand_reward;
    const double move_reward = move_(d.sensordata[velocity_], Arg::kScalar);
    return stand_reward * (5 * move_reward + 1) / 6;
  }

  // orientations: each body's xmat xx and xz but the world's; height: the torso's z; velocity: qvel.
  void write_obs(const mjModel&, const mjData& d, double* out) const {
    for (int b = 1; b < nbody_; ++b) {
      *out++ = d.xmat[9 * b];
      *out++ = d.xmat[9 * b + 2];
    }
    *out++ = d.xpos[3 * torso_ + 2];
    std::copy(d.qvel, d.qvel + nv_, out);
  }

 private:
  int torso_, velocity_, nbody_, nv_;
  Tolerance standing_{kStandHeight, std::numeric_limits<double>::infinity(), kStandHeight / 2};
  Tolerance move_{kMoveSpeed, std::numeric_limits<double>::infinity(), kMoveSpeed / 2.0, Sigmoid::kLinear, 0.5};
};

}  // namespace fastvec::envs::dm_control::walker
