#pragma once
// Stacker's stack tasks with 2 or 4 boxes: a port of dm_control/suite/stacker.py (Stack, fully observable). The
// model is the suite's make_model(n_boxes) (fastvec/dm_control_models.py). Each reset moves the target in the
// model, so each env owns its model.

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/manipulator.hpp"
#include "envs/dm_control/rewards.hpp"
#include "envs/numpy_unary.hpp"

namespace fastvec::envs::dm_control::stacker {

template <int kBoxes>
class Stack {
 public:
  static constexpr const char* kModel = kBoxes == 2 ? "stacker_stack2.xml" : "stacker_stack4.xml";
  static constexpr double kTimeLimit = 10;
  static constexpr double kControlTimestep = .01;
  static constexpr bool kModelPerEnv = true;

  explicit Stack(const mjModel& m)
      : hand_(object_id(m, mjOBJ_BODY, "hand")),
        target_(object_id(m, mjOBJ_BODY, "target")),
        target_site_(object_id(m, mjOBJ_SITE, "target")),
        grasp_(object_id(m, mjOBJ_SITE, "grasp")),
        nsensordata_(static_cast<int>(m.nsensordata)),
        box_size_(m.geom_size[3 * object_id(m, mjOBJ_GEOM, "target")]),
        box_is_close_(0, 0, 2 * box_size_),
        hand_is_far_(.1, std::numeric_limits<double>::infinity(), kClose) {
    for (int k = 0; k < 8; ++k) {
      const int j = object_id(m, mjOBJ_JOINT, manipulator::kArmJoints[k]);
      arm_qpos_[k] = m.jnt_qposadr[j];
      arm_dof_[k] = m.jnt_dofadr[j];
      const bool limited = m.jnt_limited[j] != 0;
      low_[k] = limited ? m.jnt_range[2 * j] : -std::numbers::pi;
      high_[k] = limited ? m.jnt_range[2 * j + 1] : std::numbers::pi;
    }
    finger_ = arm_qpos_[4];
    thumb_ = arm_qpos_[6];
    for (int b = 0; b < kBoxes; ++b) {
      const std::string name = "box" + std::to_string(b);
      box_[b] = object_id(m, mjOBJ_BODY, name.c_str());
      box_site_[b] = object_id(m, mjOBJ_SITE, name.c_str());
      for (int k = 0; k < 3; ++k) {  // 'xyz'
        const int j = object_id(m, mjOBJ_JOINT, (name + "_" + "xyz"[k]).c_str());
        box_qpos_[b][k] = m.jnt_qposadr[j];
        box_dof_[b][k] = m.jnt_dofadr[j];
      }
    }
  }

  std::vector<core::ObsField> observation() const {
    return {{"arm_pos", {8, 2}},      {"arm_vel", {8}},          {"touch", {nsensordata_}}, {"hand_pos", {4}},
            {"box_pos", {kBoxes, 4}}, {"box_vel", {3 * kBoxes}}, {"target_pos", {2}}};
  }

  // Until nothing penetrates: the arm's joints uniform in their ranges (the finger as the thumb), the target at a
  // random odd height in box sizes, the boxes uniform.
  void initialize_episode(Physics& p, int i, RandomState& random) const {
    mjModel& m = p.own_model(i);
    mjData& d = p.data(i);
    do {
      for (int k = 0; k < 8; ++k) d.qpos[arm_qpos_[k]] = random.uniform(low_[k], high_[k]);
      d.qpos[finger_] = d.qpos[thumb_];

      const int64_t target_height = 2 * random.randint(kBoxes) + 1;
      m.body_pos[3 * target_ + 2] = box_size_ * static_cast<double>(target_height);
      m.body_pos[3 * target_] = random.uniform(-.37, .37);

      for (int b = 0; b < kBoxes; ++b) {
        d.qpos[box_qpos_[b][0]] = random.uniform(.1, .3);
        d.qpos[box_qpos_[b][2]] = random.uniform(0, .7);
        d.qpos[box_qpos_[b][1]] = random.uniform(0, 2 * std::numbers::pi);
      }
      p.after_reset(i);
    } while (d.ncon > 0);
  }

  // box_is_close (the nearest box to the target) * hand_is_far (the grasp from the target).
  double reward(const mjModel&, const mjData& d) const {
    double nearest = distance(d, box_site_[0], target_site_);
    for (int b = 1; b < kBoxes; ++b) nearest = std::min(nearest, distance(d, box_site_[b], target_site_));
    return box_is_close_(nearest, Arg::kScalar) * hand_is_far_(distance(d, grasp_, target_site_), Arg::kScalar);
  }

  void write_obs(const mjModel&, const mjData& d, double* out) const {
    for (int k = 0; k < 8; ++k) {  // bounded_joint_pos: (sin, cos) per joint
      *out++ = std::sin(d.qpos[arm_qpos_[k]]);
      *out++ = std::cos(d.qpos[arm_qpos_[k]]);
    }
    for (int k = 0; k < 8; ++k) *out++ = d.qvel[arm_dof_[k]];
    for (int k = 0; k < nsensordata_; ++k) *out++ = numpy_log1p(d.sensordata[k]);
    out = pose_2d(d, hand_, out);
    for (int b = 0; b < kBoxes; ++b) out = pose_2d(d, box_[b], out);
    for (int b = 0; b < kBoxes; ++b)
      for (int k = 0; k < 3; ++k) *out++ = d.qvel[box_dof_[b][k]];
    out[0] = d.xpos[3 * target_];
    out[1] = d.xpos[3 * target_ + 2];
  }

 private:
  static constexpr double kClose = .01;

  // body_2d_pose: xpos x, z and xquat qw, qy.
  static double* pose_2d(const mjData& d, int body, double* out) {
    *out++ = d.xpos[3 * body];
    *out++ = d.xpos[3 * body + 2];
    *out++ = d.xquat[4 * body];
    *out++ = d.xquat[4 * body + 2];
    return out;
  }

  // site_distance: the norm of one site's position minus the other's.
  static double distance(const mjData& d, int a, int b) {
    double v[3];
    for (int k = 0; k < 3; ++k) v[k] = d.site_xpos[3 * a + k] - d.site_xpos[3 * b + k];
    return mujoco::norm(v, 3);
  }

  int hand_, target_, target_site_, grasp_, nsensordata_, finger_ = 0, thumb_ = 0;
  double box_size_;
  std::array<int, 8> arm_qpos_{}, arm_dof_{};
  std::array<double, 8> low_{}, high_{};
  std::array<int, kBoxes> box_{}, box_site_{};
  std::array<std::array<int, 3>, kBoxes> box_qpos_{}, box_dof_{};
  Tolerance box_is_close_, hand_is_far_;
};

}  // namespace fastvec::envs::dm_control::stacker
