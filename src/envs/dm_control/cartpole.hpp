#pragma once
// Cartpole's balance and swing-up tasks, sparse or smooth, with one pole or a chain of kPoles (two_poles,
// three_poles: their models generated as cartpole.py's _make_model, fastvec/dm_control_models.py): a port of
// dm_control/suite/cartpole.py (Balance).

#include <algorithm>
#include <numbers>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::cartpole {

template <bool kSwingUp, bool kSparse, int kPoles = 1>
class Balance {
 public:
  static_assert(kPoles >= 1 && kPoles <= 3);
  static constexpr const char* kModel =
      kPoles == 1 ? "cartpole.xml" : (kPoles == 2 ? "cartpole_two_poles.xml" : "cartpole_three_poles.xml");
  static constexpr double kTimeLimit = 10;
  static constexpr double kControlTimestep = 0;

  explicit Balance(const mjModel& m)
      : slider_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "slider")]),
        hinge_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "hinge_1")]),
        first_pole_(object_id(m, mjOBJ_BODY, "pole_1")),
        poles_(static_cast<int>(m.nbody) - first_pole_),
        nv_(static_cast<int>(m.nv)) {
    if (m.nu < 1) throw std::invalid_argument("xml_file: the cart needs an actuator");
  }

  std::vector<core::ObsField> observation() const {
    return {{"position", {1 + 2 * poles_}}, {"velocity", {nv_}}};
  }

  void initialize_episode(Physics& p, int i, RandomState& random) const {
    mjData& d = p.data(i);
    const mjModel& m = p.model();
    if (kSwingUp) {
      d.qpos[slider_] = .01 * random.standard_normal();
      d.qpos[hinge_] = std::numbers::pi + .01 * random.standard_normal();
      for (int k = 2; k < m.nq; ++k) d.qpos[k] = .1 * random.standard_normal();
    } else {
      d.qpos[slider_] = random.uniform(-.1, .1);
      for (int k = 1; k < m.nq; ++k) d.qpos[k] = random.uniform(-.034, .034);
    }
    for (int k = 0; k < m.nv; ++k) d.qvel[k] = 0.01 * random.standard_normal();
  }

  double reward(const mjModel& m, const mjData& d) const {
    const double cart_position = d.qpos[slider_];
    if (kSparse) {
      double angle_in_bounds = 1.0;  // tolerance(pole_angle_cosine, (.995, 1)).prod()
      for (int b = first_pole_; b < m.nbody; ++b) angle_in_bounds *= angle_range_(pole_cosine(d, b), Arg::kArray);
      return cart_range_(cart_position, Arg::kScalar) * angle_in_bounds;
    }
    // upright.mean(): numpy's pairwise sum of (cos + 1) / 2 over the poles (under 8: in order), / count
    double upright = 0.0;
    for (int b = first_pole_; b < m.nbody; ++b) upright += (pole_cosine(d, b) + 1) / 2;
    upright /= poles_;
    const double centered = (1 + centered_(cart_position, Arg::kScalar)) / 2;
    const double small_control = (4 + small_control_(d.ctrl[0], Arg::kArray)) / 5;
    // tolerance(angular_vel, margin=5).min(): np.min propagates a NaN
    double small_velocity = small_velocity_(d.qvel[1], Arg::kArray);
    for (int k = 2; k < m.nv && !std::isnan(small_velocity); ++k) {
      const double v = small_velocity_(d.qvel[k], Arg::kArray);
      small_velocity = std::isnan(v) ? v : std::min(small_velocity, v);
    }
    small_velocity = (1 + small_velocity) / 2;
    return upright * small_control * small_velocity * centered;
  }

  // position: the cart's, then each pole's xmat zz and xz (bounded_position); velocity: qvel.
  void write_obs(const mjModel& m, const mjData& d, double* out) const {
    *out++ = d.qpos[slider_];
    for (int b = first_pole_; b < m.nbody; ++b) {
      *out++ = d.xmat[9 * b + 8];
      *out++ = d.xmat[9 * b + 2];
    }
    std::copy(d.qvel, d.qvel + m.nv, out);
  }

 private:
  static double pole_cosine(const mjData& d, int body) { return d.xmat[9 * body + 8]; }

  int slider_, hinge_, first_pole_, poles_, nv_;
  Tolerance cart_range_{-.25, .25}, angle_range_{.995, 1};
  Tolerance centered_{0, 0, 2}, small_control_{0, 0, 1, Sigmoid::kQuadratic, 0},
      small_velocity_{0, 0, 5};
};

}  // namespace fastvec::envs::dm_control::cartpole
