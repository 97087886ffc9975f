#pragma once
// Pool<E>: steps num_envs copies of env E on num_threads threads.
//
// Ownership, in one place:
// - The caller thread (Python, one call at a time, serialised by api_mu_)
//   owns the env states of envs that are not in flight (state_ == kIdle or
//   kFresh or kStaged), the ring cursor recv_slot_, in_flight_ and the
//   per-block staging counters.
// - A block of envs in flight is owned by the one thread running it (a
//   worker, or the caller stealing work in recv): its E instance, the
//   per-env counters (elapsed_, episode_return_, needs_reset_, broken_, rng_)
//   and its scratch. Hand-over happens through the TaskQueue mutex (send ->
//   worker) and the slot's completion counter (worker -> recv).
// - Rows of the Batch in a ring slot are written by the thread that claimed
//   them (write_pos_), then read by recv after the slot's counter says all
//   rows are in. recv hands the Batch to Python and puts a fresh one in the
//   slot before any env of that batch can be sent again.
//
// One mechanism serves sync (batch_size == num_envs, rows in env order) and
// async (batch_size < num_envs, rows in completion order) stepping.

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <sched.h>

#include "batch.hpp"
#include "env.hpp"
#include "futex.hpp"
#include "memory.hpp"
#include "rng.hpp"
#include "options.hpp"
#include "simd.hpp"
#include "spec.hpp"
#include "task_queue.hpp"

namespace fastvec::core {

// The CPUs this process may run on (its affinity mask), at least 1.
inline int available_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, CPU_COUNT(&set));
}

enum class AutoresetMode { kNextStep, kSameStep, kDisabled };

// The pool's per-step bookkeeping for a block, as one vectorizable loop:
// step counts, returns, truncation at `limit`, and the statistics of the
// episodes that ended. Returns whether any ended.
FASTVEC_SIMD_CLONES inline bool count_block(int n, int32_t limit, const bool* __restrict stepped,
                                            const float* __restrict reward, const bool* __restrict terminated,
                                            int32_t* __restrict elapsed, double* __restrict ret,
                                            bool* __restrict truncated, bool* __restrict ended,
                                            double* __restrict ended_return, int32_t* __restrict ended_length) {
  bool any_end = false;
  for (int i = 0; i < n; ++i) {
    const int32_t step = stepped[i] ? 1 : 0;
    const int32_t el = elapsed[i] + step;
    const double r = ret[i] + (stepped[i] ? static_cast<double>(reward[i]) : 0.0);
    elapsed[i] = el;
    ret[i] = r;
    const bool trunc = stepped[i] & (el >= limit);
    const bool end = stepped[i] & (terminated[i] | trunc);
    truncated[i] = trunc;
    ended[i] = end;
    ended_return[i] = end ? r : 0.0;
    ended_length[i] = end ? el : 0;
    any_end |= end;
  }
  return any_end;
}

struct PoolConfig {
  int num_envs = 1;
  int batch_size = 0;   // 0: num_envs
  int num_threads = 1;
  int block_size = 0;   // 0: automatic
  int max_episode_steps = 0;  // 0: no truncation
  AutoresetMode autoreset_mode = AutoresetMode::kNextStep;
  uint64_t seed = 0;    // base seed; env i uses env_rng(seed, i)
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
// caller thread; methods that wait release nothing themselves (the bindings
// release the GIL around them).
class PoolBase {
 public:
  virtual ~PoolBase() = default;
  virtual const Spec& spec() const = 0;
  virtual bool action_is_discrete() const = 0;
  virtual const char* obs_dtype() const = 0;  // "float32" or "uint8"
  virtual int num_envs() const = 0;
  virtual int batch_size() const = 0;
  virtual int num_threads() const = 0;
  virtual int block_size() const = 0;
  virtual AutoresetMode autoreset_mode() const = 0;

  // Queues a step of each listed env. `actions` holds one action per listed
  // env, in the list's order: int64 for discrete envs, float32 elements for
  // continuous ones. Validates everything before touching any env.
  virtual void send_step(const void* actions, const int32_t* env_ids, int n) = 0;
  // send_step for every env, in env order: the sync step's fast path.
  virtual void send_step_all(const void* actions) = 0;
  // Queues a reset of each listed env; seeds[k], when given, reseeds env
  // env_ids[k] as gymnasium's env.reset(seed=...) would. With
  // observe_others, every other env reports its current observation (a
  // partial reset in sync mode returns all rows).
  virtual void send_reset(const int32_t* env_ids, int n, const std::optional<uint64_t>* seeds,
                          bool observe_others) = 0;
  // Reseeds every env from a base seed: env i as SeedSequence(seed).spawn(n)[i].
  virtual void reseed_all(uint64_t seed) = 0;
  // Waits for the next batch_size results.
  virtual std::shared_ptr<Batch> recv() = 0;
  // Waits for the envs still in flight in an async pool, fewer than
  // batch_size, and returns their rows (the first *rows of the Batch).
  virtual std::shared_ptr<Batch> recv_rest(int* rows) = 0;
  // Waits for everything in flight and discards it; unstages staged envs.
  virtual void drain() = 0;
  virtual void close() = 0;
  virtual bool closed() const = 0;

  // Called on the caller's thread every few milliseconds while recv,
  // recv_rest or drain block, so that the caller can give up (Python: on
  // Ctrl-C). It may throw; then nothing is received and what is in flight
  // stays in flight, for a later recv, drain or close. Set it before use.
  void set_interrupt_check(std::function<void()> check) { interrupt_check_ = std::move(check); }

