#pragma once
// Ball in cup's catch task: a port of dm_control/suite/ball_in_cup.py (BallInCup).

#include <algorithm>
#include <cmath>

#include "envs/dm_control/dm_control_env.hpp"

namespace fastvec::envs::dm_control::ball_in_cup {

class Catch {
 public:
  static constexpr const char* kModel = "ball_in_cup.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;

  explicit Catch(const mjModel& m)
      : ball_x_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "ball_x")]),
        ball_z_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "ball_z")]),
        target_(object_id(m, mjOBJ_SITE, "target")),
        ball_(object_id(m, mjOBJ_BODY, "ball")),
        ball_geom_(object_id(m, mjOBJ_GEOM, "ball")),
        nq_(static_cast<int>(m.nq)),
        nv_(static_cast<int>(m.nv)) {}

  std::vector<core::ObsField> observation() const { return {{"position", {nq_}}, {"velocity", {nv_}}}; }

  // The ball drawn in the air until it does not penetrate anything (each try an after_reset forward).
  void initialize_episode(Physics& p, int i, RandomState& random) const {
    mjData& d = p.data(i);
    do {
      d.qpos[ball_x_] = random.uniform(-.2, .2);
      d.qpos[ball_z_] = random.uniform(.2, .5);
      p.after_reset(i);
    } while (d.ncon > 0);
  }

  // in_target: 1.0 when |target - ball| < target_size - ball_size in x and in z, else 0.0.
  double reward(const mjModel& m, const mjData& d) const {
    const double ball_size = m.geom_size[3 * ball_geom_];
    bool inside = true;
    for (int k : {0, 2}) {
      const double to_target = std::fabs(d.site_xpos[3 * target_ + k] - d.xpos[3 * ball_ + k]);
      inside &= to_target < m.site_size[3 * target_ + k] - ball_size;
    }
    return inside ? 1.0 : 0.0;
  }

  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out = std::copy(d.qpos, d.qpos + nq_, out);
    std::copy(d.qvel, d.qvel + nv_, out);
  }

 private:
  int ball_x_, ball_z_, target_, ball_, ball_geom_, nq_, nv_;
};

}  // namespace fastvec::envs::dm_control::ball_in_cup
