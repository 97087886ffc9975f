#pragma once
// The native envs: each family adds its envs in its own register_<family>.cpp,
// one add_env line per env; module.cpp exposes them all (their option tables
// and metadata to fastvec.registry, their pools to fastvec.make).

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

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
  std::string family = {};  // "atari": one id per ROM of the installed ale-py (fastvec/roms.py)
};

struct NativeEnvEntry {
  EnvInfo info;
  core::OptionTable options;
  std::function<std::unique_ptr<core::PoolBase>(const core::PoolConfig&, const core::Options&)> make;
};

// Called only at module import, before any pool exists.
inline std::map<std::string, NativeEnvEntry>& native_envs() {
  static std::map<std::string, NativeEnvEntry> envs;
  return envs;
}

template <core::NativeEnv E>
void add_env(EnvInfo info) {
  std::string id = info.id;
  native_envs()[id] = {std::move(info), E::options(),
                       [](const core::PoolConfig& cfg, const core::Options& options) {
                         return std::make_unique<core::Pool<E>>(cfg, options);
                       }};
}

void register_classic_control();
void register_atari();  // only when built with FASTVEC_ATARI

}  // namespace fastvec::bindings
