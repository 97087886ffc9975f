#pragma once
// simple_world_comm_v3, a port of mpe2 1.1.1's mpe2/simple_world_comm/simple_world_comm.py: simple_tag with food
// for the good agents, forests that hide whoever is inside from those outside, and a leader adversary who
// sees everyone and speaks to the others.

#include <cstdint>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/mpe/world.hpp"

namespace fastvec::envs::mpe {

class SimpleWorldComm : public Scenario {
 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return options_with({{"num_good", K::kInt, 2, 1, 1024},
                         {"num_adversaries", K::kInt, 4, 0, 1024},
                         {"num_obstacles", K::kInt, 1, 0, 1024},
                         {"num_food", K::kInt, 2, 1, 1024},
                         {"num_forests", K::kInt, 2, 0, 1024}});
  }

  static WorldDef world(const core::Options& o) {
    refuse(o, "simple_world_comm_v3", "benchmark_data", "its infos are not modelled");
    WorldDef w;
    w.dim_c = 4;
    const int adversaries = o.integer("num_adversaries"), agents = adversaries + o.integer("num_good");
    for (int k = 0; k < agents; ++k) {
      const bool adversary = k < adversaries;
      const int index = adversary ? (k == 0 ? 0 : k - 1) : k - adversaries;
      const std::string base = k == 0 ? "leadadversary" : adversary ? "adversary" : "agent";
      Entity a = agent(base + "_" + std::to_string(index), adversary ? 0.075 : 0.045);
      a.silent = k > 0;
      a.accel = adversary ? 3.0 : 4.0;
      a.max_speed = adversary ? 1.0 : 1.3;
      w.agents.push_back(a);
    }
    for (int k = 0; k < o.integer("num_obstacles"); ++k) w.landmarks.push_back(landmark(0.2, true));
    for (int k = 0; k < o.integer("num_food"); ++k) w.landmarks.push_back(landmark(0.03, false));
    for (int k = 0; k < o.integer("num_forests"); ++k) w.landmarks.push_back(landmark(0.3, false));
    return w;
  }

  static core::Spec spec(const core::Options& o) {
    const int adversaries = o.integer("num_adversaries"), good = o.integer("num_good");
    const int agents = adversaries + good, forests = o.integer("num_forests");
    const int landmarks = o.integer("num_obstacles") + o.integer("num_food") + forests;
    std::vector<int64_t> sizes;
    for (int k = 0; k < agents; ++k) {
      const int good_others = good - (k >= adversaries ? 1 : 0);
      sizes.push_back(4 + 2 * landmarks + 2 * (agents - 1) + 2 * good_others + forests +
                      (speaks_to(k, adversaries) ? 4 : 0));
    }
    return World(0, world(o), o.flag("continuous_actions")).spec(sizes);
  }

  SimpleWorldComm(int n, const core::Options& o)
      : Scenario(n, world(o), o),
        adversaries_(o.integer("num_adversaries")),
        agents_(adversaries_ + o.integer("num_good")),
        food_(agents_ + o.integer("num_obstacles")),
        forests_(food_ + o.integer("num_food")),
        in_forest_(static_cast<size_t>(agents_) * (world_.num_entities() - forests_)) {}

  void reset(int i, core::Pcg64& rng) {
    begin_episode(i);
    // agents in [-1, 1]; every landmark in [-0.9, 0.9], then the food and the forests drawn again
    const int entities = world_.num_entities();
    place(i, 0, agents_, 1.0, rng);
    place(i, agents_, entities - agents_, 0.9, rng);
    place(i, food_, entities - food_, 0.9, rng);
  }

