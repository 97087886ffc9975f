#pragma once
// simple_v3, a port of mpe2 1.1.1's mpe2/simple/simple.py: one agent rewarded by minus its squared distance
// to one landmark.

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/mpe/world.hpp"

namespace fastvec::envs::mpe {

class Simple : public Scenario {
 public:
  static core::OptionTable options() { return options_with({}); }

  static WorldDef world(const core::Options& o) {
    refuse(o, "simple_v3", "benchmark_data", "its infos are not modelled");
    WorldDef w;
    Entity a = agent("agent_0");
    a.collide = false;
    a.silent = true;
    w.agents = {a};
    w.landmarks = {landmark(0.05, false)};
    return w;
  }

  static core::Spec spec(const core::Options& o) {
    return World(0, world(o), o.flag("continuous_actions")).spec({4});
  }

  Simple(int n, const core::Options& o) : Scenario(n, world(o), o) {}

  void reset(int i, core::Pcg64& rng) {
    begin_episode(i);
    place(i, 0, 2, 1.0, rng);
  }

  core::BasicStepResult<double> step(int i, const float* actions) {
    world_.step(i, actions);
    const double* a = world_.pos(i, 0);
    const double* l = world_.pos(i, 1);
    const double dx = a[0] - l[0], dy = a[1] - l[1];
    rewards(i)[0] = -(dx * dx + dy * dy);
    return result(i, false);
  }

  // [self_vel, landmark_rel_position]
  void write_obs(int i, float* out) const {
    out = put(out, world_.vel(i, 0), 2);
    rel(out, world_.pos(i, 1), world_.pos(i, 0));
  }
};

}  // namespace fastvec::envs::mpe
