#pragma once
// What an env declares about itself, given its options: observation and
// action spaces, a rough cost and its memory, read by the pool (block sizing,
// the memory check) and by Python (gymnasium spaces). Plain data, built once
// per pool; no threads involved.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fastvec::core {

struct Spec {
  std::vector<int64_t> obs_shape;
  std::vector<double> obs_low, obs_high;  // one value per observation element
  // Discrete(num_actions) for an env with int32 actions (num_actions > 0),
  // else a float32 Box of action_shape bounded by action_low/action_high
  // (one value per element). The pool checks the two agree.
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
  // (H, W, 3): the uint8 RGB frame the env's render(i, out) writes (Atari's
  // screen); empty: the env has no render (Python draws it from its state).
  std::vector<int64_t> render_shape;
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
