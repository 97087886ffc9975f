#pragma once
// simple_tag_v3, a port of mpe2 1.1.1's mpe2/simple_tag/simple_tag.py: slower adversaries chase faster good
// agents among obstacles; +10 to every adversary for each catch, -10 to the caught, and the good agents
// penalized for leaving the screen (screen_penalty, world.hpp).

#include <algorithm>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/mpe/world.hpp"

namespace fastvec::envs::mpe {

class SimpleTag : public Scenario {
 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return options_with({{"num_good", K::kInt, 1, 1, 1024},
                         {"num_adversaries", K::kInt, 3, 0, 1024},
                         {"num_obstacles", K::kInt, 2, 0, 1024},
                         {"curriculum", K::kBool, 0},
                         {"terminate_on_success", K::kBool, 0},
                         neighbor_options()[0],
                         neighbor_options()[1]});
  }

  static WorldDef world(const core::Options& o) {
    refuse(o, "simple_tag_v3", "benchmark_data", "its infos are not modelled");
    refuse(o, "simple_tag_v3", "curriculum", "its stage is changed by calls on the Python env");
    WorldDef w;
    w.dim_c = 2;
    const int adversaries = o.integer("num_adversaries"), good = o.integer("num_good");
    for (int k = 0; k < adversaries + good; ++k) {
      const bool adversary = k < adversaries;
      Entity a = agent(adversary ? "adversary_" + std::to_string(k) : "agent_" + std::to_string(k - adversaries),
                       adversary ? 0.075 : 0.05);
      a.silent = true;
      a.accel = adversary ? 3.0 : 4.0;
      a.max_speed = adversary ? 1.0 : 1.3;
      w.agents.push_back(a);
    }
    for (int k = 0; k < o.integer("num_obstacles"); ++k) w.landmarks.push_back(landmark(0.2, true));
    return w;
  }

  static core::Spec spec(const core::Options& o) {
    const int adversaries = o.integer("num_adversaries"), good = o.integer("num_good");
    const int agents = adversaries + good, landmarks = o.integer("num_obstacles");
    const int landmark_slots = o.integer("num_landmark_neighbors"), agent_slots = o.integer("num_agent_neighbors");
    std::vector<int64_t> sizes;
    for (int k = 0; k < agents; ++k) {
      const int velocities = agent_slots ? agent_slots : (k < adversaries ? good : good - 1);
      sizes.push_back(4 + 2 * (landmark_slots ? landmark_slots : landmarks) +
                      2 * (agent_slots ? agent_slots : agents - 1) + 2 * velocities);
    }
    return World(0, world(o), o.flag("continuous_actions")).spec(sizes);
  }

  SimpleTag(int n, const core::Options& o)
      : Scenario(n, world(o), o),
        adversaries_(o.integer("num_adversaries")),
        agents_(adversaries_ + o.integer("num_good")),
        terminate_on_success_(o.flag("terminate_on_success")),
        landmark_neighbors_(o.integer("num_landmark_neighbors")),
        agent_neighbors_(o.integer("num_agent_neighbors")) {}

  void reset(int i, core::Pcg64& rng) {
    begin_episode(i);
    place(i, 0, agents_, 1.0, rng);
    place(i, agents_, world_.num_entities() - agents_, 0.9, rng);
  }

  core::BasicStepResult<double> step(int i, const float* actions) {
    world_.step(i, actions);
    double catches = 0.0;  // adversary_reward: rew += 10 for each (good agent, adversary) pair in contact
    bool all_caught = true;
    for (int g = adversaries_; g < agents_; ++g) {
      bool caught = false;
      for (int a = 0; a < adversaries_; ++a)
        if (is_collision(i, g, a)) {
          catches += 10;
          caught = true;
        }
      all_caught = all_caught && caught;
    }
    double* r = rewards(i);
    for (int a = 0; a < adversaries_; ++a) r[a] = catches;
    for (int g = adversaries_; g < agents_; ++g) {
      double rew = 0.0;
      for (int a = 0; a < adversaries_; ++a)
        if (is_collision(i, a, g)) rew -= 10;
      const double* p = world_.pos(i, g);
      for (int d = 0; d < 2; ++d) rew -= screen_penalty(std::fabs(p[d]));
      r[g] = rew;
    }
    return result(i, terminate_on_success_ && all_caught);
  }

  // [self_vel, self_pos, landmark_rel_positions, other_agent_rel_positions, good_agent_velocities]; with
  // num_*_neighbors, the nearest landmarks and agents only, closest first, zero-padded, and the velocities of the
  // nearest agents (zeros for adversaries)
  void write_obs(int i, float* out) const {
    int* ids = near_ids_.data();
    int* selected = near_selected_.data();
    const int landmarks = world_.num_entities() - agents_;
    for (int k = 0; k < agents_; ++k) {
      const double* me = world_.pos(i, k);
      out = put(out, world_.vel(i, k), 2);
      out = put(out, me, 2);
      for (int l = 0; l < landmarks; ++l) ids[l] = agents_ + l;
      if (landmark_neighbors_) {
        out = padded_rel(out, i, k, selected, nearest(i, k, ids, landmarks, landmark_neighbors_, selected),
                         landmark_neighbors_);
      } else {
        out = padded_rel(out, i, k, ids, landmarks, landmarks);
      }
      int count = 0;
      for (int a = 0; a < agents_; ++a)
        if (a != k) ids[count++] = a;
      if (!agent_neighbors_) {
        out = padded_rel(out, i, k, ids, count, count);
        for (int a = adversaries_; a < agents_; ++a)
          if (a != k) out = put(out, world_.vel(i, a), 2);
        continue;
      }
      const int m = nearest(i, k, ids, count, agent_neighbors_, selected);
      out = padded_rel(out, i, k, selected, m, agent_neighbors_);
      for (int j = 0; j < m; ++j) {
        if (selected[j] >= adversaries_) {
          out = put(out, world_.vel(i, selected[j]), 2);
        } else {
          out = std::fill_n(out, 2, 0.0f);
        }
      }
      out = std::fill_n(out, 2 * (agent_neighbors_ - m), 0.0f);
    }
  }

 private:
  int adversaries_, agents_;
  bool terminate_on_success_;
  int landmark_neighbors_, agent_neighbors_;  // 0: None
};

}  // namespace fastvec::envs::mpe
