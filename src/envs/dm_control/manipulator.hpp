#pragma once
// Manipulator's bring and insert tasks with the ball or the peg: a port of dm_control/suite/manipulator.py (Bring,
// fully observable). The model is the suite's make_model(use_peg, insert) (fastvec/dm_control_models.py). Each
// reset moves the target (and the receptacle, which collides) in the model, so each env owns its model.

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <string>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"
#include "envs/numpy_unary.hpp"

namespace fastvec::envs::dm_control::manipulator {

inline constexpr const char* kArmJoints[] = {"arm_root", "arm_shoulder", "arm_elbow", "arm_wrist",
                                             "finger",   "fingertip",    "thumb",     "thumbtip"};
inline constexpr const char* kTouchSensors[] = {"palm_touch", "finger_touch", "thumb_touch", "fingertip_touch",
                                                "thumbtip_touch"};

// kPeg: the peg prop, else the ball; kInsert: into its receptacle (slot, cup), else to the floating target.
template <bool kPeg, bool kInsert>
class Bring {
 public:
  static constexpr const char* kModel =
      kPeg ? (kInsert ? "manipulator_insert_peg.xml" : "manipulator_bring_peg.xml")
           : (kInsert ? "manipulator_insert_ball.xml" : "manipulator_bring_ball.xml");
  static constexpr double kTimeLimit = 10;
  static constexpr double kControlTimestep = .01;
  static constexpr bool kModelPerEnv = true;

  explicit Bring(const mjModel& m)
      : hand_(object_id(m, mjOBJ_BODY, "hand")),
        object_(object_id(m, mjOBJ_BODY, kPeg ? "peg" : "ball")),
        target_(object_id(m, mjOBJ_BODY, kPeg ? "target_peg" : "target_ball")),
        receptacle_(kInsert ? object_id(m, mjOBJ_BODY, kPeg ? "slot" : "cup") : -1),
        grasp_(object_id(m, mjOBJ_SITE, "grasp")) {
    for (int k = 0; k < 8; ++k) {
      const int j = object_id(m, mjOBJ_JOINT, kArmJoints[k]);
      arm_qpos_[k] = m.jnt_qposadr[j];
      arm_dof_[k] = m.jnt_dofadr[j];
      const bool limited = m.jnt_limited[j] != 0;
      low_[k] = limited ? m.jnt_range[2 * j] : -std::numbers::pi;
      high_[k] = limited ? m.jnt_range[2 * j + 1] : std::numbers::pi;
    }
    finger_ = arm_qpos_[4];
    thumb_ = arm_qpos_[6];
    for (int k = 0; k < 5; ++k) touch_[k] = m.sensor_adr[object_id(m, mjOBJ_SENSOR, kTouchSensors[k])];
    const std::string prefix = kPeg ? "peg_" : "ball_";
    for (int k = 0; k < 3; ++k) {  // the object's joints in 'xzy' order
      const int j = object_id(m, mjOBJ_JOINT, (prefix + "xzy"[k]).c_str());
      object_qpos_[k] = m.jnt_qposadr[j];
      object_dof_[k] = m.jnt_dofadr[j];
    }
    if constexpr (kPeg) {
      for (int k = 0; k < 8; ++k) sites_[k] = object_id(m, mjOBJ_SITE, kPegSites[k]);
    } else {
      sites_[0] = object_id(m, mjOBJ_SITE, "ball");
      sites_[1] = object_id(m, mjOBJ_SITE, "target_ball");
    }
  }

  std::vector<core::ObsField> observation() const {
    return {{"arm_pos", {8, 2}},   {"arm_vel", {8}},    {"touch", {5}},     {"hand_pos", {4}},
            {"object_pos", {4}},   {"object_vel", {3}}, {"target_pos", {4}}};
  }

