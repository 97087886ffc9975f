#pragma once
// Fish's upright and swim tasks: a port of dm_control/suite/fish.py (Upright, Swim).
//
// Swim moves the target geom in the model at each reset; here the model is shared by a block's envs, so each env
// keeps its target's position itself. The target is a static world geom of a model without constraints: where it
// is changes no physics, only geom_xpos['target'], which equals its geom_pos (the world frame is the identity).

#include <algorithm>
#include <array>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::fish {

inline constexpr const char* kJoints[] = {"tail1",          "tail_twist",    "tail2",        "finright_roll",
                                          "finright_pitch", "finleft_roll", "finleft_pitch"};

// kSwim: the Swim task (reach a random target), else Upright.
template <bool kSwim>
class Fish {
 public:
  static constexpr const char* kModel = "fish.xml";
  static constexpr double kTimeLimit = 40;
  static constexpr double kControlTimestep = .04;

  explicit Fish(const mjModel& m)
      : torso_(object_id(m, mjOBJ_BODY, "torso")),
        root_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "root")]),
        mouth_(object_id(m, mjOBJ_GEOM, "mouth")),
        target_geom_(object_id(m, mjOBJ_GEOM, "target")),
        nv_(static_cast<int>(m.nv)),
        // radii = geom_size[['mouth', 'target'], 0].sum()
        radii_(0.0 + m.geom_size[3 * mouth_] + m.geom_size[3 * target_geom_]),
        in_target_(0, radii_, 2 * radii_) {
    for (int k = 0; k < 7; ++k) {
      const int j = object_id(m, mjOBJ_JOINT, kJoints[k]);
      if (m.jnt_type[j] != mjJNT_HINGE && m.jnt_type[j] != mjJNT_SLIDE)
        throw std::invalid_argument(std::string("xml_file: the fish's joint '") + kJoints[k] + "' must be a hinge");
      qpos_[k] = m.jnt_qposadr[j];
      qvel_[k] = m.jnt_dofadr[j];
    }
    if (m.jnt_type[object_id(m, mjOBJ_JOINT, "root")] != mjJNT_FREE)
      throw std::invalid_argument("xml_file: the fish's root joint must be free");
    if (m.geom_bodyid[target_geom_] != 0) throw std::invalid_argument("xml_file: the target must be a world geom");
  }

  std::vector<core::ObsField> observation() const {
    if (kSwim) return {{"joint_angles", {7}}, {"upright", {}}, {"target", {3}}, {"velocity", {nv_}}};
    return {{"joint_angles", {7}}, {"upright", {}}, {"velocity", {nv_}}};
  }

  void initialize_episode(Physics& p, int i, RandomState& random) {
    mjData& d = p.data(i);
    double quat[4];
    for (double& q : quat) q = random.standard_normal();
    const double norm = mujoco::norm(quat, 4);
    for (int k = 0; k < 4; ++k) d.qpos[root_ + 3 + k] = quat[k] / norm;
    for (int k = 0; k < 7; ++k) d.qpos[qpos_[k]] = random.uniform(-.2, .2);
    if (kSwim) {
      if (targets_.size() <= static_cast<size_t>(i)) targets_.resize(i + 1);
      targets_[i][0] = random.uniform(-.4, .4);
      targets_[i][1] = random.uniform(-.4, .4);
      targets_[i][2] = random.uniform(.1, .3);
    }
  }

  double reward(const mjModel&, const mjData& d, int i) const {
    const double upright = d.xmat[9 * torso_ + 8];
    if (!kSwim) return upright_(upright, Arg::kScalar);
    double mouth_to_target[3];
    this->mouth_to_target(d, i, mouth_to_target);
    const double in_target = in_target_(mujoco::norm(mouth_to_target, 3), Arg::kScalar);
    const double is_upright = 0.5 * (upright + 1);
    return (7 * in_target + is_upright) / 8;
  }

  void write_obs(const mjModel&, const mjData& d, int i, double* out) const {
    for (int k = 0; k < 7; ++k) *out++ = d.qpos[qpos_[k]];
    *out++ = d.xmat[9 * torso_ + 8];
    if (kSwim) {
      mouth_to_target(d, i, out);
      out += 3;
    }
    std::copy(d.qvel, d.qvel + nv_, out);
  }

 private:
  // (target - mouth) in the mouth's frame
  void mouth_to_target(const mjData& d, int i, double* out) const {
    double global[3];
    for (int k = 0; k < 3; ++k) global[k] = targets_[i][k] - d.geom_xpos[3 * mouth_ + k];
    vec_dot_mat3(global, d.geom_xmat + 9 * mouth_, out);
  }

  int torso_, root_, mouth_, target_geom_, nv_, qpos_[7], qvel_[7];
  double radii_;
  Tolerance upright_{1, 1, 1};
  Tolerance in_target_;
  std::vector<std::array<double, 3>> targets_;  // each env's target (Swim), drawn at its reset
};

}  // namespace fastvec::envs::dm_control::fish
