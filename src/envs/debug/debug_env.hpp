#pragma once
// A test-only env for the pool's failure paths and its scheduling: it can
// throw at a given step or reset, and sleep to make steps slow (every step,
// or only the steps given action sleep_action: the actions choose which envs
// are slow), or compute for spin_us of its thread's CPU time per step (work
// that, like a real env's, stops while the OS deschedules the thread).
// Registered as "_Debug-v0", hidden from list_envs(). Observation:
// [env-local step count, last action].

#include <time.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"

namespace fastvec::envs {

class Debug {
 public:
  using Obs = float;
  using Action = int32_t;

  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return {{"throw_at_step", K::kInt, -1}, {"throw_on_action", K::kInt, -1}, {"sleep_us", K::kReal, 0, 0},
            {"sleep_action", K::kInt, -1}, {"episode_length", K::kInt, 1'000'000, 1},
            {"spin_us", K::kReal, 0, 0}};
  }

  static core::Spec spec(const core::Options& o) {
    core::Spec s;
    s.obs_shape = {2};
    s.obs_low = {0.0, 0.0};
    s.obs_high = {1e9, 1e9};
    s.num_actions = 4;
    const double step_us = o.get("sleep_us") + o.get("spin_us");
    s.step_cost_ns = step_us > 0 ? step_us * 1e3 : 50;
    return s;
  }

  Debug(int n, const core::Options& o)
      : throw_step_(o.integer("throw_at_step")),
        throw_on_action_(o.integer("throw_on_action")),
        sleep_us_(o.get("sleep_us")),
        sleep_action_(o.integer("sleep_action")),
        spin_ns_(static_cast<int64_t>(o.get("spin_us") * 1e3)),
        episode_len_(o.integer("episode_length")),
        count_(n, 0),
        last_(n, 0) {}

  void reset(int i, core::Pcg64&) {
    count_[i] = 0;
    last_[i] = 0;
  }

  core::StepResult step(int i, const Action* action) {
    if (sleep_us_ > 0 && (sleep_action_ < 0 || *action == sleep_action_))
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(sleep_us_)));
    if (spin_ns_ > 0) spin();
    if (*action == throw_on_action_) throw core::EnvError("debug env asked to throw (action " + std::to_string(*action) + ")");
    count_[i] += 1;
    if (count_[i] == throw_step_) throw core::EnvError("debug env asked to throw at step " + std::to_string(count_[i]));
    last_[i] = *action;
    return {static_cast<float>(*action), count_[i] >= episode_len_};
  }

  void write_obs(int i, float* out) const {
    out[0] = static_cast<float>(count_[i]);
    out[1] = static_cast<float>(last_[i]);
  }

 private:
  static int64_t thread_cpu_ns() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  }

  void spin() const {
    const int64_t until = thread_cpu_ns() + spin_ns_;
    while (thread_cpu_ns() < until) {
    }
  }

  int throw_step_, throw_on_action_;
  double sleep_us_;
  int sleep_action_;
  int64_t spin_ns_;
  int episode_len_;
  std::vector<int> count_, last_;
};

}  // namespace fastvec::envs