  // Until nothing penetrates: the arm's joints uniform in their ranges (the finger as the thumb), the target (and
  // receptacle) placed, the object in the hand (p .1), at the target (p .1) or thrown in uniformly.
  void initialize_episode(Physics& p, int i, RandomState& random) const {
    mjModel& m = p.own_model(i);
    mjData& d = p.data(i);
    constexpr double pi = std::numbers::pi;
    constexpr std::array<double, 3> kInitProbs = {kPInHand, kPInTarget, 1 - kPInHand - kPInTarget};
    do {
      for (int k = 0; k < 8; ++k) d.qpos[arm_qpos_[k]] = random.uniform(low_[k], high_[k]);
      d.qpos[finger_] = d.qpos[thumb_];

      const double target_x = random.uniform(-.4, .4);
      const double target_z = random.uniform(.1, .4);
      double target_angle;
      if constexpr (kInsert) {
        target_angle = random.uniform(-pi / 3, pi / 3);
        place(m, receptacle_, target_x, target_z, target_angle);
      } else {
        target_angle = random.uniform(-pi, pi);
      }
      place(m, target_, target_x, target_z, target_angle);

      double object_x, object_z, object_angle;
      switch (random.choice(kInitProbs)) {
        case 1:  // in_target
          object_x = target_x;
          object_z = target_z;
          object_angle = target_angle;
          break;
        case 0: {  // in_hand
          p.after_reset(i);
          object_x = d.site_xpos[3 * grasp_];
          object_z = d.site_xpos[3 * grasp_ + 2];
          object_angle = pi - numpy_arctan2(d.site_xmat[9 * grasp_ + 6], d.site_xmat[9 * grasp_]);
          break;
        }
        default:  // uniform
          object_x = random.uniform(-.5, .5);
          object_z = random.uniform(0, .7);
          object_angle = random.uniform(0, 2 * pi);
          d.qvel[object_dof_[0]] = random.uniform(-5, 5);
      }
      d.qpos[object_qpos_[0]] = object_x;
      d.qpos[object_qpos_[1]] = object_z;
      d.qpos[object_qpos_[2]] = object_angle;

      p.after_reset(i);
    } while (d.ncon > 0);
  }

  double reward(const mjModel&, const mjData& d) const {
    if constexpr (kPeg) {
      const double grasp = close_(distance(d, 0, 1), Arg::kScalar);
      const double pinch = close_(distance(d, 2, 3), Arg::kScalar);
      const double grasping = (grasp + pinch) / 2;
      const double bring = close_(distance(d, 4, 5), Arg::kScalar);
      const double bring_tip = close_(distance(d, 6, 7), Arg::kScalar);
      const double bringing = (bring + bring_tip) / 2;
      return grasping / 3 > bringing ? grasping / 3 : bringing;  // max(bringing, grasping / 3)
    } else {
      return close_(distance(d, 0, 1), Arg::kScalar);
    }
  }

  void write_obs(const mjModel&, const mjData& d, double* out) const {
    for (int k = 0; k < 8; ++k) {  // bounded_joint_pos: (sin, cos) per joint
      *out++ = std::sin(d.qpos[arm_qpos_[k]]);
      *out++ = std::cos(d.qpos[arm_qpos_[k]]);
    }
    for (int k = 0; k < 8; ++k) *out++ = d.qvel[arm_dof_[k]];
    for (int k = 0; k < 5; ++k) *out++ = numpy_log1p(d.sensordata[touch_[k]]);
    out = pose_2d(d, hand_, out);
    out = pose_2d(d, object_, out);
    for (int k = 0; k < 3; ++k) *out++ = d.qvel[object_dof_[k]];
    pose_2d(d, target_, out);
  }

 private:
  static constexpr double kClose = .01, kPInHand = .1, kPInTarget = .1;
  // The peg reward's site pairs (site_distance's two sites; the distance's sign does not matter).
  static constexpr const char* kPegSites[] = {"peg_grasp", "grasp",      "peg_pinch",      "pinch",
                                              "peg",       "target_peg", "target_peg_tip", "peg_tip"};

  // body_pos[body, ['x', 'z']] and body_quat[body, ['qw', 'qy']] = cos(angle / 2), sin(angle / 2).
  static void place(mjModel& m, int body, double x, double z, double angle) {
    m.body_pos[3 * body] = x;
    m.body_pos[3 * body + 2] = z;
    m.body_quat[4 * body] = std::cos(angle / 2);
    m.body_quat[4 * body + 2] = std::sin(angle / 2);
  }

  // body_2d_pose: xpos x, z and xquat qw, qy.
  static double* pose_2d(const mjData& d, int body, double* out) {
    *out++ = d.xpos[3 * body];
    *out++ = d.xpos[3 * body + 2];
    *out++ = d.xquat[4 * body];
    *out++ = d.xquat[4 * body + 2];
    return out;
  }

  // site_distance(sites_[a], sites_[b]): the norm of site a - site b.
  double distance(const mjData& d, int a, int b) const {
    double v[3];
    for (int k = 0; k < 3; ++k) v[k] = d.site_xpos[3 * sites_[a] + k] - d.site_xpos[3 * sites_[b] + k];
    return mujoco::norm(v, 3);
  }

  int hand_, object_, target_, receptacle_, grasp_, finger_ = 0, thumb_ = 0;
  std::array<int, 8> arm_qpos_{}, arm_dof_{}, sites_{};
  std::array<double, 8> low_{}, high_{};
  std::array<int, 5> touch_{};
  std::array<int, 3> object_qpos_{}, object_dof_{};
  Tolerance close_{0, kClose, 2 * kClose};
};

}  // namespace fastvec::envs::dm_control::manipulator
