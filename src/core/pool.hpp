#pragma once
// Pool<E>: steps num_envs copies of env E on num_threads threads: the caller
// side of the pool (its calls, their checks, the dispatch of blocks and the
// waits), over three rooms: BlockStepper<E> (the envs and the stepping of a
// block), ResultRing (the batches rows are written into) and TaskQueue (the
// blocks waiting for a thread).
//
// Ownership, in one place:
// - The caller thread (Python, one call at a time, serialised by api_mu_)
//   owns the states of the envs (state_: fresh, idle or in flight), the
//   staging counters, in_flight_, kept_ and the ring's read cursor, and the
//   per-env arrays of envs that are not in flight (block_stepper.hpp).
// - Rows an env error kept from a recv (async) are put back in the ring by
//   the caller, at positions it claims and publishes as a stepping thread
//   would; it alone writes those rows until it receives them.
// - A block in flight is owned by the one thread running it (a worker, or
//   the caller stealing work while it waits): its E instance, its envs'
//   per-env arrays and its scratch. Hand-over happens through the TaskQueue
//   mutex (send -> runner), the block's busy flag (runner -> a send to one
//   of its held envs) and the slot's completion counter (runner -> recv).
// - Rows of a Batch in a ring slot are written by the thread that claimed
//   them, then read by recv after the slot's counter says all rows are in.
//   recv hands the Batch to Python and puts a fresh one in the slot before
//   any env of that batch can be sent again.
// - Where the threads run (CpuSpread): each stepping thread publishes its
//   own CPU; a worker moves itself off a CPU another stepping thread is on,
//   and the caller, about to sleep, moves a descheduled worker that holds a
//   block to its own CPU (cpu_spread.hpp says how, and why).
//
// One mechanism serves sync (batch_size == num_envs, rows in env order) and
// async (batch_size < num_envs, rows in completion order) stepping.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/resource.h>

#include "batch.hpp"
#include "block_stepper.hpp"
#include "cpu_spread.hpp"
#include "env.hpp"
#include "futex.hpp"
#include "memory.hpp"
#include "options.hpp"
#include "pool_base.hpp"
#include "result_ring.hpp"
#include "rng.hpp"
#include "spec.hpp"
#include "task_queue.hpp"
#include "thread_tuner.hpp"

namespace fastvec::core {

template <NativeEnv E>
class Pool final : public PoolBase {
 public:
  using Obs = typename E::Obs;
  using Action = typename E::Action;
  using Reward = reward_t<E>;
  static constexpr bool kDiscrete = kDiscreteActions<E>;  // one action element per env

  Pool(const PoolConfig& config, const Options& options)
      : cfg_(checked(config)),
        spec_(with_pool_info(E::spec(options), config)),
        obs_size_(elements(spec_.obs_shape)),
        action_size_(kDiscrete ? 1 : elements(spec_.action_shape)),
        block_size_(cfg_.block_size > 0 ? cfg_.block_size : auto_block_size()),
        num_blocks_(cfg_.num_envs / block_size_),
        sync_(cfg_.batch_size == cfg_.num_envs),
        layout_{cfg_.batch_size, obs_size_ * sizeof(Obs), sizeof(Reward),
                cfg_.autoreset_mode == AutoresetMode::kSameStep, info_row_bytes(spec_.info, spec_.info_masks)},
        memory_checked_(check_memory()),
        envs_(cfg_, spec_, block_size_, obs_size_, action_size_),
        ring_(layout_, cfg_.num_envs, cfg_.batch_size),
        queue_(sync_) {
    if ((spec_.num_actions > 0) != kDiscrete)
      throw std::logic_error("the env's spec and Action type disagree: int32 actions need num_actions > 0, "
                             "float actions an action_shape");
    const int n = cfg_.num_envs;
    state_.assign(n, State::kFresh);
    all_ids_.resize(n);
    std::iota(all_ids_.begin(), all_ids_.end(), 0);
    seen_.assign(n, 0);
    staged_.assign(num_blocks_, 0);
    // Envs are constructed on the pool's threads: loading an env (a ROM) can
    // be slow, and in parallel it is num_threads times faster.
    construct_blocks(options);
    start_workers();
  }

