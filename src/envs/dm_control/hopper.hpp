#pragma once
// Hopper's stand and hop tasks: a port of dm_control/suite/hopper.py (Hopper).

#include <algorithm>
#include <limits>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"
#include "envs/numpy_unary.hpp"

namespace fastvec::envs::dm_control::hopper {

template <bool kHopping>
class Hopper {
 public:
  static constexpr const char* kModel = "hopper.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;

  explicit Hopper(const mjModel& m)
      : torso_(object_id(m, mjOBJ_BODY, "torso")),
        foot_(object_id(m, mjOBJ_BODY, "foot")),
        speed_(m.sensor_adr[object_id(m, mjOBJ_SENSOR, "torso_subtreelinvel")]),
        toe_(m.sensor_adr[object_id(m, mjOBJ_SENSOR, "touch_toe")]),
        heel_(m.sensor_adr[object_id(m, mjOBJ_SENSOR, "touch_heel")]),
        nq_(static_cast<int>(m.nq)),
        nv_(static_cast<int>(m.nv)),
        nu_(static_cast<int>(m.nu)) {}

  std::vector<core::ObsField> observation() const {
    return {{"position", {nq_ - 1}}, {"velocity", {nv_}}, {"touch", {2}}};
  }

  void initialize_episode(Physics& p, int i, RandomState& random) const {
    randomize_limited_and_rotational_joints(p.model(), p.data(i), random);
  }

  double reward(const mjModel&, const mjData& d) const {
    const double height = d.xipos[3 * torso_ + 2] - d.xipos[3 * foot_ + 2];
    const double standing = standing_(height, Arg::kScalar);
    if (kHopping) return standing * hopping_(d.sensordata[speed_], Arg::kScalar);
    // tolerance(control, margin=1, value_at_margin=0, sigmoid="quadratic").mean()
    const double small_control =
        mujoco::pairwise_sum([&](int64_t k) { return small_control_(d.ctrl[k], Arg::kArray); }, 0, nu_) / nu_;
    return standing * ((small_control + 4) / 5);
  }

  // position: qpos[1:]; velocity: qvel; touch: np.log1p of the toe's and heel's touch sensors.
  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out = std::copy(d.qpos + 1, d.qpos + nq_, out);
    out = std::copy(d.qvel, d.qvel + nv_, out);
    out[0] = numpy_log1p(d.sensordata[toe_]);
    out[1] = numpy_log1p(d.sensordata[heel_]);
  }

 private:
  static constexpr double kStandHeight = 0.6, kHopSpeed = 2;
  int torso_, foot_, speed_, toe_, heel_, nq_, nv_, nu_;
  Tolerance standing_{kStandHeight, 2};
  Tolerance hopping_{kHopSpeed, std::numeric_limits<double>::infinity(), kHopSpeed / 2, Sigmoid::kLinear, 0.5};
  Tolerance small_control_{0, 0, 1, Sigmoid::kQuadratic, 0};
};

}  // namespace fastvec::envs::dm_control::hopper