 protected:
  std::function<void()> interrupt_check_;
};

template <NativeEnv E>
class Pool final : public PoolBase {
 public:
  using Obs = typename E::Obs;
  using Action = typename E::Action;
  static constexpr bool kDiscrete = kDiscreteActions<E>;  // one action element per env
  // Cheap envs step a whole block in one call. step_block may also step envs
  // about to be reset; their results are discarded.
  static constexpr bool kHasStepBlock =
      requires(E& env, const Action* a, float* r, bool* t) { env.step_block(1, a, r, t); };
  // Envs with int32 info values (Spec::info_names), such as Atari's lives.
  static constexpr bool kHasInfo = requires(const E& c, int32_t* p) { c.write_info(0, p); };

  Pool(const PoolConfig& config, const Options& options)
      : cfg_(config), spec_(E::spec(options)), queue_(config.batch_size == 0 || config.batch_size == config.num_envs) {
    validate_config();
    if ((spec_.num_actions > 0) != kDiscrete)
      throw std::logic_error("the env's spec and Action type disagree: int32 actions need num_actions > 0, "
                             "float actions an action_shape");
    obs_size_ = 1;
    for (int64_t d : spec_.obs_shape) obs_size_ *= static_cast<size_t>(d);
    if constexpr (!kDiscrete) {
      for (int64_t d : spec_.action_shape) action_size_ *= static_cast<size_t>(d);
    }
    block_size_ = cfg_.block_size > 0 ? cfg_.block_size : auto_block_size();
    num_blocks_ = cfg_.num_envs / block_size_;
    sync_ = cfg_.batch_size == cfg_.num_envs;
    const BatchLayout layout{cfg_.batch_size, obs_size_ * sizeof(Obs),
                             cfg_.autoreset_mode == AutoresetMode::kSameStep,
                             static_cast<int>(spec_.info_names.size())};
    num_slots_ = cfg_.num_envs / cfg_.batch_size + 1;
    check_memory(layout);  // before anything of num_envs' size is allocated
    const int n = cfg_.num_envs;
    rng_.reserve(n);
    for (int i = 0; i < n; ++i) rng_.push_back(env_rng(cfg_.seed, static_cast<uint32_t>(i)));
    elapsed_.assign(n, 0);
    episode_return_.assign(n, 0.0);
    needs_reset_.assign(n, 0);
    broken_.assign(n, 0);
    op_.assign(n, Op::kStep);
    state_.assign(n, State::kFresh);
    all_ids_.resize(n);
    std::iota(all_ids_.begin(), all_ids_.end(), 0);
    seen_.assign(n, 0);
    actions_.assign(static_cast<size_t>(n) * action_size_, Action{});
    staged_.assign(num_blocks_, 0);
    scratch_.resize(num_blocks_);
    blocks_.resize(num_blocks_);
    busy_ = std::vector<std::atomic<int>>(static_cast<size_t>(num_blocks_));
    recycler_ = std::make_shared<BatchRecycler>(layout, static_cast<size_t>(num_slots_) + 2);
    slots_ = std::make_unique<Slot[]>(num_slots_);
    for (int s = 0; s < num_slots_; ++s) slots_[s].batch = recycler_->take();
    for (int b = 0; b < num_blocks_; ++b) {
      scratch_[b].resize(block_size_, layout.with_final_obs ? obs_size_ : 0,
                         layout.with_final_obs ? layout.info_fields : 0);
    }
    // Envs are constructed on the pool's threads: loading an env (a ROM) can
    // be slow, and in parallel it is num_threads times faster.
    construct_blocks(options);
    start_workers();
  }

  ~Pool() override { close(); }

  const Spec& spec() const override { return spec_; }
  bool action_is_discrete() const override { return kDiscrete; }
  const char* obs_dtype() const override { return core::obs_dtype<E>(); }
  int num_envs() const override { return cfg_.num_envs; }
  int batch_size() const override { return cfg_.batch_size; }
  int num_threads() const override { return cfg_.num_threads; }
  int block_size() const override { return block_size_; }
  AutoresetMode autoreset_mode() const override { return cfg_.autoreset_mode; }

  void send_step(const void* actions, const int32_t* env_ids, int n) override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    check_ids(env_ids, n);
    for (int k = 0; k < n; ++k) {
      const int e = env_ids[k];
      if (state_[e] == State::kFresh)
        throw UsageError("env " + std::to_string(e) + " has not been reset; call reset() or async_reset() first");
      if (state_[e] != State::kIdle)
        throw UsageError("env " + std::to_string(e) + " is not awaiting an action (it was sent one and its result has not been received)");
      if (broken_[e])
        throw UsageError("env " + std::to_string(e) + " raised an exception earlier; reset it before stepping it again");
      if (cfg_.autoreset_mode == AutoresetMode::kDisabled && needs_reset_[e])
        throw UsageError("env " + std::to_string(e) +
                         " finished its episode and autoreset_mode='disabled'; reset it "
                         "(reset(options={'reset_mask': mask})) before stepping it again");
    }
    wait_blocks_free(env_ids, n);
    if constexpr (kDiscrete) {
      const int64_t* a = static_cast<const int64_t*>(actions);
      for (int k = 0; k < n; ++k) actions_[env_ids[k]] = static_cast<Action>(a[k]);
    } else {
      const float* a = static_cast<const float*>(actions);
      for (int k = 0; k < n; ++k)
        std::memcpy(&actions_[env_ids[k] * action_size_], a + k * action_size_, action_size_ * sizeof(float));
    }
    for (int k = 0; k < n; ++k) stage(env_ids[k], Op::kStep);
    dispatch();
  }

