#pragma once
// simple_spread_v3, a port of mpe2 1.1.1's mpe2/simple_spread/simple_spread.py: N agents cover N landmarks,
// rewarded globally by the sum of each landmark's nearest-agent distance and locally by -1 a collision, mixed by
// local_ratio.

#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/mpe/world.hpp"

namespace fastvec::envs::mpe {

class SimpleSpread : public Scenario {
 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return options_with({{"N", K::kInt, 3, 1, 1024},
                         {"local_ratio", K::kReal, 0.5, 0.0, 1.0},
                         {"curriculum", K::kBool, 0},
                         {"terminate_on_success", K::kBool, 0}});
  }

  static WorldDef world(const core::Options& o) {
    refuse(o, "simple_spread_v3", "benchmark_data", "its infos are not modelled");
    refuse(o, "simple_spread_v3", "curriculum", "its stage is changed by calls on the Python env");
    WorldDef w;
    w.dim_c = 2;
    const int n = o.integer("N");
    for (int k = 0; k < n; ++k) {
      Entity a = agent("agent_" + std::to_string(k), 0.15);
      a.silent = true;
      w.agents.push_back(a);
    }
    for (int k = 0; k < n; ++k) w.landmarks.push_back(landmark(0.05, false));
    return w;
  }

  static core::Spec spec(const core::Options& o) {
    const int n = o.integer("N");
    return World(0, world(o), o.flag("continuous_actions")).spec(std::vector<int64_t>(n, 6 * n));
  }

  SimpleSpread(int n, const core::Options& o)
      : Scenario(n, world(o), o), n_(o.integer("N")), local_ratio_(o.get("local_ratio")),
        terminate_on_success_(o.flag("terminate_on_success")) {}

  void reset(int i, core::Pcg64& rng) {
    begin_episode(i);
    place(i, 0, 2 * n_, 1.0, rng);
  }

  core::BasicStepResult<double> step(int i, const float* actions) {
    world_.step(i, actions);
    // global_reward: rew = 0; rew -= min(dists) for each landmark
    double global = 0.0;
    bool covered = true;
    for (int l = 0; l < n_; ++l) {
      const double m = nearest(i, l);
      global -= m;
      covered = covered && !(m >= kCaptureRadius);
    }
    double* r = rewards(i);
    for (int k = 0; k < n_; ++k) {
      double own = 0.0;
      for (int a = 0; a < n_; ++a)
        own -= 1.0 * (a != k && dist(world_.pos(i, a), world_.pos(i, k)) < 0.3 ? 1.0 : 0.0);
      r[k] = global * (1 - local_ratio_) + own * local_ratio_;
    }
    return result(i, terminate_on_success_ && covered);
  }

  // [self_vel, self_pos, landmark_rel_positions, other_agent_rel_positions, communication] of each agent
  void write_obs(int i, float* out) const {
    for (int k = 0; k < n_; ++k) {
      const double* me = world_.pos(i, k);
      out = put(out, world_.vel(i, k), 2);
      out = put(out, me, 2);
      for (int l = 0; l < n_; ++l) out = rel(out, world_.pos(i, n_ + l), me);
      for (int a = 0; a < n_; ++a)
        if (a != k) out = rel(out, world_.pos(i, a), me);
      for (int a = 0; a < n_; ++a)
        if (a != k) out = put(out, world_.comm(i, a), world_.dim_c());
    }
  }

 private:
  static constexpr double kCaptureRadius = 0.1;

  // min over agents of the distance to landmark l (the first of equals, as Python's min)
  double nearest(int i, int l) const {
    double m = 0;
    for (int a = 0; a < n_; ++a) {
      const double d = dist(world_.pos(i, a), world_.pos(i, n_ + l));
      if (a == 0 || d < m) m = d;
    }
    return m;
  }

  int n_;
  double local_ratio_;
  bool terminate_on_success_;
};

}  // namespace fastvec::envs::mpe
