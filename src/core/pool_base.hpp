#pragma once
// What a pool is to the bindings: its configuration, the errors its calls
// raise, and PoolBase, the type-erased face of Pool<E>. No threads here.

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "batch.hpp"
#include "spec.hpp"

namespace fastvec::core {

// The CPUs this process may run on (its affinity mask), at least 1.
// The CPUs this process may run on, in order (empty if it cannot tell).
inline std::vector<int> allowed_cpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

inline int available_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, CPU_COUNT(&set));
}

enum class AutoresetMode { kNextStep, kSameStep, kDisabled };

struct PoolConfig {
  int num_envs = 1;
  int batch_size = 0;   // 0: num_envs
  int num_threads = 1;  // capped at num_envs
  int block_size = 0;   // 0: automatic
  int max_episode_steps = 0;  // 0: no truncation
  AutoresetMode autoreset_mode = AutoresetMode::kNextStep;
  uint64_t seed = 0;    // base seed; env i uses env_rng(seed, i)
  bool adapt_threads = false;  // let ThreadTuner choose how many of num_threads step (the default's way)
  int initial_threads = 0;     // with adapt_threads, how many step at first (0: num_threads)
  // Adds an info column "elapsed_step" after the env's own: each env's steps in its episode (0 on a reset
  // row), as EnvPool reports it. Written by the pool, not the env.
  bool elapsed_info = false;
  // >= 0: worker thread t runs on the process's allowed CPU number (offset + t) mod their count
  // (EnvPool's thread_affinity_offset); -1: the scheduler places them.
  int thread_affinity_offset = -1;
};

// Raised for calls that are invalid in the pool's current state (recv
// without send, stepping an env that is in flight, use after close).
class UsageError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Raised by a pool's constructor when its estimated memory exceeds what the
// process can get (Python: MemoryError), before anything large is allocated.
class OutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The type-erased face the bindings see. Every method is called by the
// caller thread (calls from several threads are serialised by the pool);
// methods that wait release nothing themselves (the bindings release the
// GIL around them).
class PoolBase {
 public:
  virtual ~PoolBase() = default;
  virtual const Spec& spec() const = 0;
  virtual bool action_is_discrete() const = 0;
  virtual const char* obs_dtype() const = 0;     // "float32", "uint8", "float64" or "int64"
  virtual const char* action_dtype() const = 0;  // what send_step reads: "int64", "float32" or "float64"
  virtual const char* reward_dtype() const = 0;  // "float32" or "float64"
  virtual int num_envs() const = 0;
  virtual int batch_size() const = 0;
  virtual int num_threads() const = 0;
  virtual int active_threads() const = 0;  // how many of num_threads step now
  virtual int block_size() const = 0;
  virtual AutoresetMode autoreset_mode() const = 0;
  // Envs sent (stepped or reset) whose rows have not been received; waits for a call in progress.
  virtual int in_flight() = 0;

  // Queues a step of each listed env. `actions` holds one action per listed
  // env, in the list's order, as action_dtype() says: int64 for discrete
  // envs, float32 or float64 elements for continuous ones. Validates
  // everything before touching any env.
  virtual void send_step(const void* actions, const int32_t* env_ids, int n) = 0;
  // send_step for every env, in env order: the sync step's fast path.
  virtual void send_step_all(const void* actions) = 0;
  // Queues a reset of each listed env; seeds[k], when given, reseeds env
  // env_ids[k] as gymnasium's env.reset(seed=...) would. With
  // observe_others, every other env reports its current observation (a
  // partial reset in sync mode returns all rows).
  virtual void send_reset(const int32_t* env_ids, int n, const std::optional<uint64_t>* seeds,
                          bool observe_others) = 0;
  // Waits for the next batch_size results.
  virtual std::shared_ptr<Batch> recv() = 0;
  // Waits for the envs still in flight, fewer than batch_size, and returns
  // their rows (the first *rows of the Batch; a sync pool's in env order).
  virtual std::shared_ptr<Batch> recv_rest(int* rows) = 0;
  // Waits for everything in flight and discards it.
  virtual void drain() = 0;
  // Writes the current frame (frames: the env's render(), spec().render_shape;
  // or its write_render_state(), spec().render_state_size int64 values)
  // or observation of each env in env_ids, none of them in flight, into out,
  // one after the other. Steps nothing; runs on the calling thread.
  virtual void peek(const int32_t* env_ids, int n, bool frames, void* out) = 0;
  virtual void close() = 0;
  virtual bool closed() const = 0;

  // Called on the caller's thread every few milliseconds while a call
  // blocks, so that the caller can give up (Python: on Ctrl-C). It may
  // throw; then nothing is received and what is in flight stays in flight,
  // for a later recv, drain or close. Set it before use.
  void set_interrupt_check(std::function<void()> check) { interrupt_check_ = std::move(check); }

 protected:
  std::function<void()> interrupt_check_;
};

}  // namespace fastvec::core
