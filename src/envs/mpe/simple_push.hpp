#pragma once
// simple_push_v3, a port of mpe2 1.1.1's mpe2/simple_push/simple_push.py: a good agent goes to its goal
// landmark, an adversary (which does not know the goal) pushes it away.

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/mpe/world.hpp"

namespace fastvec::envs::mpe {

class SimplePush : public Scenario {
 public:
  static core::OptionTable options() { return options_with({}); }

  static WorldDef world(const core::Options& o) {
    refuse(o, "simple_push_v3", "benchmark_data", "its infos are not modelled");
    WorldDef w;
    w.dim_c = 2;
    for (const char* name : {"adversary_0", "agent_0"}) {
      Entity a = agent(name);
      a.silent = true;
      w.agents.push_back(a);
    }
    w.landmarks = {landmark(0.05, false), landmark(0.05, false)};
    return w;
  }

  static core::Spec spec(const core::Options& o) {
    return World(0, world(o), o.flag("continuous_actions")).spec({8, 19});
  }

  SimplePush(int n, const core::Options& o) : Scenario(n, world(o), o), goal_(static_cast<size_t>(n)) {}

  void reset(int i, core::Pcg64& rng) {
    begin_episode(i);
    goal_[i] = static_cast<int>(rng.integers(2));
    place(i, 0, 4, 1.0, rng);
  }

  core::BasicStepResult<double> step(int i, const float* actions) {
    world_.step(i, actions);
    const double* goal = world_.pos(i, 2 + goal_[i]);
    const double agent_dist = dist(world_.pos(i, 1), goal);
    double* r = rewards(i);
    r[0] = agent_dist - dist(goal, world_.pos(i, 0));
    r[1] = -agent_dist;
    return result(i, false);
  }

  // the adversary: [self_vel, landmark_rel_positions, other_agent_rel_position]; the good agent:
  // [self_vel, goal_rel_position, own color, landmark_rel_positions, landmark colors, other_agent_rel_position]
  void write_obs(int i, float* out) const {
    const double* adversary = world_.pos(i, 0);
    const double* me = world_.pos(i, 1);
    out = put(out, world_.vel(i, 0), 2);
    for (int l = 2; l < 4; ++l) out = rel(out, world_.pos(i, l), adversary);
    out = rel(out, me, adversary);
    out = put(out, world_.vel(i, 1), 2);
    out = rel(out, world_.pos(i, 2 + goal_[i]), me);
    double color[3] = {0.25, 0.25, 0.25};
    color[goal_[i] + 1] += 0.5;
    out = put(out, color, 3);
    for (int l = 2; l < 4; ++l) out = rel(out, world_.pos(i, l), me);
    for (int l = 0; l < 2; ++l) {
      double lc[3] = {0.1, 0.1, 0.1};
      lc[l + 1] += 0.8;
      out = put(out, lc, 3);
    }
    rel(out, adversary, me);
  }

 private:
  std::vector<int> goal_;
};

}  // namespace fastvec::envs::mpe