  core::BasicStepResult<double> step(int i, const float* actions) {
    world_.step(i, actions);
    double* r = rewards(i);
    int catches = 0;  // (good agent, adversary) pairs in contact: +5 each to every adversary
    for (int g = adversaries_; g < agents_; ++g)
      for (int a = 0; a < adversaries_; ++a) catches += is_collision(i, g, a);
    for (int a = 0; a < adversaries_; ++a) {
      double nearest = 0;
      for (int g = adversaries_; g < agents_; ++g) {
        const double d = dist(world_.pos(i, g), world_.pos(i, a));
        if (g == adversaries_ || d < nearest) nearest = d;
      }
      double rew = 0.0 - 0.1 * nearest;
      for (int c = 0; c < catches; ++c) rew += 5;
      r[a] = rew;
    }
    for (int g = adversaries_; g < agents_; ++g) {
      double rew = 0.0;
      for (int a = 0; a < adversaries_; ++a)
        if (is_collision(i, a, g)) rew -= 5;
      const double* p = world_.pos(i, g);
      for (int d = 0; d < 2; ++d) rew -= 2 * screen_penalty(std::fabs(p[d]));
      double nearest = 0;
      for (int f = food_; f < forests_; ++f) {
        if (is_collision(i, g, f)) rew += 2;
        const double d = dist(world_.pos(i, f), p);
        if (f == food_ || d < nearest) nearest = d;
      }
      r[g] = rew - 0.05 * nearest;
    }
    return result(i, false);
  }

  // the leader and the adversaries: [self_vel, self_pos, landmark_rel_positions, other_agent_rel_positions,
  // good_agent_velocities, in_forest, the leader's communication]; the good agents: [self_vel, self_pos,
  // landmark_rel_positions, other_agent_rel_positions, in_forest, good_agent_velocities]. Another agent's
  // position and velocity are zeros if one of the two is in a forest the other is not in (not for the leader).
  void write_obs(int i, float* out) const {
    const int entities = world_.num_entities(), forests = entities - forests_;
    for (int a = 0; a < agents_; ++a)
      for (int f = 0; f < forests; ++f) in_forest_[a * forests + f] = is_collision(i, a, forests_ + f);
    for (int k = 0; k < agents_; ++k) {
      const double* me = world_.pos(i, k);
      const uint8_t* mine = &in_forest_[k * forests];
      bool in_any = false;
      for (int f = 0; f < forests; ++f) in_any = in_any || mine[f];
      out = put(out, world_.vel(i, k), 2);
      out = put(out, me, 2);
      for (int l = agents_; l < entities; ++l) out = rel(out, world_.pos(i, l), me);
      float* vel = out + 2 * (agents_ - 1);  // where other_vel goes for the leader and the adversaries
      const bool comm = speaks_to(k, adversaries_);
      float* vel_at = comm ? vel : vel + forests;
      for (int a = 0; a < agents_; ++a) {
        if (a == k) continue;
        const uint8_t* theirs = &in_forest_[a * forests];
        bool together = false, other_in_any = false;
        for (int f = 0; f < forests; ++f) {
          together = together || (mine[f] && theirs[f]);
          other_in_any = other_in_any || theirs[f];
        }
        const bool seen = together || (!in_any && !other_in_any) || k == 0;
        if (seen) {
          out = rel(out, world_.pos(i, a), me);
        } else {
          *out++ = 0.0f;
          *out++ = 0.0f;
        }
        if (a >= adversaries_) {
          if (seen) {
            vel_at = put(vel_at, world_.vel(i, a), 2);
          } else {
            *vel_at++ = 0.0f;
            *vel_at++ = 0.0f;
          }
        }
      }
      const int good_others = agents_ - adversaries_ - (k >= adversaries_ ? 1 : 0);
      float* forest_at = comm ? vel + 2 * good_others : vel;
      for (int f = 0; f < forests; ++f) forest_at[f] = mine[f] ? 1.0f : -1.0f;
      out = vel + 2 * good_others + forests;
      if (comm) out = put(out, world_.comm(i, 0), 4);
    }
  }

 private:
  // The leader (agent 0) and the adversaries observe the leader's communication (and good agents' velocities
  // before in_forest).
  static bool speaks_to(int k, int adversaries) { return k == 0 || k < adversaries; }

  int adversaries_, agents_;
  int food_, forests_;  // entity index of the first food, of the first forest
  mutable std::vector<uint8_t> in_forest_;  // scratch of write_obs: [agent][forest]
};

}  // namespace fastvec::envs::mpe
