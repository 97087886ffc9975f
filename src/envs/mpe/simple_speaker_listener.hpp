#pragma once
// simple_speaker_listener_v4, a port of mpe2 1.1.1's mpe2/simple_speaker_listener/simple_speaker_listener.py: an
// immobile speaker sees the goal landmark's color and says something; a silent listener moves.

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/mpe/world.hpp"

namespace fastvec::envs::mpe {

class SimpleSpeakerListener : public Scenario {
 public:
  static core::OptionTable options() { return options_with({}); }

  static WorldDef world(const core::Options& o) {
    refuse(o, "simple_speaker_listener_v4", "benchmark_data", "its infos are not modelled");
    WorldDef w;
    w.dim_c = 3;
    Entity speaker = agent("speaker_0", 0.075), listener = agent("listener_0", 0.075);
    speaker.collide = listener.collide = false;
    speaker.movable = false;
    listener.silent = true;
    w.agents = {speaker, listener};
    for (int k = 0; k < 3; ++k) w.landmarks.push_back(landmark(0.04, false));
    return w;
  }

  static core::Spec spec(const core::Options& o) {
    return World(0, world(o), o.flag("continuous_actions")).spec({3, 11});
  }

  SimpleSpeakerListener(int n, const core::Options& o) : Scenario(n, world(o), o), goal_(static_cast<size_t>(n)) {}

  void reset(int i, core::Pcg64& rng) {
    begin_episode(i);
    goal_[i] = static_cast<int>(rng.integers(3));
    place(i, 0, 5, 1.0, rng);
  }

  core::BasicStepResult<double> step(int i, const float* actions) {
    world_.step(i, actions);
    const double* a = world_.pos(i, 1);
    const double* b = world_.pos(i, 2 + goal_[i]);
    const double dx = a[0] - b[0], dy = a[1] - b[1];
    double* r = rewards(i);
    r[0] = r[1] = -(dx * dx + dy * dy);
    return result(i, false);
  }

  // the speaker: [goal color]; the listener: [self_vel, landmark_rel_positions, the speaker's communication]
  void write_obs(int i, float* out) const {
    double color[3] = {0.15, 0.15, 0.15};
    color[goal_[i]] = 0.65;
    out = put(out, color, 3);
    const double* me = world_.pos(i, 1);
    out = put(out, world_.vel(i, 1), 2);
    for (int l = 2; l < 5; ++l) out = rel(out, world_.pos(i, l), me);
    put(out, world_.comm(i, 0), 3);
  }

 private:
  std::vector<int> goal_;
};

}  // namespace fastvec::envs::mpe
