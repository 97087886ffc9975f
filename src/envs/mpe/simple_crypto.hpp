#pragma once
// simple_crypto_v3, a port of mpe2 1.1.1's mpe2/simple_crypto/simple_crypto.py: alice (the speaker) encodes the
// goal with a key bob shares; eve listens without the key. Nobody moves: rewards are distances of what bob
// and eve say to the goal's color.

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/mpe/world.hpp"

namespace fastvec::envs::mpe {

class SimpleCrypto : public Scenario {
 public:
  static core::OptionTable options() { return options_with({}); }

  static WorldDef world(const core::Options& o) {
    refuse(o, "simple_crypto_v3", "benchmark_data", "its infos are not modelled");
    WorldDef w;
    w.dim_c = 4;
    for (const char* name : {"eve_0", "bob_0", "alice_0"}) {
      Entity a = agent(name);
      a.collide = false;
      a.movable = false;
      w.agents.push_back(a);
    }
    w.landmarks = {landmark(0.05, false), landmark(0.05, false)};
    return w;
  }

  static core::Spec spec(const core::Options& o) {
    return World(0, world(o), o.flag("continuous_actions")).spec({4, 8, 8});
  }

  SimpleCrypto(int n, const core::Options& o) : Scenario(n, world(o), o), goal_(static_cast<size_t>(n) * 2) {}

  void reset(int i, core::Pcg64& rng) {
    begin_episode(i);
    goal_[2 * i] = static_cast<int>(rng.integers(2));
    goal_[2 * i + 1] = static_cast<int>(rng.integers(2));  // the key: a landmark's color
    place(i, 0, 5, 1.0, rng);
  }

  core::BasicStepResult<double> step(int i, const float* actions) {
    world_.step(i, actions);
    const int goal = goal_[2 * i];
    const bool eve_says = says(i, 0), bob_says = says(i, 1);
    const double eve = eve_says ? miss(i, 0, goal) : 0.0;
    const double good = (eve_says ? 0.0 + eve : 0.0) + (bob_says ? 0.0 - miss(i, 1, goal) : 0.0);
    double* r = rewards(i);
    r[0] = eve_says ? 0.0 - eve : 0.0;
    r[1] = r[2] = good;
    return result(i, false);
  }

  // eve: [alice's communication]; bob: [key, alice's communication]; alice: [goal color, key]
  void write_obs(int i, float* out) const {
    double goal[4] = {}, key[4] = {};
    goal[goal_[2 * i]] = 1.0;
    key[goal_[2 * i + 1]] = 1.0;
    out = put(out, world_.comm(i, 2), 4);
    out = put(out, key, 4);
    out = put(out, world_.comm(i, 2), 4);
    out = put(out, goal, 4);
    put(out, key, 4);
  }

 private:
  // not (agent.state.c == 0).all()
  bool says(int i, int k) const {
    const double* c = world_.comm(i, k);
    return c[0] != 0 || c[1] != 0 || c[2] != 0 || c[3] != 0;
  }
  // np.sum(np.square(agent.state.c - goal color))
  double miss(int i, int k, int goal) const {
    const double* c = world_.comm(i, k);
    double s = 0.0;
    for (int j = 0; j < 4; ++j) {
      const double d = c[j] - (j == goal ? 1.0 : 0.0);
      s += d * d;
    }
    return s;
  }

  std::vector<int> goal_;  // [env][goal, key]
};

}  // namespace fastvec::envs::mpe
