#pragma once
// The benchmarks' ceilings (fastvec._core.loop_rate, atari_loop_rate): envs stepped in a C++ loop on the
// calling thread, without a pool, with the GIL released.

#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "env_registry.hpp"
#include "gil.hpp"
#ifdef FASTVEC_WITH_ATARI
#include "envs/atari/atari.hpp"
#endif

namespace fastvec::bindings {

namespace py = pybind11;

// Any native env, by id: steps per second of one env (env_registry.hpp's loop_rate).
inline double env_loop_rate(const std::string& env, const std::map<std::string, double>& options,
                            const std::map<std::string, std::string>& string_options,
                            const std::map<std::string, std::array<double, 2>>& range_options, int64_t steps,
                            int max_episode_steps, bool next_step) {
  auto it = native_envs().find(env);
  if (it == native_envs().end()) throw py::value_error("unknown native env '" + env + "'");
  if (steps < 1) throw py::value_error("steps must be >= 1");
  const core::Options opts(it->second.options, options, string_options, range_options);
  return without_gil([&] { return it->second.loop_rate(opts, steps, max_episode_steps, next_step); });
}

// Seconds of simulated time a step of the env takes with these options (core::Spec::control_timestep; 0: the
// env does not say), without a pool: Python turns a time_limit into the pool's episode limit with it.
inline double env_control_timestep(const std::string& env, const std::map<std::string, double>& options,
                                   const std::map<std::string, std::string>& string_options,
                                   const std::map<std::string, std::array<double, 2>>& range_options) {
  auto it = native_envs().find(env);
  if (it == native_envs().end()) throw py::value_error("unknown native env '" + env + "'");
  const core::Options opts(it->second.options, options, string_options, range_options);
  return it->second.control_timestep(opts);
}

#ifdef FASTVEC_WITH_ATARI
// The Atari benchmark's baseline: one emulator stepped in a C++ loop on this thread.
inline double emulator_loop_rate(const std::map<std::string, double>& options,
                                 const std::map<std::string, std::string>& strings, int steps, bool preprocess) {
  return without_gil([&] {
    return envs::atari_loop_rate(core::Options(envs::Atari::options(), options, strings), steps, preprocess);
  });
}
#endif

}  // namespace fastvec::bindings
