#pragma once
// What an env declares about itself, given its options: observation and
// action spaces, a rough cost and its memory, read by the pool (block sizing,
// the memory check) and by Python (gymnasium spaces). Plain data, built once
// per pool; no threads involved.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fastvec::core {

// One info value per env: info[name] has shape (rows,) or, with size > 1,
// (rows, size).
struct InfoField {
  enum class Type : uint8_t { kInt32, kInt64, kFloat64, kInt8 };
  std::string name;
  Type type = Type::kInt32;
  int64_t size = 1;
  bool at_reset = true;  // also in a reset's info (with Spec::info_masks; else it is only a step's)
};

inline size_t info_bytes(InfoField::Type t) {
  return t == InfoField::Type::kInt8 ? 1 : t == InfoField::Type::kInt32 ? 4 : 8;
}
inline const char* info_dtype(InfoField::Type t) {
  switch (t) {
    case InfoField::Type::kInt8:
      return "int8";
    case InfoField::Type::kInt32:
      return "int32";
    case InfoField::Type::kInt64:
      return "int64";
    case InfoField::Type::kFloat64:
      break;
  }
  return "float64";
}

// Where each field starts in an info row: in order, each aligned to its element size.
inline std::vector<size_t> info_offsets(const std::vector<InfoField>& fields) {
  std::vector<size_t> out;
  size_t at = 0;
  for (const InfoField& f : fields) {
    const size_t b = info_bytes(f.type);
    at = (at + b - 1) / b * b;
    out.push_back(at);
    at += b * static_cast<size_t>(f.size);
  }
  return out;
}

// The bytes of one info row: the fields, then with `masks` one bool per field
// (at info_mask_offset: the field's "_name" mask for the row), rounded to a
// multiple of the widest element so that rows stay aligned.
inline size_t info_mask_offset(const std::vector<InfoField>& fields) {
  size_t end = 0;
  const std::vector<size_t> off = info_offsets(fields);
  for (size_t k = 0; k < fields.size(); ++k) end = off[k] + info_bytes(fields[k].type) * static_cast<size_t>(fields[k].size);
  return end;
}
inline size_t info_row_bytes(const std::vector<InfoField>& fields, bool masks = false) {
  size_t align = 1;
  for (const InfoField& f : fields) align = std::max(align, info_bytes(f.type));
  const size_t end = info_mask_offset(fields) + (masks ? fields.size() : 0);
  return (end + align - 1) / align * align;
}

// One agent of a multi-agent env (MPE): the env's flat observation and action rows are its agents'
// concatenated in the order of Spec::agents. num_actions > 0: the agent's action is Discrete(num_actions),
// one element holding the index; else a Box of action_size elements.
struct AgentSpec {
  std::string name;
  int64_t obs_size = 0;
  int64_t action_size = 1;
  int64_t num_actions = 0;
};

// One named part of an observation (dm_control's ordered dict of arrays): the env's row is its fields'
// elements concatenated in order (row-major each), and Python sees a Dict of arrays viewing that row.
struct ObsField {
  std::string name;
  std::vector<int64_t> shape;  // () for a scalar
};

inline int64_t obs_field_size(const ObsField& f) {
  int64_t n = 1;
  for (int64_t d : f.shape) n *= d;
  return n;
}

struct Spec {
  std::vector<int64_t> obs_shape;
  // Named fields of the observation (empty: it is one array of obs_shape). With fields, obs_shape is
  // (sum of the fields' sizes,).
  std::vector<ObsField> obs_fields;
  std::vector<double> obs_low, obs_high;  // one value per observation element
  // Discrete observations (toy text's; the env's Obs is int64_t): the n of each element's Discrete(n).
  // Without obs_fields, one element: the space is Discrete(n) and obs_shape is (). With obs_fields and
  // obs_tuple, one element per field: a Tuple of Discretes (Blackjack's). Empty: a Box.
  std::vector<int64_t> obs_discrete;
  // The fields are a Tuple's (a batch holds a tuple of their arrays, in order), not a Dict's.
  bool obs_tuple = false;
  // Discrete(num_actions) for an env with int32 actions (num_actions > 0),
  // else a float32 Box of action_shape bounded by action_low/action_high
  // (one value per element). The pool checks the two agree. (A Box env whose
  // Action is double is given float64 actions as they came, as gymnasium's
  // env would be: its space stays float32, as gymnasium's MuJoCo envs'.)
  int64_t num_actions = 0;
  std::vector<int64_t> action_shape;
  std::vector<double> action_low, action_high;
  // Seconds of simulated time one step takes (dm_control's time limits are in seconds; Python turns its
  // time_limit into the pool's episode limit with it); 0: the env does not say.
  double control_timestep = 0.0;
  // Rough cost of one step, used to size blocks: cheap envs share a block.
  double step_cost_ns = 100.0;
  // Memory one env takes beyond the pool's buffers: the address space it
  // reserves and the part of it that becomes resident. The pool checks its
  // total against the process's limits before it allocates (memory.hpp).
  double env_address_bytes = 256.0, env_resident_bytes = 256.0;
  // Per-env values reported in info (e.g. Atari's "lives", MuJoCo's
  // "x_position"), written by the env's write_info(i, out) into one row of
  // info_row_bytes(info) bytes at info_offsets(info).
  std::vector<InfoField> info;
  // info_masks: info carries gymnasium's "_name" masks (as gymnasium's vector
  // envs batch an env's info dicts): rows whose info is a step's have every
  // field, rows whose info is a reset's only the at_reset ones, rows that
  // only report their observation (a partial reset's others) none; the
  // values outside a mask are 0. The pool writes the masks into the info row
  // (info_row_bytes(info, true)), so each is an array of its own. Without:
  // every row has every field.
  bool info_masks = false;
  // (H, W, 3): the uint8 RGB frame the env's render(i, out) writes (Atari's
  // screen); empty: the env has no render (Python draws it from its state).
  std::vector<int64_t> render_shape;
  // > 0: what the env's write_render_state(i, out) writes instead (int64 values: the state behind a frame
  // beyond the observation, such as toy text's last action), for Python to draw the frame from.
  int64_t render_state_size = 0;
  // A multi-agent env's agents, in the order of its rows (empty: a single-agent env).
  std::vector<AgentSpec> agents;
};

// What an env's step returns; the pool adds truncation and episode stats.
// Reward is float (float32 rewards, the default) or double (an env with
// `using Reward = double`: float64 rewards, as gymnasium's MuJoCo envs).
template <class Reward>
struct BasicStepResult {
  Reward reward;
  bool terminated;
};
using StepResult = BasicStepResult<float>;

// Thrown by an env with a message for the user (re-raised as RuntimeError
// naming the env id).
class EnvError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  EnvError(int env_id, const std::string& what) : std::runtime_error(what), env_id_(env_id) {}
  // The pool's id of the env that raised, set by the pool when it re-raises (-1: as an env throws it).
  int env_id() const { return env_id_; }

 private:
  int env_id_ = -1;
};

}  // namespace fastvec::core
