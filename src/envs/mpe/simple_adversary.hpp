#pragma once
// simple_adversary_v3, a port of mpe2 1.1.1's mpe2/simple_adversary/simple_adversary.py: N good agents know
// which of N landmarks is the goal, one adversary does not; both are rewarded by distances to the goal.

#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/mpe/world.hpp"

namespace fastvec::envs::mpe {

class SimpleAdversary : public Scenario {
 public:
  static core::OptionTable options() { return options_with({{"N", core::OptionSpec::Kind::kInt, 2, 1, 1024}}); }

  static WorldDef world(const core::Options& o) {
    refuse(o, "simple_adversary_v3", "benchmark_data", "its infos are not modelled");
    WorldDef w;
    w.dim_c = 2;
    const int n = o.integer("N");
    for (int k = 0; k <= n; ++k) {
      Entity a = agent(k == 0 ? "adversary_0" : "agent_" + std::to_string(k - 1), 0.15);
      a.collide = false;
      a.silent = true;
      w.agents.push_back(a);
    }
    for (int k = 0; k < n; ++k) w.landmarks.push_back(landmark(0.08, false));
    return w;
  }

  static core::Spec spec(const core::Options& o) {
    const int n = o.integer("N");
    std::vector<int64_t> sizes(n + 1, 4 * n + 2);
    sizes[0] = 4 * n;
    return World(0, world(o), o.flag("continuous_actions")).spec(sizes);
  }

  SimpleAdversary(int n, const core::Options& o)
      : Scenario(n, world(o), o), n_(o.integer("N")), goal_(static_cast<size_t>(n)) {}

  void reset(int i, core::Pcg64& rng) {
    begin_episode(i);
    goal_[i] = static_cast<int>(rng.integers(n_));
    place(i, 0, 2 * n_ + 1, 1.0, rng);
  }

  core::BasicStepResult<double> step(int i, const float* actions) {
    world_.step(i, actions);
    const double* goal = world_.pos(i, n_ + 1 + goal_[i]);
    const double adversary = dist(world_.pos(i, 0), goal);
    double nearest = 0;
    for (int k = 1; k <= n_; ++k) {
      const double d = dist(world_.pos(i, k), goal);
      if (k == 1 || d < nearest) nearest = d;
    }
    double* r = rewards(i);
    r[0] = -adversary;
    // pos_rew + adv_rew, adv_rew = sum(...) starting from 0
    for (int k = 1; k <= n_; ++k) r[k] = -nearest + (0.0 + adversary);
    return result(i, false);
  }

  // good agents: [goal_rel_pos, landmark_rel_positions, other_agent_rel_positions]; the adversary: the last two
  void write_obs(int i, float* out) const {
    for (int k = 0; k <= n_; ++k) {
      const double* me = world_.pos(i, k);
      if (k > 0) out = rel(out, world_.pos(i, n_ + 1 + goal_[i]), me);
      for (int l = 0; l < n_; ++l) out = rel(out, world_.pos(i, n_ + 1 + l), me);
      for (int a = 0; a <= n_; ++a)
        if (a != k) out = rel(out, world_.pos(i, a), me);
    }
  }

 private:
  int n_;
  std::vector<int> goal_;  // the goal landmark of each env
};

}  // namespace fastvec::envs::mpe