  void send_step_all(const void* actions) override {
    std::unique_lock<std::mutex> lock(api_mu_);
    check_open();
    const int n = cfg_.num_envs;
    const uint8_t disabled = cfg_.autoreset_mode == AutoresetMode::kDisabled;
    // States first: per-env flags may only be read for idle envs (a worker
    // owns an env in flight).
    uint8_t bad = 0;
    for (int e = 0; e < n; ++e) bad |= static_cast<uint8_t>(state_[e] != State::kIdle);
    if (!bad)
      for (int e = 0; e < n; ++e) bad |= broken_[e] | (disabled & needs_reset_[e]);
    if (bad) {  // the general path finds the env and says what is wrong with it
      lock.unlock();
      send_step(actions, all_ids_.data(), n);
      return;
    }
    if constexpr (kDiscrete) {
      const int64_t* a = static_cast<const int64_t*>(actions);
      for (int e = 0; e < n; ++e) actions_[e] = static_cast<Action>(a[e]);
    } else {
      std::memcpy(actions_.data(), actions, static_cast<size_t>(n) * action_size_ * sizeof(float));
    }
    std::fill(op_.begin(), op_.end(), Op::kStep);
    std::fill(state_.begin(), state_.end(), State::kStaged);
    std::fill(staged_.begin(), staged_.end(), block_size_);
    dispatch();
  }

