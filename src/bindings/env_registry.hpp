#pragma once
// The native envs: each family adds its envs in its own register_<family>.cpp
// (an EnvFamily, one add_env line per env), which the build compiles whatever
// its name; module.cpp exposes them all (their option tables and metadata to
// fastvec.registry, their pools to fastvec.make).

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/options.hpp"
#include "core/pool.hpp"

namespace fastvec::bindings {

// What the registry knows of a native env besides its class.
struct EnvInfo {
  std::string id;  // gymnasium's id ("CartPole-v1"); for a family of ids, the family's name ("Atari")
  int max_episode_steps = 0;  // the pool truncates there; 0: never
  std::optional<double> reward_threshold = std::nullopt;
  bool hidden = false;  // test-only: not in list_envs() or gymnasium's registry
  std::string family = {};  // "atari": one id per ROM of the installed ale-py (fastvec/roms.py); "mujoco"
};

struct NativeEnvEntry {
  EnvInfo info;
  bool built = true;  // false: the module was built without the env's backend (see NotBuilt)
  core::OptionTable options;
  std::function<std::unique_ptr<core::PoolBase>(const core::PoolConfig&, const core::Options&)> make;
  // The benchmarks' ceiling: steps per second of one env stepped in a loop on the calling thread (no pool).
  std::function<double(const core::Options&, int64_t steps, int max_episode_steps, bool next_step)> loop_rate;
  // spec(options).control_timestep, for a time limit in seconds (dm_control's) before any pool exists.
  std::function<double(const core::Options&)> control_timestep;
};

// One env of type E stepped `steps` times on this thread with uniformly random actions (drawn before the
// clock starts), reset when its episode ends (terminated, or max_episode_steps reached): the same kind of
// trajectories a pool steps, without the pool. next_step: the reset is a step of its own, as a pool's in its
// default autoreset mode (counted, without physics); else it happens within the step that ended the episode
// (same-step). Steps per second.
template <core::NativeEnv E>
double loop_rate(const core::Options& options, int64_t steps, int max_episode_steps, bool next_step) {
  using Action = typename E::Action;
  const core::Spec spec = E::spec(options);
  E env(1, options);
  core::Pcg64 rng = core::single_rng(0);
  // (a model without actuators has no action elements: one slot each still, never read)
  const size_t width = core::kDiscreteActions<E> ? 1 : std::max<size_t>(1, spec.action_low.size());
  std::vector<Action> actions(static_cast<size_t>(std::min<int64_t>(steps, 4096)) * width);
  for (size_t k = 0; k < actions.size(); ++k) {
    const size_t j = k % width;
    actions[k] = core::kDiscreteActions<E>
                     ? static_cast<Action>(rng.next_u64() % static_cast<uint64_t>(spec.num_actions))
                 : j < spec.action_low.size() ? static_cast<Action>(rng.uniform(spec.action_low[j], spec.action_high[j]))
                                              : Action{};
  }
  size_t obs_size = 1;
  for (int64_t d : spec.obs_shape) obs_size *= static_cast<size_t>(d);
  std::vector<typename E::Obs> obs(obs_size);
  env.reset(0, rng);
  const size_t rows = actions.size() / width;
  int elapsed = 0;
  bool ended = false;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < steps; ++k) {
    if (ended && next_step) {
      env.reset(0, rng);
      env.write_obs(0, obs.data());  // a pool writes every observation out
      ended = false;
      elapsed = 0;
      continue;
    }
    const core::BasicStepResult<core::reward_t<E>> r = env.step(0, &actions[(static_cast<size_t>(k) % rows) * width]);
    env.write_obs(0, obs.data());
    ended = r.terminated || ++elapsed == max_episode_steps;
    if (ended && !next_step) {
      env.reset(0, rng);
      env.write_obs(0, obs.data());
      ended = false;
      elapsed = 0;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(steps) / seconds;
}

// Called only at module import, before any pool exists.
inline std::map<std::string, NativeEnvEntry>& native_envs() {
  static std::map<std::string, NativeEnvEntry> envs;
  return envs;
}

template <core::NativeEnv E>
void add_env(EnvInfo info) {
  std::string id = info.id;
  native_envs()[id] = {std::move(info), true, E::options(),
                       [](const core::PoolConfig& cfg, const core::Options& options) {
                         return std::make_unique<core::Pool<E>>(cfg, options);
                       },
                       loop_rate<E>, [](const core::Options& options) { return E::spec(options).control_timestep; }};
}

// A family whose backend is a build option (FASTVEC_ATARI, FASTVEC_MUJOCO) registers its ids in every build:
// built without the backend, its register file names NotBuilt in place of each env class (its headers need the
// backend), and the id is kept without an option table or a pool (`built` false). fastvec.registry knows it so
// (list_envs() leaves it out, lookup() names the build option), and the tests and benchmarks that select a
// family's ids find them in any build.
struct NotBuilt {};

template <class E>
  requires std::same_as<E, NotBuilt>
void add_env(EnvInfo info) {
  std::string id = info.id;
  const std::string why = id + ": this fastvec was built without the backend of its envs' family (" + info.family + ")";
  native_envs()[id] = {std::move(info), false, {},
                       [why](const core::PoolConfig&, const core::Options&) -> std::unique_ptr<core::PoolBase> {
                         throw std::invalid_argument(why);
                       },
                       [why](const core::Options&, int64_t, int, bool) -> double { throw std::invalid_argument(why); },
                       [why](const core::Options&) -> double { throw std::invalid_argument(why); }};
}

// One family's registration, defined once at namespace scope in its register_<family>.cpp; its function (the
// family's add_env lines) runs with every other family's at module import (add_registered_envs).
class EnvFamily {
 public:
  explicit EnvFamily(void (*add_envs)()) { families().push_back(add_envs); }

  // Called only at module import, once.
  static void add_registered_envs() {
    for (void (*add_envs)() : families()) add_envs();
  }

 private:
  static std::vector<void (*)()>& families() {
    static std::vector<void (*)()> all;  // filled as the module is loaded (static initialisation)
    return all;
  }
};

}  // namespace fastvec::bindings
