#pragma once
// What an env declares about itself: observation and action spaces, its
// options and a rough cost, read by the pool (block sizing) and by Python
// (gymnasium spaces). Plain data, built once per pool; no threads involved.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace fastvec::core {

// Env options as passed from Python (registry defaults merged with the
// user's keyword arguments): numbers, and strings the registry fills in
// (such as a ROM's path). The registry checks names.
class Options {
 public:
  Options() = default;
  explicit Options(std::map<std::string, double> values, std::map<std::string, std::string> strings = {})
      : values_(std::move(values)), strings_(std::move(strings)) {}

  double get(const std::string& name, double fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }

  std::string get_string(const std::string& name, const std::string& fallback = {}) const {
    auto it = strings_.find(name);
    return it == strings_.end() ? fallback : it->second;
  }

 private:
  std::map<std::string, double> values_;
  std::map<std::string, std::string> strings_;
};

struct Spec {
  std::vector<int64_t> obs_shape;
  std::vector<double> obs_low, obs_high;  // one value per observation element
  // Discrete(num_actions) when num_actions > 0, else a float32 Box of
  // action_shape bounded by action_low/action_high (one value per element).
  int64_t num_actions = 0;
  std::vector<int64_t> action_shape;
  std::vector<double> action_low, action_high;
  // Rough cost of one step, used to size blocks: cheap envs share a block.
  double step_cost_ns = 100.0;
  // Memory one env takes beyond the pool's buffers: the address space it
  // reserves and the part of it that becomes resident. The pool checks its
  // total against the process's limits before it allocates (memory.hpp).
  double env_address_bytes = 256.0, env_resident_bytes = 256.0;
  // Per-env integers reported in info after every step (e.g. Atari's
  // "lives"), written by the env's write_info(i, int32_t* out).
  std::vector<std::string> info_names;
};

// What an env's step returns; the pool adds truncation and episode stats.
struct StepResult {
  float reward;
  bool terminated;
};

// Thrown by an env with a message for the user (re-raised as RuntimeError
// naming the env id).
class EnvError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fastvec::core