  void send_reset(const int32_t* env_ids, int n, const std::optional<uint64_t>* seeds,
                  bool observe_others) override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    check_ids(env_ids, n);
    std::vector<uint8_t> listed(cfg_.num_envs, 0);
    for (int k = 0; k < n; ++k) listed[env_ids[k]] = 1;
    for (int e = 0; e < cfg_.num_envs; ++e) {
      if ((listed[e] || observe_others) && state_[e] != State::kIdle && state_[e] != State::kFresh)
        throw UsageError("env " + std::to_string(e) +
                         " is in flight or has an action staged; receive its result before resetting it");
      if (observe_others && !listed[e] && state_[e] == State::kFresh)
        throw UsageError("env " + std::to_string(e) + " has never been reset; a partial reset needs every other env reset once");
    }
    if (observe_others) {
      wait_blocks_free(all_ids_.data(), cfg_.num_envs);
    } else {
      wait_blocks_free(env_ids, n);
    }
    for (int k = 0; k < n; ++k) {
      const int e = env_ids[k];
      if (seeds != nullptr && seeds[k].has_value()) rng_[e] = single_rng(*seeds[k]);
      stage(e, Op::kReset);
    }
    if (observe_others)
      for (int e = 0; e < cfg_.num_envs; ++e)
        if (!listed[e]) stage(e, Op::kObserve);
    dispatch();
  }

  void reseed_all(uint64_t seed) override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    for (int e = 0; e < cfg_.num_envs; ++e)
      if (state_[e] != State::kIdle && state_[e] != State::kFresh)
        throw UsageError("cannot reseed while envs are in flight");
    for (int e = 0; e < cfg_.num_envs; ++e) rng_[e] = env_rng(seed, static_cast<uint32_t>(e));
  }

  std::shared_ptr<Batch> recv() override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    if (in_flight_ < cfg_.batch_size) {
      throw UsageError("recv() would wait forever: " + std::to_string(in_flight_) +
                       " env(s) are in flight but batch_size is " + std::to_string(cfg_.batch_size) +
                       "; send actions (or async_reset) first");
    }
    Slot& slot = slots_[recv_slot_ % num_slots_];
    wait_for(slot, cfg_.batch_size);
    check_open();
    std::unique_ptr<Batch> fresh = recycler_->take();  // may throw: before any state changes
    std::unique_ptr<Batch> full = std::exchange(slot.batch, std::move(fresh));
    slot.done.store(0, std::memory_order_relaxed);
    ++recv_slot_;
    in_flight_ -= cfg_.batch_size;
    if (sync_) {
      std::fill(state_.begin(), state_.end(), State::kIdle);
    } else {
      const int32_t* ids = full->env_id();
      for (int r = 0; r < cfg_.batch_size; ++r) state_[ids[r]] = State::kIdle;
    }
    std::shared_ptr<Batch> out = recycler_->lend(std::move(full));
    rethrow_env_error(*out, cfg_.batch_size);
    return out;
  }

  std::shared_ptr<Batch> recv_rest(int* rows) override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    if (sync_ || in_flight_ == 0 || in_flight_ >= cfg_.batch_size)
      throw UsageError("recv_rest() takes the last, partial batch of an async pool (" + std::to_string(in_flight_) +
                       " env(s) in flight, batch_size " + std::to_string(cfg_.batch_size) + ")");
    *rows = in_flight_;
    Slot& slot = slots_[recv_slot_ % num_slots_];
    wait_for(slot, *rows);
    check_open();
    std::unique_ptr<Batch> fresh = recycler_->take();
    std::unique_ptr<Batch> full = std::exchange(slot.batch, std::move(fresh));
    slot.done.store(0, std::memory_order_relaxed);
    ++recv_slot_;
    in_flight_ = 0;
    const int32_t* ids = full->env_id();
    for (int r = 0; r < *rows; ++r) state_[ids[r]] = State::kIdle;
    // Nothing is in flight: realign the write cursor to the next slot.
    write_pos_.store(recv_slot_ * cfg_.batch_size, std::memory_order_release);
    std::shared_ptr<Batch> out = recycler_->lend(std::move(full));
    rethrow_env_error(*out, *rows);
    return out;
  }

  void drain() override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    for (int e = 0; e < cfg_.num_envs; ++e) {
      if (state_[e] == State::kStaged) state_[e] = State::kIdle;
    }
    std::fill(staged_.begin(), staged_.end(), 0);
    while (in_flight_ > 0) {
      Slot& slot = slots_[recv_slot_ % num_slots_];
      const int rows = std::min(in_flight_, cfg_.batch_size);
      wait_for(slot, rows);
      check_open();
      slot.batch->num_done.store(0, std::memory_order_relaxed);
      slot.done.store(0, std::memory_order_relaxed);
      ++recv_slot_;
      in_flight_ -= rows;
    }
    // Every env has finished (rows in sync mode sit at env positions, so
    // the states, not the batch, say which envs those were).
    for (State& st : state_)
      if (st == State::kInFlight) st = State::kIdle;
    // Nothing is in flight: realign the write cursor to the next slot.
    write_pos_.store(recv_slot_ * cfg_.batch_size, std::memory_order_release);
    std::lock_guard<std::mutex> elock(error_mu_);
    errors_.clear();
    has_error_.store(false, std::memory_order_release);
  }

  void close() override {
    if (closed_.exchange(true)) return;
    queue_.close();
    // Wake a recv waiting on another thread: any change of value wakes it,
    // and it rechecks closed_.
    for (int s = 0; s < num_slots_; ++s) {
      slots_[s].done.fetch_add(kClosedMark, std::memory_order_seq_cst);
      futex_wake_all(slots_[s].done);
    }
    // And a send waiting for a block (wait_block_free rechecks closed_).
    if (block_waiters_.load(std::memory_order_seq_cst))
      for (int b = 0; b < num_blocks_; ++b) futex_wake_all(busy_[b]);
    for (std::thread& t : workers_) {
      if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
    }
  }

  bool closed() const override { return closed_.load(std::memory_order_acquire); }

 private:
  // kHold: the env's block runs for some of its other envs; this one is
  // idle, not touched and gets no row.
  enum class Op : uint8_t { kStep, kReset, kObserve, kHold };
  enum class State : uint8_t { kFresh, kIdle, kStaged, kInFlight };
  static constexpr int kClosedMark = 1 << 29;

  struct Slot {
    std::unique_ptr<Batch> batch;
    // Rows written. Writers add (seq_cst) and then wake the recv thread if
    // it sleeps; the recv thread announces itself in `waiting` (seq_cst)
    // before its last look at `done`: one of the two always sees the other.
    std::atomic<int> done{0};
    std::atomic<int> waiting{0};
  };

  // Per-block results of phase one (stepping), owned by the running thread.
  // Flags are bool, not uint8_t: a store through a char type may alias
  // anything, and would stop the compiler keeping the env's arrays in
  // registers across the step loop.
  struct Scratch {
    std::vector<float> reward;
    std::unique_ptr<bool[]> terminated, truncated, ended, stepped;
    std::vector<double> episode_return;
    std::vector<int32_t> episode_length;
    std::vector<Obs> final_obs;
    std::vector<int32_t> final_info;
    bool failed = false;  // some env of the block threw this round
    void resize(int n, size_t final_obs_size, int final_info_fields) {
      reward.assign(n, 0.f);
      for (auto* flags : {&terminated, &truncated, &ended, &stepped}) flags->reset(new bool[n]());
      episode_return.assign(n, 0.0);
      episode_length.assign(n, 0);
      final_obs.assign(static_cast<size_t>(n) * final_obs_size, Obs{});
      final_info.assign(static_cast<size_t>(n) * final_info_fields, 0);
    }
  };

  void validate_config() {
    if (cfg_.num_envs < 1) throw std::invalid_argument("num_envs must be >= 1");
    if (cfg_.batch_size == 0) cfg_.batch_size = cfg_.num_envs;
    if (cfg_.batch_size < 1 || cfg_.batch_size > cfg_.num_envs)
      throw std::invalid_argument("batch_size must be in [1, num_envs]");
    if (cfg_.num_threads < 1) throw std::invalid_argument("num_threads must be >= 1");
    if (cfg_.block_size < 0) throw std::invalid_argument("block_size must be >= 1");
    if (cfg_.block_size > 0 && (cfg_.num_envs % cfg_.block_size || cfg_.batch_size % cfg_.block_size))
      throw std::invalid_argument("block_size must divide both num_envs and batch_size");
    if (cfg_.max_episode_steps < 0) throw std::invalid_argument("max_episode_steps must be >= 0");
    // A pool of num_envs envs cannot use more threads than that.
    cfg_.num_threads = std::min(cfg_.num_threads, cfg_.num_envs);
  }

  // Refuses (OutOfMemory) a pool whose estimated memory exceeds what the
  // process can get: its result buffers (the slots, and the spares Python
  // holds), the envs as their Spec declares them and the pool's per-env
  // state. (Threads are start_workers()' to report.)
  void check_memory(const BatchLayout& layout) const {
    const double envs = cfg_.num_envs;
    const double buffers = static_cast<double>(num_slots_ + 2) * static_cast<double>(Batch::bytes(layout));
    // rng_, elapsed_, all_ids_, episode_return_, five per-env bytes, actions_, same-step scratch
    const double per_env = sizeof(Pcg64) + 2 * sizeof(int32_t) + sizeof(double) + 5 +
                           static_cast<double>(action_size_ * sizeof(Action)) +
                           static_cast<double>(layout.with_final_obs ? layout.obs_bytes : 0);
    const MemoryRoom room = memory_room();
    const auto check = [&](const char* kind, double env_bytes, double have, const std::string& limit) {
      const double need = buffers + envs * (per_env + env_bytes);
      if (need <= have) return;
      throw OutOfMemory("a pool of " + std::to_string(cfg_.num_envs) + " envs needs about " + bytes_str(need) +
                        " of " + kind + " (" + bytes_str(per_env + env_bytes) + " per env and " +
                        bytes_str(buffers) + " of result buffers), but this process can get only " +
                        bytes_str(std::max(0.0, have)) + " more under " + limit +
                        "; make the pool with fewer envs (or a smaller batch_size)");
    };
    check("address space", spec_.env_address_bytes, room.address, "its address-space limit (RLIMIT_AS, ulimit -v)");
    check("memory", spec_.env_resident_bytes, room.resident, room.resident_limit);
  }

  static std::string bytes_str(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
  }

  // Starts the worker threads: no more than the blocks can keep busy (a block
  // runs on one thread at a time), and in sync mode one fewer, since the
  // caller is one of them. A thread the OS refuses (a pids limit,
  // RLIMIT_NPROC, no address space for its stack) is a runtime_error naming
  // the counts, raised once the threads already started are joined.
  void start_workers() {
    const int threads = std::min(cfg_.num_threads, num_blocks_);
    const int workers = sync_ ? threads - 1 : threads;
    // A caller waiting in recv steps queued blocks itself when that uses a core
    // the workers leave free: always in sync mode (it is one of num_threads),
    // in async mode only if the workers are fewer than the cores. A third
    // thread on two cores would only take turns with the workers.
    caller_steps_ = sync_ || workers < available_cpus();
    try {
      workers_.reserve(workers);
      for (int t = 0; t < workers; ++t) workers_.emplace_back([this] { worker_loop(); });
    } catch (const std::exception& e) {
      const size_t started = workers_.size();
      close();
      throw std::runtime_error("could not start the pool's threads: " + std::to_string(workers) +
                               " worker thread(s) asked (num_threads=" + std::to_string(cfg_.num_threads) +
                               "), the system refused one after " + std::to_string(started) + " started (" +
                               e.what() + "); make the pool with fewer num_threads, or raise the process's "
                               "thread or memory limits");
    }
  }

  // Cheap envs share a block so that queue and wake-up costs are paid per
  // block: aim for ~20 us of work per block, at least a few blocks per thread
  // when there is enough work, and a single block when the whole step costs
  // less than a thread wake-up. The size must divide num_envs and batch_size.
  int auto_block_size() const {
    const double cost = std::max(1.0, spec_.step_cost_ns);
    const int n = cfg_.num_envs;
    int want;
    if (n * cost < 50e3 && cfg_.batch_size == n) {
      want = n;
    } else {
      const int per_thread = (n + cfg_.num_threads - 1) / cfg_.num_threads;
      const int by_cost = static_cast<int>(20e3 / cost) + 1;
      const int by_spread = (n + 4 * cfg_.num_threads - 1) / (4 * cfg_.num_threads);
      want = std::max(1, std::min(per_thread, std::max(by_cost, by_spread)));
    }
    const int g = std::gcd(cfg_.num_envs, cfg_.batch_size);
    int best = 1;
    for (int d = 1; d <= g; ++d)
      if (g % d == 0 && d <= want) best = d;
    return best;
  }

  void construct_blocks(const Options& options) {
    std::vector<std::exception_ptr> errors(num_blocks_);
    std::atomic<int> next{0};
    auto build = [&] {
      for (int b; (b = next.fetch_add(1)) < num_blocks_;) {
        try {
          blocks_[b] = std::make_unique<E>(block_size_, options);
        } catch (...) {
          errors[b] = std::current_exception();
        }
      }
    };
    std::vector<std::thread> helpers;
    const int extra = std::min(cfg_.num_threads, num_blocks_) - 1;
    try {
      helpers.reserve(extra);
      for (int t = 0; t < extra; ++t) helpers.emplace_back(build);
    } catch (const std::exception&) {
      // Parallel construction only saves time: with fewer helpers (or none)
      // this thread builds the rest. start_workers() reports a refusal.
    }
    build();
    for (std::thread& t : helpers) t.join();
    for (std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

  void check_open() const {
    if (closed_.load(std::memory_order_acquire)) throw UsageError("the pool is closed");
  }

  void check_ids(const int32_t* ids, int n) {
    for (int k = 0; k < n; ++k) {
      const int e = ids[k];
      if (e < 0 || e >= cfg_.num_envs)
        throw std::invalid_argument("env_id " + std::to_string(e) + " is out of range [0, " +
                                    std::to_string(cfg_.num_envs) + ")");
    }
    int dup = -1;
    for (int k = 0; k < n; ++k) {
      if (seen_[ids[k]] && dup < 0) dup = ids[k];
      seen_[ids[k]] = 1;
    }
    for (int k = 0; k < n; ++k) seen_[ids[k]] = 0;
    if (dup >= 0) throw std::invalid_argument("env_id " + std::to_string(dup) + " is listed twice");
  }

  // Called by the caller thread: marks env e staged; a block whose envs are
  // all staged goes to dispatch().
  void stage(int e, Op op) {
    op_[e] = op;
    state_[e] = State::kStaged;
    ++staged_[e / block_size_];
  }

  // Called by the caller thread: queues every block with staged envs. A block
  // with some envs staged runs for those only; the others are held (op
  // kHold: not touched, no row), stay idle, and may be sent once this run
  // is over (wait_blocks_free). Blocks queued here are never busy: senders
  // waited for them before staging.
  void dispatch() {
    ready_.clear();
    for (int b = 0; b < num_blocks_; ++b) {
      const int staged = staged_[b];
      if (staged == 0) continue;
      staged_[b] = 0;
      if (staged == block_size_) {
        for (int e = b * block_size_; e < (b + 1) * block_size_; ++e) state_[e] = State::kInFlight;
      } else {
        partial_sent_ = true;
        for (int e = b * block_size_; e < (b + 1) * block_size_; ++e) {
          if (state_[e] == State::kStaged) {
            state_[e] = State::kInFlight;
          } else {
            op_[e] = Op::kHold;
          }
        }
      }
      in_flight_ += staged;
      busy_[b].store(1, std::memory_order_relaxed);  // published to the running thread by the queue's mutex
      ready_.push_back(b);
    }
    if (ready_.empty()) return;
    // In sync mode the caller steps blocks itself while it waits in recv, so
    // it wakes one worker fewer; with one block (or no workers) it wakes none.
    const int wake = static_cast<int>(ready_.size()) - (sync_ ? 1 : 0);
    queue_.push(ready_.begin(), ready_.end(), wake);
  }

  // Called by the caller thread before it stages envs in `env_ids`: waits
  // until no block of theirs is running. Only a block sent for part of its
  // envs can be running while others of its envs are idle (and may be sent),
  // so nothing waits until a partial send has happened. Waits, steps queued
  // blocks meanwhile and checks for interrupts before anything is staged.
  void wait_blocks_free(const int32_t* env_ids, int n) {
    if (!partial_sent_) return;
    int last = -1;
    for (int k = 0; k < n; ++k) {
      const int b = env_ids[k] / block_size_;
      if (b != last) wait_block_free(b);
      last = b;
    }
  }

  void wait_block_free(int b) {
    int spins = 0;
    while (busy_[b].load(std::memory_order_acquire)) {
      check_open();
      const int t = caller_steps_ ? queue_.try_pop() : -1;
      if (t >= 0) {
        run_block(t);
        continue;
      }
      if (++spins < kRecvSpins) {
        cpu_relax();
        continue;
      }
      block_waiters_.fetch_add(1, std::memory_order_seq_cst);
      if (busy_[b].load(std::memory_order_seq_cst)) futex_wait(busy_[b], 1, kInterruptPollMs);
      block_waiters_.fetch_sub(1, std::memory_order_seq_cst);
      if (interrupt_check_ && busy_[b].load(std::memory_order_acquire)) interrupt_check_();
    }
  }

  // Called by the recv thread: waits until `rows` rows of the slot are in,
  // stepping queued blocks itself meanwhile.
  void wait_for(Slot& slot, int rows) {
    int spins = 0;
    for (;;) {
      const int d = slot.done.load(std::memory_order_acquire);
      if (d >= rows) return;
      const int b = caller_steps_ ? queue_.try_pop() : -1;
      if (b >= 0) {
        run_block(b);
        continue;
      }
      if (++spins < kRecvSpins) {
        cpu_relax();
        continue;
      }
      slot.waiting.fetch_add(1, std::memory_order_seq_cst);
      if (slot.done.load(std::memory_order_seq_cst) == d) futex_wait(slot.done, d, kInterruptPollMs);
      slot.waiting.fetch_sub(1, std::memory_order_seq_cst);
      if (interrupt_check_ && slot.done.load(std::memory_order_acquire) == d) interrupt_check_();
    }
  }

  void worker_loop() {
    for (int b; (b = queue_.pop()) >= 0;) run_block(b);
  }

  void reset_env(E& env, int i, int e) {
    env.reset(i, rng_[e]);
    elapsed_[e] = 0;
    episode_return_[e] = 0.0;
    needs_reset_[e] = 0;
    broken_[e] = 0;
  }

  // Phase one, the common case: every env of the block takes an ordinary
  // step. A tight loop over the block's structure-of-arrays state; an env
  // that throws is recorded and the loop resumes after it.
  void step_all(E& env, Scratch& s, int base) {
    const int n = block_size_;
    std::fill(s.stepped.get(), s.stepped.get() + n, true);
    const Action* actions = actions_.data() + static_cast<size_t>(base) * action_size_;
    float* __restrict reward = s.reward.data();
    bool* __restrict terminated = s.terminated.get();
    if constexpr (kHasStepBlock) {
      static_assert(noexcept(env.step_block(n, actions, reward, terminated)), "step_block must not throw");
      env.step_block(n, actions, reward, terminated);
      return;
    }
    int i = 0;
    while (i < n) {
      try {
        for (; i < n; ++i) {
          const StepResult r = env.step(i, kDiscrete ? actions + i : actions + i * action_size_);
          reward[i] = r.reward;
          terminated[i] = r.terminated;
        }
      } catch (const std::exception& ex) {
        record_error(base + i, ex.what(), i, s);
        ++i;
      } catch (...) {
        record_error(base + i, "unknown exception", i, s);
        ++i;
      }
    }
  }

  // After step_all on a block with resets: envs due a reset (explicit, or
  // next-step autoreset) reset now, and their step is discarded.
  void reset_finished(E& env, Scratch& s, int base) {
    for (int i = 0; i < block_size_; ++i) {
      const int e = base + i;
      if (op_[e] != Op::kReset && !needs_reset_[e]) continue;
      s.reward[i] = 0.f;
      s.terminated[i] = false;
      s.stepped[i] = false;
      try {
        reset_env(env, i, e);
      } catch (const std::exception& ex) {
        record_error(e, ex.what(), i, s);
      } catch (...) {
        record_error(e, "unknown exception", i, s);
      }
    }
  }

  // Phase one, the general case: each env resets, reports its observation,
  // steps, or (held) does nothing, as its op and the autoreset mode say.
  void step_each(E& env, Scratch& s, int base) {
    for (int i = 0; i < block_size_; ++i) {
      const int e = base + i;
      s.reward[i] = 0.f;
      s.terminated[i] = false;
      s.stepped[i] = false;
      if (op_[e] == Op::kHold) continue;
      if (broken_[e]) s.failed = true;  // an observed broken env reports zeros
      try {
        if (op_[e] == Op::kReset || (op_[e] == Op::kStep && needs_reset_[e] &&
                                     cfg_.autoreset_mode == AutoresetMode::kNextStep)) {
          reset_env(env, i, e);
        } else if (op_[e] == Op::kStep) {
          const StepResult r = env.step(i, &actions_[static_cast<size_t>(e) * action_size_]);
          s.reward[i] = r.reward;
          s.terminated[i] = r.terminated;
          s.stepped[i] = true;
        }
      } catch (const std::exception& ex) {
        record_error(e, ex.what(), i, s);
      } catch (...) {
        record_error(e, "unknown exception", i, s);
      }
    }
  }

  // Phase two: the pool's bookkeeping for the envs that stepped: step
  // counts, truncation, returns; episodes that ended are recorded and, in
  // same-step mode, reset here.
  void count_steps(E& env, Scratch& s, int base) {
    const int n = block_size_;
    const int32_t limit = cfg_.max_episode_steps > 0 ? cfg_.max_episode_steps : INT32_MAX;
    const bool any_end =
        count_block(n, limit, s.stepped.get(), s.reward.data(), s.terminated.get(), &elapsed_[base],
                    &episode_return_[base], s.truncated.get(), s.ended.get(), s.episode_return.data(),
                    s.episode_length.data());
    if (!any_end) return;
    for (int i = 0; i < n; ++i) {
      if (!s.ended[i]) continue;
      const int e = base + i;
      if (cfg_.autoreset_mode != AutoresetMode::kSameStep) {
        needs_reset_[e] = 1;
        continue;
      }
      try {
        env.write_obs(i, &s.final_obs[static_cast<size_t>(i) * obs_size_]);
        if constexpr (kHasInfo) env.write_info(i, &s.final_info[static_cast<size_t>(i) * spec_.info_names.size()]);
        reset_env(env, i, e);
      } catch (const std::exception& ex) {
        record_error(e, ex.what(), i, s);
      } catch (...) {
        record_error(e, "unknown exception", i, s);
      }
    }
  }

  // Steps block b, then claims its rows in the ring and writes them: one row
  // per env, but none for envs held (a send for part of the block).
  void run_block(int b) {
    E& env = *blocks_[b];
    Scratch& s = scratch_[b];
    const int base = b * block_size_, n = block_size_;
    s.failed = false;
    // Envs that reset instead of stepping (explicitly, or by next-step
    // autoreset), only report their observation, or are held; envs of the
    // last two kinds must not step, so they take the env-by-env path.
    uint8_t special = 0, one_by_one = 0;
    int held = 0;
    for (int e = base; e < base + n; ++e) {
      special |= static_cast<uint8_t>(op_[e] != Op::kStep) | needs_reset_[e];
      one_by_one |= static_cast<uint8_t>(op_[e] == Op::kObserve || op_[e] == Op::kHold);
      held += op_[e] == Op::kHold;
    }
    if (!special) {
      step_all(env, s, base);
    } else if (kHasStepBlock && !one_by_one) {
      // A few envs of a cheap block reset: step the whole block in its
      // tight loop, then reset those few, discarding their step.
      step_all(env, s, base);
      reset_finished(env, s, base);
    } else {
      step_each(env, s, base);
    }
    count_steps(env, s, base);

    const int64_t batch = cfg_.batch_size;
    const int64_t pos = write_pos_.fetch_add(n - held, std::memory_order_acq_rel);
    if (held == 0 && (sync_ || pos % batch + n <= batch)) {
      // The common case: the whole block, contiguous rows of one slot.
      Slot& slot = slots_[(pos / batch) % num_slots_];
      const int ended = write_block(env, s, base, *slot.batch, sync_ ? base : static_cast<int>(pos % batch));
      release_block(b);
      publish(slot, n, ended);
      return;
    }
    // Some envs held, or rows that straddle two slots (after a partial send
    // the write cursor is no longer block-aligned): row by row. In sync mode
    // a row sits at its env's position.
    const int64_t first = pos / batch;
    int rows[2] = {0, 0}, ended[2] = {0, 0};
    for (int i = 0, k = 0; i < n; ++i) {
      if (op_[base + i] == Op::kHold) continue;
      const int64_t p = pos + k++;
      const int which = static_cast<int>(p / batch - first);
      const int row = sync_ ? base + i : static_cast<int>(p % batch);
      ended[which] += write_row(env, s, base, i, *slots_[(p / batch) % num_slots_].batch, row);
      ++rows[which];
    }
    release_block(b);
    for (int which = 0; which < 2; ++which)
      if (rows[which] > 0) publish(slots_[(first + which) % num_slots_], rows[which], ended[which]);
  }

  // Writes the rows of every env of the block into rows row0.. of `out`;
  // returns how many episodes ended.
  int write_block(E& env, Scratch& s, int base, Batch& out, int row0) {
    const int n = block_size_;
    Obs* obs = reinterpret_cast<Obs*>(out.obs(row0));
    if constexpr (requires { env.write_obs_block(n, obs); }) {
      static_assert(noexcept(env.write_obs_block(n, obs)), "write_obs_block must not throw");
      env.write_obs_block(n, obs);
    } else {
      for (int i = 0; i < n; ++i) write_obs(env, s, base, i, obs + static_cast<size_t>(i) * obs_size_);
    }
    if constexpr (kHasInfo) {
      static_assert(noexcept(env.write_info(0, static_cast<int32_t*>(nullptr))), "write_info must not throw");
      for (int i = 0; i < n; ++i) env.write_info(i, out.info(row0 + i));
    }
    std::memcpy(out.reward() + row0, s.reward.data(), n * sizeof(float));
    std::memcpy(out.terminated() + row0, s.terminated.get(), n);
    std::memcpy(out.truncated() + row0, s.truncated.get(), n);
    std::memcpy(out.done() + row0, s.ended.get(), n);
    std::memcpy(out.episode_return() + row0, s.episode_return.data(), n * sizeof(double));
    std::memcpy(out.episode_length() + row0, s.episode_length.data(), n * sizeof(int32_t));
    int32_t* ids = out.env_id() + row0;
    int ended = 0;
    for (int i = 0; i < n; ++i) {
      ids[i] = base + i;
      ended += s.ended[i];
    }
    if (out.layout().with_final_obs && ended) {
      for (int i = 0; i < n; ++i)
        if (s.ended[i]) write_final(s, i, out, row0 + i);
    }
    if (s.failed) {  // an env that threw reports zeros, never a half-written state
      for (int i = 0; i < n; ++i)
        if (broken_[base + i]) std::fill_n(obs + static_cast<size_t>(i) * obs_size_, obs_size_, Obs{});
    }
    return ended;
  }

  // Writes env i's row into `row` of `out`; returns whether its episode ended.
  bool write_row(E& env, Scratch& s, int base, int i, Batch& out, int row) {
    Obs* obs = reinterpret_cast<Obs*>(out.obs(row));
    write_obs(env, s, base, i, obs);
    if (broken_[base + i]) std::fill_n(obs, obs_size_, Obs{});  // an env that threw reports zeros
    if constexpr (kHasInfo) env.write_info(i, out.info(row));
    out.reward()[row] = s.reward[i];
    out.terminated()[row] = s.terminated[i];
    out.truncated()[row] = s.truncated[i];
    out.done()[row] = s.ended[i];
    out.episode_return()[row] = s.episode_return[i];
    out.episode_length()[row] = s.episode_length[i];
    out.env_id()[row] = base + i;
    if (out.layout().with_final_obs && s.ended[i]) write_final(s, i, out, row);
    return s.ended[i];
  }

  void write_obs(E& env, Scratch& s, int base, int i, Obs* out) {
    try {
      env.write_obs(i, out);
    } catch (...) {
      record_error(base + i, "exception while writing the observation", i, s);
    }
  }

  // Same-step autoreset: the last observation and info values of the episode that ended.
  void write_final(const Scratch& s, int i, Batch& out, int row) const {
    const size_t k = spec_.info_names.size();
    std::memcpy(out.final_obs(row), &s.final_obs[static_cast<size_t>(i) * obs_size_], obs_size_ * sizeof(Obs));
    if (k > 0) std::memcpy(out.final_info(row), &s.final_info[i * k], k * sizeof(int32_t));
  }

  // Called by the running thread once it no longer touches block b's envs
  // or scratch: the caller may send the block's held envs again. Before the
  // rows are published, so that a received row implies a free block.
  void release_block(int b) {
    busy_[b].store(0, std::memory_order_seq_cst);
    if (block_waiters_.load(std::memory_order_seq_cst)) futex_wake_all(busy_[b]);
  }

  // Publishes `rows` rows written into `slot`, `ended` of them with an ended
  // episode. Wakes a sleeping recv thread at every write: drain() and
  // recv_rest() wait for fewer than batch_size rows.
  void publish(Slot& slot, int rows, int ended) {
    if (ended) slot.batch->num_done.fetch_add(ended, std::memory_order_relaxed);
    slot.done.fetch_add(rows, std::memory_order_seq_cst);
    if (slot.waiting.load(std::memory_order_seq_cst)) futex_wake_all(slot.done);
  }

  void record_error(int e, const std::string& what, int i, Scratch& s) {
    broken_[e] = 1;
    needs_reset_[e] = 1;
    s.failed = true;
    s.reward[i] = 0.f;
    s.terminated[i] = s.truncated[i] = s.ended[i] = s.stepped[i] = false;
    s.episode_return[i] = 0.0;
    s.episode_length[i] = 0;
    std::lock_guard<std::mutex> lock(error_mu_);
    errors_.emplace_back(e, "env " + std::to_string(e) + " raised: " + what);
    has_error_.store(true, std::memory_order_release);
  }

  // Called by the recv thread: raises the first error of an env in `batch`.
  void rethrow_env_error(Batch& batch, int rows) {
    if (!has_error_.load(std::memory_order_acquire)) return;
    std::vector<uint8_t> in_batch(cfg_.num_envs, 0);
    for (int r = 0; r < rows; ++r) in_batch[batch.env_id()[r]] = 1;
    std::string msg;
    {
      std::lock_guard<std::mutex> lock(error_mu_);
      auto it = std::find_if(errors_.begin(), errors_.end(), [&](const auto& err) { return in_batch[err.first] != 0; });
      if (it == errors_.end()) return;
      msg = it->second;
      errors_.erase(std::remove_if(errors_.begin(), errors_.end(), [&](const auto& err) { return in_batch[err.first] != 0; }),
                    errors_.end());
      has_error_.store(!errors_.empty(), std::memory_order_release);
    }
    throw EnvError(msg);
  }

  static constexpr int kRecvSpins = 5000;
  static constexpr int kInterruptPollMs = 20;  // how often a blocked recv lets the caller check for signals

  PoolConfig cfg_;
  Spec spec_;
  size_t obs_size_ = 1, action_size_ = 1;
  int block_size_ = 1, num_blocks_ = 1, num_slots_ = 2;
  bool sync_ = true;
  bool caller_steps_ = true;  // set once in the constructor

  std::vector<std::unique_ptr<E>> blocks_;
  std::vector<Scratch> scratch_;
  // Per env; owned as described at the top of this file.
  std::vector<Pcg64> rng_;
  std::vector<int32_t> elapsed_;
  std::vector<double> episode_return_;
  std::vector<uint8_t> needs_reset_, broken_;
  std::vector<Op> op_;
  std::vector<Action> actions_;
  // Caller-owned.
  std::vector<State> state_;
  std::vector<int> staged_;
  std::vector<uint8_t> seen_;  // all zero between calls; check_ids' scratch
  std::vector<int32_t> all_ids_;  // 0 .. num_envs - 1
  std::vector<int> ready_;
  int in_flight_ = 0;
  int64_t recv_slot_ = 0;
  bool partial_sent_ = false;  // some block was sent for part of its envs (sticky)
  std::mutex api_mu_;

  std::shared_ptr<BatchRecycler> recycler_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<int64_t> write_pos_{0};
  // Per block: 1 from dispatch (set by the caller) until the running thread
  // is done with it (release_block); the caller waits on it, announced in
  // block_waiters_, before it stages an env of a busy block.
  std::vector<std::atomic<int>> busy_;
  std::atomic<int> block_waiters_{0};
  TaskQueue queue_;
  std::vector<std::thread> workers_;

  std::mutex error_mu_;
  std::vector<std::pair<int, std::string>> errors_;  // (env id, message); guarded by error_mu_
  std::atomic<bool> has_error_{false};
  std::atomic<bool> closed_{false};
};

}  // namespace fastvec::core
