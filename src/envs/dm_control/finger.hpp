#pragma once
// Finger's spin and turn tasks: a port of dm_control/suite/finger.py (Spin, Turn). Each reset writes into the
// model (spin: the hinge's damping; turn: the target's place and size), so each env owns its model.

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/numpy_unary.hpp"

namespace fastvec::envs::dm_control::finger {

// kTurn: Turn with a target of radius kTargetRadius (easy .07, hard .03); else Spin.
template <bool kTurn, double kTargetRadius = 0.0>
class Finger {
 public:
  static constexpr const char* kModel = "finger.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;
  static constexpr bool kModelPerEnv = true;

  explicit Finger(const mjModel& m)
      : hinge_(object_id(m, mjOBJ_JOINT, "hinge")),
        target_(object_id(m, mjOBJ_SITE, "target")),
        cap1_(object_id(m, mjOBJ_GEOM, "cap1")),
        proximal_(sensor(m, "proximal")),
        distal_(sensor(m, "distal")),
        proximal_velocity_(sensor(m, "proximal_velocity")),
        distal_velocity_(sensor(m, "distal_velocity")),
        hinge_velocity_(sensor(m, "hinge_velocity")),
        tip_(sensor(m, "tip")),
        target_sensor_(sensor(m, "target")),
        spinner_(sensor(m, "spinner")),
        touchtop_(sensor(m, "touchtop")),
        touchbottom_(sensor(m, "touchbottom")) {}

  std::vector<core::ObsField> observation() const {
    if (kTurn)
      return {{"position", {4}},
              {"velocity", {3}},
              {"touch", {2}},
              {"target_position", {2}},
              {"dist_to_target", {}}};
    return {{"position", {4}}, {"velocity", {3}}, {"touch", {2}}};
  }

  void initialize_episode(Physics& p, int i, RandomState& random) const {
    mjModel& m = p.own_model(i);
    mjData& d = p.data(i);
    if (kTurn) {
      // The target on the circle the spinner's tip sweeps, at a random angle from the hinge.
      const double target_angle = random.uniform(-std::numbers::pi, std::numbers::pi);
      const double hinge_x = d.xanchor[3 * hinge_], hinge_z = d.xanchor[3 * hinge_ + 2];
      const double radius = 0.0 + m.geom_size[3 * cap1_] + m.geom_size[3 * cap1_ + 1] + m.geom_size[3 * cap1_ + 2];
      m.site_pos[3 * target_] = hinge_x + radius * std::sin(target_angle);
      m.site_pos[3 * target_ + 2] = hinge_z + radius * std::cos(target_angle);
      m.site_size[3 * target_] = kTargetRadius;
    } else {
      m.dof_damping[m.jnt_dofadr[hinge_]] = .03;
    }
    // _set_random_joint_angles: until nothing is in contact, at most 1000 tries.
    for (int attempt = 0; attempt < 1000; ++attempt) {
      randomize_limited_and_rotational_joints(m, d, random);
      p.after_reset(i);
      if (d.ncon == 0) return;
    }
    throw core::EnvError("Could not find a collision-free state after 1000 attempts");
  }

  // Spin: 1 while the hinge turns at 15 rad/s or more (negative); Turn: 1 with the tip inside the target.
  double reward(const mjModel&, const mjData& d) const {
    if (kTurn) return dist_to_target(d) <= 0 ? 1.0 : 0.0;
    return d.sensordata[hinge_velocity_] <= -15.0 ? 1.0 : 0.0;
  }

  // position: the proximal and distal angles and the tip's (x, z) from the hinge; velocity; touch: np.log1p of
  // the touch sensors; (turn) the target's (x, z) from the hinge and the signed distance to its surface.
  void write_obs(const mjModel&, const mjData& d, double* out) const {
    const double* s = d.sensordata;
    *out++ = s[proximal_];
    *out++ = s[distal_];
    out = relative(d, tip_, out);
    *out++ = s[proximal_velocity_];
    *out++ = s[distal_velocity_];
    *out++ = s[hinge_velocity_];
    *out++ = numpy_log1p(s[touchtop_]);
    *out++ = numpy_log1p(s[touchbottom_]);
    if (kTurn) {
      out = relative(d, target_sensor_, out);
      *out = dist_to_target(d);
    }
  }

 private:
  static int sensor(const mjModel& m, const char* name) { return m.sensor_adr[object_id(m, mjOBJ_SENSOR, name)]; }

  // sensordata[which][[0, 2]] - sensordata['spinner'][[0, 2]]
  double* relative(const mjData& d, int which, double* out) const {
    *out++ = d.sensordata[which] - d.sensordata[spinner_];
    *out++ = d.sensordata[which + 2] - d.sensordata[spinner_ + 2];
    return out;
  }

  // norm(target_position - tip_position) - the target's radius.
  double dist_to_target(const mjData& d) const {
    double target[2], tip[2], to_target[2];
    relative(d, target_sensor_, target);
    relative(d, tip_, tip);
    for (int k = 0; k < 2; ++k) to_target[k] = target[k] - tip[k];
    return mujoco::norm(to_target, 2) - kTargetRadius;
  }

  int hinge_, target_, cap1_;
  int proximal_, distal_, proximal_velocity_, distal_velocity_, hinge_velocity_, tip_, target_sensor_, spinner_,
      touchtop_, touchbottom_;
};

}  // namespace fastvec::envs::dm_control::finger
