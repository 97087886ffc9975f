#pragma once
// The CMU humanoid's stand, walk and run tasks: a port of dm_control/suite/humanoid_CMU.py (HumanoidCMU). As
// humanoid.py's tasks (humanoid.hpp), over the CMU body: its thorax is the torso, read for uprightness through
// xmat's zy (not zz).

#include "envs/dm_control/humanoid.hpp"

namespace fastvec::envs::dm_control::humanoid_cmu {

struct CmuBody {
  static constexpr const char* kModel = "humanoid_CMU.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;
  static constexpr const char* kTorso = "thorax";
  static constexpr const char* kLimbs[4] = {"lhand", "lfoot", "rhand", "rfoot"};
  static constexpr const char* kComVelocity = "thorax_subtreelinvel";
  static constexpr int kUprightEntry = 7;  // zy
};

// kMoveSpeed: 0 (stand), 1 (walk) or 10 (run).
template <int kMoveSpeed>
using HumanoidCMU = humanoid::HumanoidTask<CmuBody, kMoveSpeed>;

}  // namespace fastvec::envs::dm_control::humanoid_cmu
