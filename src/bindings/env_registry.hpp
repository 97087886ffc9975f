#pragma once
// Name -> pool factory. Each env family adds its envs in its own
// register_<family>.cpp; module.cpp exposes them all.

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/pool.hpp"

namespace fastvec::bindings {

using PoolFactory = std::function<std::unique_ptr<core::PoolBase>(const core::PoolConfig&, const core::Options&)>;

// Called only at module import, before any pool exists.
inline std::map<std::string, PoolFactory>& pool_factories() {
  static std::map<std::string, PoolFactory> factories;
  return factories;
}

template <class E>
void add_env(const std::string& name) {
  pool_factories()[name] = [](const core::PoolConfig& cfg, const core::Options& options) {
    return std::make_unique<core::Pool<E>>(cfg, options);
  };
}

void register_classic_control();
void register_atari();  // only when built with FASTVEC_ATARI

}  // namespace fastvec::bindings
