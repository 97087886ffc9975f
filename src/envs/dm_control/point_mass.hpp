#pragma once
// Point mass's easy and hard tasks: a port of dm_control/suite/point_mass.py (PointMass). The hard task
// (randomize_gains) draws each episode's actuator directions into the model (wrap_prm), so each env owns its model.

#include <algorithm>
#include <cmath>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::point_mass {

template <bool kRandomizeGains>
class PointMass {
 public:
  static constexpr const char* kModel = "point_mass.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = 0;
  static constexpr bool kModelPerEnv = kRandomizeGains;

  explicit PointMass(const mjModel& m)
      : target_(object_id(m, mjOBJ_GEOM, "target")),
        pointmass_(object_id(m, mjOBJ_GEOM, "pointmass")),
        nq_(static_cast<int>(m.nq)),
        nv_(static_cast<int>(m.nv)),
        nu_(static_cast<int>(m.nu)),
        near_target_(0, m.geom_size[3 * target_], m.geom_size[3 * target_]) {}

  std::vector<core::ObsField> observation() const { return {{"position", {nq_}}, {"velocity", {nv_}}}; }

  void initialize_episode(Physics& p, int i, RandomState& random) const {
    if (!kRandomizeGains) {
      randomize_limited_and_rotational_joints(p.model(), p.data(i), random);
      return;
    }
    // Each control drives a random unit combination of the two joints; the two directions not near parallel.
    mjModel& m = p.own_model(i);
    randomize_limited_and_rotational_joints(m, p.data(i), random);
    double dir1[2], dir2[2];
    random_direction(random, dir1);
    do random_direction(random, dir2);
    while (std::fabs(dot(dir1, dir2)) > 0.9);
    std::copy(dir1, dir1 + 2, m.wrap_prm);
    std::copy(dir2, dir2 + 2, m.wrap_prm + 2);
  }

  // near_target * (control_reward + 4) / 5, control_reward the mean of each control's quadratic tolerance
  double reward(const mjModel&, const mjData& d) const {
    double to_target[3];
    for (int k = 0; k < 3; ++k) to_target[k] = d.geom_xpos[3 * target_ + k] - d.geom_xpos[3 * pointmass_ + k];
    const double near_target = near_target_(mujoco::norm(to_target, 3), Arg::kScalar);
    const double control_reward =
        mujoco::pairwise_sum([&](int64_t k) { return small_control_(d.ctrl[k], Arg::kArray); }, 0, nu_) / nu_;
    const double small_control = (control_reward + 4) / 5;
    return near_target * small_control;
  }

  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out = std::copy(d.qpos, d.qpos + nq_, out);
    std::copy(d.qvel, d.qvel + nv_, out);
  }

 private:
  // randn(2), divided by its norm.
  static void random_direction(RandomState& random, double* dir) {
    for (int k = 0; k < 2; ++k) dir[k] = random.standard_normal();
    const double norm = mujoco::norm(dir, 2);
    for (int k = 0; k < 2; ++k) dir[k] /= norm;
  }

  // np.dot(a, b) of two 2-vectors, summed as numpy's dot sums them (mujoco::numpy_dot; two values: two kinds).
  static double dot(const double* a, const double* b) {
    if (mujoco::numpy_dot.load(std::memory_order_relaxed) == mujoco::DotKind::kFused)
      return std::fma(a[1], b[1], std::fma(a[0], b[0], 0.0));
    return (0.0 + a[0] * b[0]) + a[1] * b[1];
  }

  int target_, pointmass_, nq_, nv_, nu_;
  Tolerance near_target_, small_control_{0, 0, 1, Sigmoid::kQuadratic, 0};
};

using Easy = PointMass<false>;
using Hard = PointMass<true>;

}  // namespace fastvec::envs::dm_control::point_mass