  ~Pool() override { close(); }

  const Spec& spec() const override { return spec_; }
  bool action_is_discrete() const override { return kDiscrete; }
  const char* obs_dtype() const override { return core::obs_dtype<E>(); }
  const char* action_dtype() const override { return kDiscrete ? "int64" : dtype_name<Action>(); }
  const char* reward_dtype() const override { return dtype_name<Reward>(); }
  int num_envs() const override { return cfg_.num_envs; }
  int batch_size() const override { return cfg_.batch_size; }
  int num_threads() const override { return cfg_.num_threads; }
  int active_threads() const override { return active_threads_.load(std::memory_order_relaxed); }
  int block_size() const override { return block_size_; }
  AutoresetMode autoreset_mode() const override { return cfg_.autoreset_mode; }
  int in_flight() override {
    std::lock_guard<std::mutex> lock(api_mu_);
    return in_flight_;
  }

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
      if (envs_.broken[e])
        throw UsageError("env " + std::to_string(e) + " raised an exception earlier; reset it before stepping it again");
      if (cfg_.autoreset_mode == AutoresetMode::kDisabled && envs_.needs_reset[e])
        throw UsageError("env " + std::to_string(e) +
                         " finished its episode and autoreset_mode='disabled'; reset it "
                         "(reset(options={'reset_mask': mask})) before stepping it again");
    }
    wait_blocks_free(env_ids, n);
    if constexpr (kDiscrete) {
      const int64_t* a = static_cast<const int64_t*>(actions);
      for (int k = 0; k < n; ++k) envs_.actions[env_ids[k]] = static_cast<Action>(a[k]);
    } else {
      const Action* a = static_cast<const Action*>(actions);
      for (int k = 0; k < n; ++k)
        std::memcpy(&envs_.actions[env_ids[k] * action_size_], a + k * action_size_, action_size_ * sizeof(Action));
    }
    for (int k = 0; k < n; ++k) stage(env_ids[k], Op::kStep);
    dispatch();
  }

  void send_step_all(const void* actions) override {
    std::unique_lock<std::mutex> lock(api_mu_);
    check_open();
    const int n = cfg_.num_envs;
    const uint8_t disabled = cfg_.autoreset_mode == AutoresetMode::kDisabled;
    // States first: per-env flags may only be read for idle envs (a runner
    // owns an env in flight). Every env idle: no block is running.
    uint8_t bad = 0;
    for (int e = 0; e < n; ++e) bad |= static_cast<uint8_t>(state_[e] != State::kIdle);
    if (!bad)
      for (int e = 0; e < n; ++e) bad |= envs_.broken[e] | (disabled & envs_.needs_reset[e]);
    if (bad) {  // the general path finds the env and says what is wrong with it
      lock.unlock();
      send_step(actions, all_ids_.data(), n);
      return;
    }
    if constexpr (kDiscrete) {
      const int64_t* a = static_cast<const int64_t*>(actions);
      for (int e = 0; e < n; ++e) envs_.actions[e] = static_cast<Action>(a[e]);
    } else {
      std::memcpy(envs_.actions.data(), actions, static_cast<size_t>(n) * action_size_ * sizeof(Action));
    }
    std::fill(envs_.op.begin(), envs_.op.end(), Op::kStep);
    std::fill(state_.begin(), state_.end(), State::kStaged);
    std::fill(staged_.begin(), staged_.end(), block_size_);
    dispatch();
  }

  void send_reset(const int32_t* env_ids, int n, const std::optional<uint64_t>* seeds,
                  bool observe_others) override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    check_ids(env_ids, n);
    // A partial reset (observe_others) returns every env's row: nothing may be in flight, listed or not.
    if (observe_others && in_flight_ > 0)
      throw UsageError("envs are in flight; receive their results before a partial reset");
    std::vector<uint8_t> listed(cfg_.num_envs, 0);
    for (int k = 0; k < n; ++k) listed[env_ids[k]] = 1;
    for (int e = 0; e < cfg_.num_envs; ++e) {
      if (listed[e] && state_[e] == State::kInFlight)
        throw UsageError("env " + std::to_string(e) + " is in flight; receive its result before resetting it");
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
      if (seeds != nullptr && seeds[k].has_value()) envs_.rng[e] = single_rng(*seeds[k]);
      stage(e, Op::kReset);
    }
    if (observe_others)
      for (int e = 0; e < cfg_.num_envs; ++e)
        if (!listed[e]) stage(e, Op::kObserve);
    dispatch();
  }

  std::shared_ptr<Batch> recv() override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    if (in_flight_ < cfg_.batch_size) {
      throw UsageError("recv() would wait forever: " + std::to_string(in_flight_) +
                       " env(s) are in flight but batch_size is " + std::to_string(cfg_.batch_size) +
                       "; send actions (or async_reset) first");
    }
    return receive(cfg_.batch_size);
  }

  std::shared_ptr<Batch> recv_rest(int* rows) override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    if (in_flight_ == 0 || in_flight_ >= cfg_.batch_size)
      throw UsageError("recv_rest() takes the envs in flight when they are fewer than batch_size (" +
                       std::to_string(in_flight_) + " env(s) in flight, batch_size " +
                       std::to_string(cfg_.batch_size) + ")");
    *rows = in_flight_;
    return receive(*rows);
  }

  void peek(const int32_t* env_ids, int n, bool frames, void* out) override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    check_ids(env_ids, n);
    if (frames && !BlockStepper<E>::kHasRender && !BlockStepper<E>::kHasRenderState)
      throw UsageError("this env has no frames to render");
    for (int k = 0; k < n; ++k) {
      const int e = env_ids[k];
      if (state_[e] == State::kFresh)
        throw UsageError("env " + std::to_string(e) + " has not been reset; call reset() or async_reset() first");
      if (state_[e] != State::kIdle)
        throw UsageError("env " + std::to_string(e) +
                         " is in flight (sent, its result not received yet); receive its result before accessing "
                         "its attributes ('render')");
    }
    wait_blocks_free(env_ids, n);  // the blocks of idle envs are the caller's once no thread runs them
    const size_t bytes = !frames                               ? obs_size_ * sizeof(Obs)
                         : BlockStepper<E>::kHasRenderState ? static_cast<size_t>(spec_.render_state_size) * 8
                                                            : elements(spec_.render_shape);
    for (int k = 0; k < n; ++k) envs_.peek(env_ids[k], frames, static_cast<std::byte*>(out) + k * bytes);
  }

  void drain() override {
    std::lock_guard<std::mutex> lock(api_mu_);
    check_open();
    while (in_flight_ > 0) {
      const int rows = std::min(in_flight_, cfg_.batch_size);
      wait_rows(rows);
      ring_.skip();
      in_flight_ -= rows;
    }
    // Every env has finished (rows in sync mode sit at env positions, so
    // the states, not the batch, say which envs those were).
    for (State& st : state_)
      if (st == State::kInFlight) st = State::kIdle;
    kept_.clear();
    ring_.realign();
    envs_.clear_errors();
  }

  void close() override {
    if (closed_.exchange(true)) return;
    queue_.close();
    // Wake a caller waiting on another thread (a recv, or a send waiting for
    // a block): any change of value wakes it, and it rechecks closed_.
    ring_.close();
    for (std::atomic<int>& busy : envs_.busy) {
      busy.fetch_add(ResultRing::kClosedMark, std::memory_order_seq_cst);
      futex_wake_all(busy);
    }
    for (std::thread& t : workers_) {
      if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
    }
  }

  bool closed() const override { return closed_.load(std::memory_order_acquire); }

 private:
  // kStaged only within a call: between stage() and dispatch().
  enum class State : uint8_t { kFresh, kIdle, kStaged, kInFlight };

  static PoolConfig checked(PoolConfig cfg) {
    if (cfg.num_envs < 1) throw std::invalid_argument("num_envs must be >= 1");
    if (cfg.batch_size == 0) cfg.batch_size = cfg.num_envs;
    if (cfg.batch_size < 1 || cfg.batch_size > cfg.num_envs)
      throw std::invalid_argument("batch_size must be in [1, num_envs]");
    if (cfg.num_threads < 1) throw std::invalid_argument("num_threads must be >= 1");
    if (cfg.block_size < 0) throw std::invalid_argument("block_size must be >= 1");
    if (cfg.block_size > 0 && (cfg.num_envs % cfg.block_size || cfg.batch_size % cfg.block_size))
      throw std::invalid_argument("block_size must divide both num_envs and batch_size");
    if (cfg.max_episode_steps < 0) throw std::invalid_argument("max_episode_steps must be >= 0");
    if (cfg.thread_affinity_offset < -1) throw std::invalid_argument("thread_affinity_offset must be >= -1");
    // A pool of num_envs envs cannot use more threads than that.
    cfg.num_threads = std::min(cfg.num_threads, cfg.num_envs);
    return cfg;
  }

  // The env's spec plus the info columns the pool writes itself (after the env's).
  static Spec with_pool_info(Spec spec, const PoolConfig& cfg) {
    if (cfg.elapsed_info) spec.info.push_back({.name = "elapsed_step"});
    return spec;
  }

  static size_t elements(const std::vector<int64_t>& shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
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

  // Refuses (OutOfMemory) a pool whose estimated memory exceeds what the
  // process can get: its result buffers (the slots, and the spares Python
  // holds), the envs as their Spec declares them and the pool's per-env
  // state. Runs before anything of num_envs' size is allocated. (Threads
  // are start_workers()' to report.)
  bool check_memory() const {
    const double envs = cfg_.num_envs;
    const double buffers = static_cast<double>(ResultRing::batches(cfg_.num_envs, cfg_.batch_size)) *
                           static_cast<double>(Batch::bytes(layout_));
    // The rng, counters and flags of block_stepper.hpp, the states here, the
    // actions and the same-step scratch.
    const double per_env = sizeof(Pcg64) + 2 * sizeof(int32_t) + sizeof(double) + 5 +
                           static_cast<double>(action_size_ * sizeof(Action)) +
                           static_cast<double>(layout_.with_final_obs ? layout_.obs_bytes : 0);
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
    return true;
  }

  static std::string bytes_str(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
  }

  void construct_blocks(const Options& options) {
    std::vector<std::exception_ptr> errors(num_blocks_);
    std::atomic<int> next{0};
    auto build = [&] {
      for (int b; (b = next.fetch_add(1)) < num_blocks_;) {
        try {
          envs_.construct(b, options);
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

  // Starts the worker threads: no more than the blocks can keep busy (a block
  // runs on one thread at a time), and in sync mode one fewer, since the
  // caller is one of them. A thread the OS refuses (a pids limit,
  // RLIMIT_NPROC, no address space for its stack) is a runtime_error naming
  // the counts, raised once the threads already started are joined.
  void start_workers() {
    const int threads = std::min(cfg_.num_threads, num_blocks_);
    const int workers = sync_ ? threads - 1 : threads;
    cpus_ = available_cpus();
    // With adapt_threads, ThreadTuner chooses how many of them step (in sync
    // mode the caller is one; an async pool keeps at least one worker).
    const bool adapt = cfg_.adapt_threads;
    tuner_ = ThreadTuner(adapt ? 1 : threads, threads,
                         adapt && cfg_.initial_threads > 0 ? std::min(cfg_.initial_threads, threads) : threads);
    use_threads(tuner_.active());
    spread_.init(workers, cfg_.thread_affinity_offset < 0);
    try {
      workers_.reserve(workers);
      for (int t = 0; t < workers; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
    } catch (const std::exception& e) {
      const size_t started = workers_.size();
      close();
      throw std::runtime_error("could not start the pool's threads: " + std::to_string(workers) +
                               " worker thread(s) asked (num_threads=" + std::to_string(cfg_.num_threads) +
                               "), the system refused one after " + std::to_string(started) + " started (" +
                               e.what() + "); make the pool with fewer num_threads, or raise the process's "
                               "thread or memory limits");
    }
    if (cfg_.thread_affinity_offset >= 0) pin_workers();
  }

  // Pins worker t to CPU (offset + t) mod the allowed CPUs (PoolConfig::thread_affinity_offset).
  void pin_workers() {
    const std::vector<int> cpus = allowed_cpus();
    if (cpus.empty()) return;
    for (size_t t = 0; t < workers_.size(); ++t) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[(static_cast<size_t>(cfg_.thread_affinity_offset) + t) % cpus.size()], &set);
      pthread_setaffinity_np(workers_[t].native_handle(), sizeof(set), &set);
    }
  }

  void worker_loop(int id) {
    spread_.worker_started(id);
    for (int b; (b = queue_.pop(id)) >= 0;) {
      spread_.worker_at(id, queue_.allowed());
      envs_.run(b, ring_, [&] { spread_.worker_done(id); });
    }
    spread_.worker_ended(id);
  }

  // Called by the caller thread: `threads` of the pool's threads step blocks
  // from the next dispatch on (sync: the caller and threads - 1 workers).
  void use_threads(int threads) {
    allowed_workers_ = sync_ ? threads - 1 : threads;
    // A caller waiting in recv steps queued blocks itself when that uses a core
    // the workers leave free: always in sync mode (it is one of num_threads),
    // in async mode only if the stepping workers are fewer than the cores. A
    // third thread on two cores would only take turns with the workers.
    caller_steps_ = sync_ || allowed_workers_ < cpus_;
    queue_.set_allowed(allowed_workers_);
    active_threads_.store(threads, std::memory_order_relaxed);
  }

  // The process's involuntary context switches so far: how often the OS took
  // a core from one of its threads (ThreadTuner's sign of shared cores).
  static int64_t preemptions() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_nivcsw;
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

  // Called by the caller thread: marks env e staged, to be dispatched at the
  // end of the call.
  void stage(int e, Op op) {
    envs_.op[e] = op;
    state_[e] = State::kStaged;
    ++staged_[e / block_size_];
  }

  // Called by the caller thread: queues every block with staged envs. A block
  // with some envs staged runs for those only; the others are held (Op::kHold:
  // not touched, no row), stay idle, and may be sent once this run is over
  // (wait_blocks_free). Blocks queued here are never busy: senders waited for
  // them before staging.
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
            envs_.op[e] = Op::kHold;
          }
        }
      }
      in_flight_ += staged;
      envs_.busy[b].store(1, std::memory_order_relaxed);  // published to the runner by the queue's mutex
      ready_.push_back(b);
    }
    if (ready_.empty()) return;
    // In sync mode the caller steps blocks itself while it waits in recv, so
    // it wakes one worker fewer; with one block (or no workers) it wakes none.
    const int wake = std::min(static_cast<int>(ready_.size()) - (sync_ ? 1 : 0), allowed_workers_);
    spread_.caller_at(caller_steps_);
    queue_.push(ready_.begin(), ready_.end(), wake);
  }

  // Called by the caller thread before it stages envs in `env_ids`: waits
  // until no block of theirs is running. Only a block sent for part of its
  // envs can be running while others of its envs are idle (and may be sent),
  // so nothing waits until a partial send has happened. Waits before
  // anything is staged: an interrupt leaves the call without effect.
  void wait_blocks_free(const int32_t* env_ids, int n) {
    if (!partial_sent_) return;
    int last = -1;
    for (int k = 0; k < n; ++k) {
      const int b = env_ids[k] / block_size_;
      if (b != last) wait_until(envs_.busy[b], envs_.block_waiters, [](int busy) { return busy != 1; });
      last = b;
      check_open();
    }
  }

  // Called by the caller thread: waits until the current ring slot holds
  // `rows` rows (or the pool is closed).
  void wait_rows(int rows) {
    ResultRing::Slot& slot = ring_.current();
    wait_until(slot.written, slot.waiting, [rows](int written) { return written >= rows; });
    check_open();
  }

  // The caller's one way to wait: until ready(word), stepping queued blocks
  // itself when a core is free for it, spinning briefly, then sleeping on
  // `word` (announced in `waiters`), with the interrupt check every
  // kInterruptPollMs of sleep: after a sleep that saw no change, and at
  // least that often while rows trickle in (the check also enforces a
  // caller's time-out, which a steady trickle must not postpone).
  template <class Ready>
  void wait_until(std::atomic<int>& word, std::atomic<int>& waiters, Ready&& ready) {
    int spins = 0;
    std::chrono::steady_clock::time_point checked{};  // set at the first sleep
    for (;;) {
      const int seen = word.load(std::memory_order_acquire);
      if (ready(seen)) {
        spread_.unwatch();
        return;
      }
      const int b = caller_steps_ ? queue_.try_pop() : -1;
      if (b >= 0) {
        envs_.run(b, ring_);
        continue;
      }
      if (++spins < kRecvSpins) {
        // A wait this long is no longer the usual few microseconds for a
        // worker's last block: start watching whether the workers run.
        if (spins == kRecvSpins / 4 && caller_steps_) spread_.watch(queue_.allowed());
        cpu_relax();
        continue;
      }
      // Nothing left to step here, and this CPU is about to go idle: a worker
      // the OS has descheduled with a block in hand runs here meanwhile.
      if (caller_steps_) spread_.lend_cpu(queue_.allowed());
      if (interrupt_check_ && checked == std::chrono::steady_clock::time_point{})
        checked = std::chrono::steady_clock::now();
      waiters.fetch_add(1, std::memory_order_seq_cst);
      if (word.load(std::memory_order_seq_cst) == seen) futex_wait(word, seen, kInterruptPollMs);
      waiters.fetch_sub(1, std::memory_order_seq_cst);
      if (!interrupt_check_) continue;
      const auto now = std::chrono::steady_clock::now();
      if (word.load(std::memory_order_acquire) == seen || now - checked >= std::chrono::milliseconds(kInterruptPollMs)) {
        checked = now;
        interrupt_check_();
      }
    }
  }

  // Called by the caller thread: waits for `rows` rows, takes their Batch
  // for Python and makes their envs idle; raises the first env error among
  // them.
  std::shared_ptr<Batch> receive(int rows) {
    wait_rows(rows);
    if (!kept_.empty()) bring_kept_rows(rows);
    // A sync pool's rows sit at their envs' positions: the rows of a partial
    // send (EnvPool's step(actions, env_id)) move to the front, in env order.
    if (sync_ && rows < cfg_.batch_size) {
      Batch& batch = *ring_.current().batch;
      for (int e = 0, r = 0; e < cfg_.num_envs; ++e)
        if (state_[e] == State::kInFlight) batch.copy_row(e, r++);
    }
    std::shared_ptr<Batch> out = ring_.take();
    in_flight_ -= rows;
    if (sync_ && rows == cfg_.batch_size) {
      std::fill(state_.begin(), state_.end(), State::kIdle);  // every env was in flight
    } else if (sync_) {
      for (State& st : state_)  // a partial send: its envs only (the others may never have been reset)
        if (st == State::kInFlight) st = State::kIdle;
    } else {
      const int32_t* ids = out->env_id();
      for (int r = 0; r < rows; ++r) state_[ids[r]] = State::kIdle;
    }
    if (rows < cfg_.batch_size) ring_.realign();  // recv_rest: nothing is in flight
    if (tuner_.enabled()) {
      const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count();
      const int threads = tuner_.on_call(rows, now, preemptions);
      if (threads != active_threads()) use_threads(threads);
    }
    if (envs_.has_error()) raise_env_error(*out, rows);
    return out;
  }

  // Called by the caller thread, from receive(), when some env's error is yet to be reported: raises
  // (EnvError, with its env_id) the error of the first row of `out` whose env raised, if any. An async
  // pool keeps the batch's other rows: their envs stay in flight and the next recv() returns them (so a
  // loop that resets the env that raised keeps every env in play; an env among them that raised too is
  // reported by that recv). A sync batch is every env: its rows go (a reset goes on from there).
  void raise_env_error(Batch& out, int rows) {
    std::string msg;
    const int row = envs_.take_env_error(out, rows, cfg_.num_envs, sync_, &msg);
    if (row < 0) return;
    const int env = out.env_id()[row];
    if (!sync_) keep_rows(out, rows, row);
    throw EnvError(env, msg);
  }

  // Called by the caller thread: puts the `rows` rows of `out` but row `skip` back in the ring, as rows
  // finished and not received: each at a position claimed now (the ring's room holds them: their envs count
  // as in flight again), published at once; kept_ records the positions, for bring_kept_rows().
  void keep_rows(Batch& out, int rows, int skip) {
    const int64_t pos = ring_.claim(rows - 1);
    ResultRing::Slot* slot = nullptr;
    int count = 0, ended = 0;
    for (int r = 0, k = 0; r < rows; ++r) {
      if (r == skip) continue;
      const int64_t p = pos + k++;
      ResultRing::Slot* at = &ring_.slot_of(p);
      if (at != slot && slot != nullptr) {
        ResultRing::publish(*slot, count, ended);
        count = ended = 0;
      }
      slot = at;
      Batch::transfer_row(out, r, *slot->batch, ring_.row_of(p), false);
      count += 1;
      ended += out.ended()[r];
      state_[out.env_id()[r]] = State::kInFlight;
      kept_.push_back(p);
    }
    if (slot != nullptr) ResultRing::publish(*slot, count, ended);
    in_flight_ += rows - 1;
  }

  // Called by the caller thread once the current slot holds its `rows` rows: moves the kept rows that lie
  // in later slots into it, in exchange for rows of its own (those then wait in the kept rows' places), so
  // that the recv after an env error returns the rows it kept. Every kept row is then in this batch.
  void bring_kept_rows(int rows) {
    const int64_t first = ring_.read_pos(), end = first + rows;
    Batch& here = *ring_.current().batch;
    int64_t give = end;  // the rows of this slot given in exchange: its last ones that were not kept
    for (const int64_t p : kept_) {
      if (p < end) continue;
      do {
        --give;
      } while (std::find(kept_.begin(), kept_.end(), give) != kept_.end());
      Batch& there = *ring_.slot_of(p).batch;
      const int from = ring_.row_of(give), to = ring_.row_of(p);
      const int moved = here.ended()[from] - there.ended()[to];  // the ended rows change Batches too
      Batch::transfer_row(here, from, there, to, true);
      here.num_ended.fetch_sub(moved, std::memory_order_relaxed);
      there.num_ended.fetch_add(moved, std::memory_order_relaxed);
    }
    kept_.clear();
  }

  static constexpr int kRecvSpins = 5000;
  static constexpr int kInterruptPollMs = 20;  // how often a blocked call lets the caller check for signals

  const PoolConfig cfg_;
  const Spec spec_;
  const size_t obs_size_, action_size_;
  const int block_size_, num_blocks_;
  const bool sync_;
  const BatchLayout layout_;
  const bool memory_checked_;  // check_memory() ran (before the members below allocate)
  bool caller_steps_ = true;   // set by use_threads() (caller-owned, as the members below it)

  BlockStepper<E> envs_;
  ResultRing ring_;
  TaskQueue queue_;
  CpuSpread spread_;  // init() in start_workers(), before the workers start
  std::vector<std::thread> workers_;

  // Caller-owned.
  std::vector<State> state_;
  std::vector<int> staged_;
  std::vector<uint8_t> seen_;     // all zero between calls; check_ids' scratch
  std::vector<int32_t> all_ids_;  // 0 .. num_envs - 1
  std::vector<int> ready_;
  int in_flight_ = 0;  // envs sent and not received (kept rows included)
  // The ring positions of the rows an env error kept from a recv (keep_rows), until the next recv takes
  // them (bring_kept_rows); empty on the path without errors.
  std::vector<int64_t> kept_;
  bool partial_sent_ = false;  // some block was sent for part of its envs (sticky)
  std::mutex api_mu_;

  std::atomic<bool> closed_{false};

  // Caller-owned, set by use_threads(): how many workers step, and the tuner
  // that chooses them (with caller_steps_ above).
  int cpus_ = 1;  // set once in start_workers()
  int allowed_workers_ = 0;
  ThreadTuner tuner_{1, 1, 1};
  std::atomic<int> active_threads_{1};  // the caller's choice, readable from any thread (Python's property)
};

}  // namespace fastvec::core
