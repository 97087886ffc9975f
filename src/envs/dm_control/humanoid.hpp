#pragma once
// Humanoid's stand, walk and run tasks, with egocentric features or the pure state: a port of
// dm_control/suite/humanoid.py (Humanoid). humanoid_CMU.py's tasks are the same over another body
// (humanoid_cmu.hpp): the Body parameter names what differs.

#include <algorithm>
#include <limits>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::humanoid {

inline constexpr double kStandHeight = 1.4;

// humanoid.xml's body. A Body: the model, the suite's time limit and control timestep, the names of the body
// whose frame the features are in (the torso) and of the limbs, the torso's centre-of-mass velocity sensor, and
// which entry of the torso's xmat says how upright it is.
struct HumanoidBody {
  static constexpr const char* kModel = "humanoid.xml";
  static constexpr double kTimeLimit = 25;
  static constexpr double kControlTimestep = .025;
  static constexpr const char* kTorso = "torso";
  static constexpr const char* kLimbs[4] = {"left_hand", "left_foot", "right_hand", "right_foot"};
  static constexpr const char* kComVelocity = "torso_subtreelinvel";
  static constexpr int kUprightEntry = 8;  // zz
};

// kMoveSpeed: 0 (stand), 1 (walk) or 10 (run); kPureState: qpos and qvel as the observation.
template <class Body, int kMoveSpeed, bool kPureState = false>
class HumanoidTask {
 public:
  static constexpr const char* kModel = Body::kModel;
  static constexpr double kTimeLimit = Body::kTimeLimit;
  static constexpr double kControlTimestep = Body::kControlTimestep;

  explicit HumanoidTask(const mjModel& m)
      : torso_(object_id(m, mjOBJ_BODY, Body::kTorso)),
        head_(object_id(m, mjOBJ_BODY, "head")),
        limbs_{object_id(m, mjOBJ_BODY, Body::kLimbs[0]), object_id(m, mjOBJ_BODY, Body::kLimbs[1]),
               object_id(m, mjOBJ_BODY, Body::kLimbs[2]), object_id(m, mjOBJ_BODY, Body::kLimbs[3])},
        com_velocity_(m.sensor_adr[object_id(m, mjOBJ_SENSOR, Body::kComVelocity)]),
        nq_(static_cast<int>(m.nq)),
        nv_(static_cast<int>(m.nv)),
        nu_(static_cast<int>(m.nu)) {
    if (m.nq < 7 || m.jnt_type[0] != mjJNT_FREE)
      throw std::invalid_argument("xml_file: the humanoid's first joint must be its free root");
  }

  std::vector<core::ObsField> observation() const {
    if (kPureState) return {{"position", {nq_}}, {"velocity", {nv_}}};
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
    const double upright = upright_(d.xmat[9 * torso_ + Body::kUprightEntry], Arg::kScalar);
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
    if (kPureState) {
      out = std::copy(d.qpos, d.qpos + nq_, out);
      std::copy(d.qvel, d.qvel + nv_, out);
      return;
    }
    out = std::copy(d.qpos + 7, d.qpos + nq_, out);
    *out++ = d.xpos[3 * head_ + 2];
    // extremities: each limb's position from the torso, in the torso's frame
    const double* torso_pos = d.xpos + 3 * torso_;
    for (int limb : limbs_) {
      double torso_to_limb[3];
      for (int k = 0; k < 3; ++k) torso_to_limb[k] = d.xpos[3 * limb + k] - torso_pos[k];
      vec_dot_mat3(torso_to_limb, d.xmat + 9 * torso_, out);
      out += 3;
    }
    out = std::copy(d.xmat + 9 * torso_ + 6, d.xmat + 9 * torso_ + 9, out);
    out = std::copy(d.sensordata + com_velocity_, d.sensordata + com_velocity_ + 3, out);
    std::copy(d.qvel, d.qvel + nv_, out);
  }

 private:
  int torso_, head_, limbs_[4], com_velocity_, nq_, nv_, nu_;
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  Tolerance standing_{kStandHeight, kInf, kStandHeight / 4};
  Tolerance upright_{0.9, kInf, 1.9, Sigmoid::kLinear, 0};
  Tolerance small_control_{0, 0, 1, Sigmoid::kQuadratic, 0};
  Tolerance dont_move_{0, 0, 2};
  Tolerance move_{kMoveSpeed, kInf, kMoveSpeed, Sigmoid::kLinear, 0};
};

template <int kMoveSpeed, bool kPureState = false>
using Humanoid = HumanoidTask<HumanoidBody, kMoveSpeed, kPureState>;

}  // namespace fastvec::envs::dm_control::humanoid
