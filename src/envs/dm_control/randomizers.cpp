#include <numbers>

#include "envs/dm_control/dm_control_env.hpp"

namespace fastvec::envs::dm_control {
namespace {

// x /= np.linalg.norm(x), as numpy sums the norm (envs/mujoco/simulation.hpp).
void normalize(double* x, int n) {
  const double norm = mujoco::norm(x, n);
  for (int k = 0; k < n; ++k) x[k] /= norm;
}

}  // namespace

void randomize_limited_and_rotational_joints(const mjModel& m, mjData& d, RandomState& random) {
  for (int j = 0; j < m.njnt; ++j) {
    const int type = m.jnt_type[j];
    double* qpos = d.qpos + m.jnt_qposadr[j];
    const double range_min = m.jnt_range[2 * j], range_max = m.jnt_range[2 * j + 1];
    if (m.jnt_limited[j]) {
      if (type == mjJNT_HINGE || type == mjJNT_SLIDE) {
        qpos[0] = random.uniform(range_min, range_max);
      } else if (type == mjJNT_BALL) {  // random_limited_quaternion(random, range_max)
        double axis[3];
        for (double& a : axis) a = random.standard_normal();
        normalize(axis, 3);
        const double angle = random.random_sample() * range_max;
        mju_axisAngle2Quat(qpos, axis, angle);
      }
    } else if (type == mjJNT_HINGE) {
      qpos[0] = random.uniform(-std::numbers::pi, std::numbers::pi);
    } else if (type == mjJNT_BALL) {
      for (int k = 0; k < 4; ++k) qpos[k] = random.standard_normal();
      normalize(qpos, 4);
    } else if (type == mjJNT_FREE) {
      for (int k = 3; k < 7; ++k) qpos[k] = random.random_sample();
      normalize(qpos + 3, 4);
    }
  }
}

}  // namespace fastvec::envs::dm_control
