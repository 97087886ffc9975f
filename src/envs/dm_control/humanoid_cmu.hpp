#pragma once
// The CMU humanoid's stand, walk and run tasks: a port of dm_control/suite/humanoid_CMU.py (HumanoidCMU). As
// humanoid.py's tasks, but its thorax is the torso, read for uprightness through xmat's zy (not zz).

#include <algorithm>
#include <limits>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::humanoid_cmu {

inline constexpr double kStandHeight = 1.4;

// kMoveSpeed: 0 (stand), 1 (walk) or 10 (run).
template <int kMoveSpeed>
class HumanoidCMU {
 public:
  static constexpr const char* kModel = "humanoid_CMU.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;

  explicit HumanoidCMU(const mjModel& m)
      : thorax_(object_id(m, mjOBJ_BODY, "thorax")),
        head_(object_id(m, mjOBJ_BODY, "head")),
        limbs_{object_id(m, mjOBJ_BODY, "lhand"), object_id(m, mjOBJ_BODY, "lfoot"),
               object_id(m, mjOBJ_BODY, "rhand"), object_id(m, mjOBJ_BODY, "rfoot")},
        com_velocity_(m.sensor_adr[object_id(m, mjOBJ_SENSOR, "thorax_subtreelinvel")]),
        nq_(static_cast<int>(m.nq)),
        nv_(static_cast<int>(m.nv)),
        nu_(static_cast<int>(m.nu)) {
    if (m.nq < 7 || m.jnt_type[0] != mjJNT_FREE)
      throw std::invalid_argument("xml_file: the humanoid's first joint must be its free root");
  }

  std::vector<core::ObsField> observation() const {
    return {{"joint_angles", {nq_ - 7}}, {"head_height", {}},    {"extremities", {12}},
            {"torso_vertical", {3}},     {"com_velocity", {3}}, {"velocity", {nv_}}};
  }

  // Random joints until the body penetrates nothing (each try forwarded as after_reset does).
  void initialize_episode(Physics& p, int i, RandomState& random) const {
    do {
      randomize_limited_and_rotational_joints(p.model(), p.data(i), random);
      p.after_reset(i);
    } while (p.data(i).ncon > 0);
  }

  double reward(const mjModel&, const mjData& d) const {
    const double standing = standing_(d.xpos[3 * head_ + 2], Arg::kScalar);
    const double upright = upright_(d.xmat[9 * thorax_ + 7], Arg::kScalar);  // thorax's zy
    const double stand_reward = standing * upright;
    // tolerance(control, margin=1, sigmoid='quadratic').mean()
    double small_control =
        (0.0 + mujoco::pairwise_sum([&](int64_t k) { return small_control_(d.ctrl[k], Arg::kArray); }, 0, nu_)) /
        nu_;
    small_control = (4 + small_control) / 5;
    const double* com_velocity = d.sensordata + com_velocity_;
    if (kMoveSpeed == 0) {
      const double dont_move =
          (0.0 + dont_move_(com_velocity[0], Arg::kArray) + dont_move_(com_velocity[1], Arg::kArray)) / 2;
      return small_control * stand_reward * dont_move;
    }
    double move = move_(mujoco::norm(com_velocity, 2), Arg::kScalar);
    move = (5 * move + 1) / 6;
    return small_control * stand_reward * move;
  }

  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out = std::copy(d.qpos + 7, d.qpos + nq_, out);
    *out++ = d.xpos[3 * head_ + 2];
    // extremities: each limb's position from the thorax, in the thorax's frame
    const double* thorax_pos = d.xpos + 3 * thorax_;
    for (int limb : limbs_) {
      double thorax_to_limb[3];
      for (int k = 0; k < 3; ++k) thorax_to_limb[k] = d.xpos[3 * limb + k] - thorax_pos[k];
      vec_dot_mat3(thorax_to_limb, d.xmat + 9 * thorax_, out);
      out += 3;
    }
    out = std::copy(d.xmat + 9 * thorax_ + 6, d.xmat + 9 * thorax_ + 9, out);
    out = std::copy(d.sensordata + com_velocity_, d.sensordata + com_velocity_ + 3, out);
    std::copy(d.qvel, d.qvel + nv_, out);
  }

 private:
  int thorax_, head_, limbs_[4], com_velocity_, nq_, nv_, nu_;
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  Tolerance standing_{kStandHeight, kInf, kStandHeight / 4};
  Tolerance upright_{0.9, kInf, 1.9, Sigmoid::kLinear, 0};
  Tolerance small_control_{0, 0, 1, Sigmoid::kQuadratic, 0};
  Tolerance dont_move_{0, 0, 2};
  Tolerance move_{kMoveSpeed, kInf, kMoveSpeed, Sigmoid::kLinear, 0};
};

}  // namespace fastvec::envs::dm_control::humanoid_cmu
