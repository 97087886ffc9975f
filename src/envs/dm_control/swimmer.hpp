#pragma once
// Swimmer's 6- and 15-link tasks: a port of dm_control/suite/swimmer.py (Swimmer), on the model its
// get_model_and_assets(n_joints) builds (fastvec/dm_control_models.py makes the same file).
//
// The task moves the target geom (and its light) in the model at each reset; here the model is shared by a
// block's envs, so each env keeps its target's position itself. The target is a static world geom of a model
// without contacts: where it is changes no physics and no observed sensor (only the framepos sensor
// 'target_pos', which get_observation skips), only geom_xpos['target'], which equals its geom_pos.

#include <algorithm>
#include <array>
#include <numbers>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::swimmer {

// kBodies: 6 or 15 (the model swimmer<kBodies>.xml).
template <int kBodies>
class Swimmer {
 public:
  static constexpr const char* kModel = kBodies == 6 ? "swimmer6.xml" : "swimmer15.xml";
  static constexpr double kTimeLimit = 30;
  static constexpr double kControlTimestep = .03;

  explicit Swimmer(const mjModel& m)
      : head_(object_id(m, mjOBJ_BODY, "head")),
        nose_(object_id(m, mjOBJ_GEOM, "nose")),
        target_geom_(object_id(m, mjOBJ_GEOM, "target")),
        nq_(static_cast<int>(m.nq)),
        bodies_(static_cast<int>(m.nsensordata - 12) / 6),
        target_size_(m.geom_size[3 * target_geom_]),
        reach_(0, target_size_, 5 * target_size_, Sigmoid::kLongTail) {
    if (m.nq < 3 || m.nsensordata < 12 || (m.nsensordata - 12) % 6 != 0)
      throw std::invalid_argument(
          "xml_file: the swimmer needs 3 root joints and 12 sensor values, then a velocimeter and a gyro per body");
    if (m.geom_bodyid[target_geom_] != 0) throw std::invalid_argument("xml_file: the target must be a world geom");
  }

  std::vector<core::ObsField> observation() const {
    return {{"joints", {nq_ - 3}}, {"to_target", {2}}, {"body_velocities", {3 * bodies_}}};
  }

  void initialize_episode(Physics& p, int i, RandomState& random) {
    randomize_limited_and_rotational_joints(p.model(), p.data(i), random);
    const bool close_target = random.random_sample() < .2;
    const double target_box = close_target ? .3 : 2;
    if (targets_.size() <= static_cast<size_t>(i)) targets_.resize(i + 1);
    targets_[i][0] = random.uniform(-target_box, target_box);
    targets_[i][1] = random.uniform(-target_box, target_box);
    targets_[i][2] = p.model().geom_pos[3 * target_geom_ + 2];
  }

  double reward(const mjModel&, const mjData& d, int i) const {
    double to_target[3];
    nose_to_target(d, i, to_target);
    return reach_(mujoco::norm(to_target, 2), Arg::kScalar);
  }

  // joints: qpos past the root; to_target: (target - nose) in the head's frame, x and y; body_velocities: each
  // body's velocimeter x, y and gyro z.
  void write_obs(const mjModel&, const mjData& d, int i, double* out) const {
    out = std::copy(d.qpos + 3, d.qpos + nq_, out);
    double to_target[3];
    nose_to_target(d, i, to_target);
    *out++ = to_target[0];
    *out++ = to_target[1];
    for (int b = 0; b < bodies_; ++b) {
      const double* v = d.sensordata + 12 + 6 * b;
      *out++ = v[0];
      *out++ = v[1];
      *out++ = v[5];
    }
  }

 private:
  void nose_to_target(const mjData& d, int i, double* out) const {
    double global[3];
    for (int k = 0; k < 3; ++k) global[k] = targets_[i][k] - d.geom_xpos[3 * nose_ + k];
    vec_dot_mat3(global, d.xmat + 9 * head_, out);
  }

  int head_, nose_, target_geom_, nq_, bodies_;
  double target_size_;
  Tolerance reach_;
  std::vector<std::array<double, 3>> targets_;  // each env's target, drawn at its reset
};

}  // namespace fastvec::envs::dm_control::swimmer
