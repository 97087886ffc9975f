#pragma once
// simple_spread_v3, a port of mpe2 1.1.1's mpe2/simple_spread/simple_spread.py: N agents cover N landmarks,
// rewarded globally by the sum of each landmark's nearest-agent distance and locally by -1 a collision, mixed by
// local_ratio.

#include <algorithm>
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
    core::OptionTable own = {{"N", K::kInt, 3, 1, 1024},
                             {"local_ratio", K::kReal, 0.5, 0.0, 1.0},
                             {"curriculum", K::kBool, 0},
                             {"terminate_on_success", K::kBool, 0}};
    for (const core::OptionSpec& o : neighbor_options()) own.push_back(o);
    return options_with(own);
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
    const int landmarks = o.integer("num_landmark_neighbors"), others = o.integer("num_agent_neighbors");
    const int64_t size = 4 + 2 * (landmarks ? landmarks : n) + 4 * (others ? others : n - 1);
    return World(0, world(o), o.flag("continuous_actions")).spec(std::vector<int64_t>(n, size));
  }

  SimpleSpread(int n, const core::Options& o)
      : Scenario(n, world(o), o), n_(o.integer("N")), local_ratio_(o.get("local_ratio")),
        terminate_on_success_(o.flag("terminate_on_success")),
        landmark_neighbors_(o.integer("num_landmark_neighbors")),
        agent_neighbors_(o.integer("num_agent_neighbors")) {}

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
      const double m = nearest_agent_distance(i, l);
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

  // [self_vel, self_pos, landmark_rel_positions, other_agent_rel_positions, communication] of each agent; with
  // num_*_neighbors, the nearest ones only, closest first, zero-padded
  void write_obs(int i, float* out) const {
    int* ids = near_ids_.data();
    int* selected = near_selected_.data();
    for (int k = 0; k < n_; ++k) {
      const double* me = world_.pos(i, k);
      out = put(out, world_.vel(i, k), 2);
      out = put(out, me, 2);
      if (landmark_neighbors_) {
        for (int l = 0; l < n_; ++l) ids[l] = n_ + l;
        const int m = nearest(i, k, ids, n_, landmark_neighbors_, selected);
        out = padded_rel(out, i, k, selected, m, landmark_neighbors_);
      } else {
        for (int l = 0; l < n_; ++l) out = rel(out, world_.pos(i, n_ + l), me);
      }
      int count = 0;
      for (int a = 0; a < n_; ++a)
        if (a != k) ids[count++] = a;
      const int slots = agent_neighbors_ ? agent_neighbors_ : count;
      const int m = agent_neighbors_ ? nearest(i, k, ids, count, agent_neighbors_, selected) : count;
      if (!agent_neighbors_) std::copy_n(ids, count, selected);
      out = padded_rel(out, i, k, selected, m, slots);
      for (int j = 0; j < m; ++j) out = put(out, world_.comm(i, selected[j]), world_.dim_c());
      out = std::fill_n(out, world_.dim_c() * (slots - m), 0.0f);
    }
  }

 private:
  static constexpr double kCaptureRadius = 0.1;

  // min over agents of the distance to landmark l (the first of equals, as Python's min)
  double nearest_agent_distance(int i, int l) const {
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
  int landmark_neighbors_, agent_neighbors_;  // 0: None
};

}  // namespace fastvec::envs::mpe
