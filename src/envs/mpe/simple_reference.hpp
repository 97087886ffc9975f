#pragma once
// simple_reference_v3, a port of mpe2 1.1.1's mpe2/simple_reference/simple_reference.py: two agents each know
// the other's goal landmark and tell it; rewards mixed by local_ratio.

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/mpe/world.hpp"

namespace fastvec::envs::mpe {

class SimpleReference : public Scenario {
 public:
  static core::OptionTable options() {
    return options_with({{"local_ratio", core::OptionSpec::Kind::kReal, 0.5, 0.0, 1.0}});
  }

  static WorldDef world(const core::Options& o) {
    refuse(o, "simple_reference_v3", "benchmark_data", "its infos are not modelled");
    WorldDef w;
    w.dim_c = 10;
    for (const char* name : {"agent_0", "agent_1"}) {
      Entity a = agent(name);
      a.collide = false;
      w.agents.push_back(a);
    }
    for (int k = 0; k < 3; ++k) w.landmarks.push_back(landmark(0.05, false));
    return w;
  }

  static core::Spec spec(const core::Options& o) {
    return World(0, world(o), o.flag("continuous_actions")).spec({21, 21});
  }

  SimpleReference(int n, const core::Options& o)
      : Scenario(n, world(o), o), local_ratio_(o.get("local_ratio")), goal_(static_cast<size_t>(n) * 2) {}

  void reset(int i, core::Pcg64& rng) {
    begin_episode(i);
    goal_[2 * i] = static_cast<int>(rng.integers(3));
    goal_[2 * i + 1] = static_cast<int>(rng.integers(3));
    place(i, 0, 5, 1.0, rng);
  }

  core::BasicStepResult<double> step(int i, const float* actions) {
    world_.step(i, actions);
    // reward(agent k): minus the distance of the other agent (goal_a) to k's goal_b
    const double own[2] = {-dist(world_.pos(i, 1), world_.pos(i, 2 + goal_[2 * i])),
                           -dist(world_.pos(i, 0), world_.pos(i, 2 + goal_[2 * i + 1]))};
    const double global = (0.0 + own[0] + own[1]) / 2;
    double* r = rewards(i);
    for (int k = 0; k < 2; ++k) r[k] = global * (1 - local_ratio_) + own[k] * local_ratio_;
    return result(i, false);
  }

  // [self_vel, landmark_rel_positions, goal_b's color, the other agent's communication]
  void write_obs(int i, float* out) const {
    for (int k = 0; k < 2; ++k) {
      const double* me = world_.pos(i, k);
      out = put(out, world_.vel(i, k), 2);
      for (int l = 2; l < 5; ++l) out = rel(out, world_.pos(i, l), me);
      double color[3] = {0.25, 0.25, 0.25};
      color[goal_[2 * i + k]] = 0.75;
      out = put(out, color, 3);
      out = put(out, world_.comm(i, 1 - k), 10);
    }
  }

 private:
  double local_ratio_;
  std::vector<int> goal_;  // [env][agent]: each agent's goal_b
};

}  // namespace fastvec::envs::mpe
