#pragma once
// Cheetah's run task: a port of dm_control/suite/cheetah.py (Cheetah).

#include <algorithm>
#include <limits>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::cheetah {

class Run {
 public:
  static constexpr const char* kModel = "cheetah.xml";
  static constexpr double kTimeLimit = 10;
  static constexpr double kControlTimestep = 0;
  static constexpr double kRunSpeed = 10;

  explicit Run(const mjModel& m)
      : speed_(m.sensor_adr[object_id(m, mjOBJ_SENSOR, "torso_subtreelinvel")]), nq_(static_cast<int>(m.nq)),
        nv_(static_cast<int>(m.nv)) {
    if (m.nq != m.njnt) throw std::invalid_argument("xml_file: the cheetah's joints must each have one position");
  }

  std::vector<core::ObsField> observation() const { return {{"position", {nq_ - 1}}, {"velocity", {nv_}}}; }

  // The limited joints uniform in their ranges (qpos indexed by joint), then 200 physics steps, time reset.
  void initialize_episode(Physics& p, int i, RandomState& random) const {
    const mjModel& m = p.model();
    mjData& d = p.data(i);
    for (int j = 0; j < m.njnt; ++j)
      if (m.jnt_limited[j] == 1) d.qpos[j] = random.uniform(m.jnt_range[2 * j], m.jnt_range[2 * j + 1]);
    p.step(i, 200);
    d.time = 0;
  }

  double reward(const mjModel&, const mjData& d) const { return run_(d.sensordata[speed_], Arg::kScalar); }

  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out = std::copy(d.qpos + 1, d.qpos + nq_, out);
    std::copy(d.qvel, d.qvel + nv_, out);
  }

 private:
  int speed_, nq_, nv_;
  Tolerance run_{kRunSpeed, std::numeric_limits<double>::infinity(), kRunSpeed, Sigmoid::kLinear, 0};
};

}  // namespace fastvec::envs::dm_control::cheetah
