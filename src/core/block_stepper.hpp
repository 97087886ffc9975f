#pragma once
// BlockStepper<E>: the envs of a pool, in blocks, and the stepping of one
// block by whichever thread runs it (a worker, or the caller while it waits).
//
// Ownership:
// - The per-env arrays (op, actions, rng, elapsed, episode_return,
//   needs_reset, broken) of an env whose block is not running belong to the
//   caller thread; while its block runs, to the running thread. The caller
//   writes an env's op, actions and (on a seeded reset) rng before it queues
//   the block (TaskQueue's mutex hands them over) and reads its flags only
//   while the env is idle. A held env (Op::kHold: its block runs for other
//   envs) is not touched by the run, but the caller must not write its op
//   until the run is over: busy[b], cleared by the running thread (release,
//   seq_cst) once it no longer touches the block, before it publishes rows.
// - An E instance and a block's Scratch belong to the thread running it.
// - errors_ is guarded by error_mu_.
//
// The pool owns the bookkeeping an env would otherwise repeat: step counts,
// truncation, returns, autoreset and exception capture.

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "batch.hpp"
#include "env.hpp"
#include "futex.hpp"
#include "pool_base.hpp"
#include "result_ring.hpp"
#include "rng.hpp"
#include "simd.hpp"

namespace fastvec::core {

// The pool's per-step bookkeeping for a block, as one vectorizable loop:
// step counts, returns, truncation at `limit`, and the statistics of the
// episodes that ended. Returns whether any ended.
template <class Reward>
[[gnu::always_inline]] inline bool count_block_loop(int n, int32_t limit, const bool* __restrict stepped,
                                                    const Reward* __restrict reward,
                                                    const bool* __restrict terminated, int32_t* __restrict elapsed,
                                                    double* __restrict ret, bool* __restrict truncated,
                                                    bool* __restrict ended, double* __restrict ended_return,
                                                    int32_t* __restrict ended_length) {
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

// count_block_loop for float32 rewards (cheap envs stepped in blocks: SIMD clones) and float64 ones.
FASTVEC_SIMD_CLONES inline bool count_block(int n, int32_t limit, const bool* stepped, const float* reward,
                                            const bool* terminated, int32_t* elapsed, double* ret, bool* truncated,
                                            bool* ended, double* ended_return, int32_t* ended_length) {
  return count_block_loop(n, limit, stepped, reward, terminated, elapsed, ret, truncated, ended, ended_return,
                          ended_length);
}
inline bool count_block(int n, int32_t limit, const bool* stepped, const double* reward, const bool* terminated,
                        int32_t* elapsed, double* ret, bool* truncated, bool* ended, double* ended_return,
                        int32_t* ended_length) {
  return count_block_loop(n, limit, stepped, reward, terminated, elapsed, ret, truncated, ended, ended_return,
                          ended_length);
}

// What an env does at its block's next run.
// kHold: the block runs for some of its other envs; this one is idle, not
// touched and gets no row.
enum class Op : uint8_t { kStep, kReset, kObserve, kHold };

template <NativeEnv E>
class BlockStepper {
 public:
  using Obs = typename E::Obs;
  using Action = typename E::Action;
  using Reward = reward_t<E>;
  static constexpr bool kDiscrete = kDiscreteActions<E>;
  // Cheap envs step a whole block in one call. step_block may also step envs
  // about to be reset; their results are discarded.
  static constexpr bool kHasStepBlock =
      requires(E& env, const Action* a, Reward* r, bool* t) { env.step_block(1, a, r, t); };
  // Envs with info values (Spec::info), such as Atari's lives.
  static constexpr bool kHasInfo = requires(const E& c, std::byte* p) { c.write_info(0, p); };
  // Envs that draw their own frames (Spec::render_shape), such as Atari's screen.
  static constexpr bool kHasRender = requires(E& env, uint8_t* p) { env.render(0, p); };
  // Envs whose frames Python draws from a state they write (Spec::render_state_size), such as toy text's; a
  // non-const one also does what the reference's render() does to the env (LunarLander's particles age).
  static constexpr bool kHasRenderState = requires(E& env, int64_t* p) { env.write_render_state(0, p); };

  BlockStepper(const PoolConfig& cfg, const Spec& spec, int block_size, size_t obs_size, size_t action_size)
      : mode_(cfg.autoreset_mode),
        limit_(cfg.max_episode_steps > 0 ? cfg.max_episode_steps : INT32_MAX),
        sync_(cfg.batch_size == cfg.num_envs),
        block_size_(block_size),
        num_blocks_(cfg.num_envs / block_size),
        obs_size_(obs_size),
        action_size_(action_size),
        info_bytes_(info_row_bytes(spec.info, spec.info_masks)),
        elapsed_info_(cfg.elapsed_info),
        info_masks_(spec.info_masks),
        mask_offset_(info_mask_offset(spec.info)) {
    // The pool's elapsed_step column is the last field (Pool adds it to the spec); a reset's info zeroes the
    // fields that only a step has (with masks).
    const std::vector<size_t> offsets = info_offsets(spec.info);
    if (elapsed_info_) elapsed_offset_ = offsets.back();
    for (size_t k = 0; k < spec.info.size(); ++k) {
      at_reset_.push_back(spec.info[k].at_reset);
      if (!spec.info[k].at_reset)
        step_only_.emplace_back(offsets[k], info_bytes(spec.info[k].type) * static_cast<size_t>(spec.info[k].size));
    }
    const int n = cfg.num_envs;
    busy = std::vector<std::atomic<int>>(static_cast<size_t>(num_blocks_));
    rng.reserve(n);
    for (int i = 0; i < n; ++i) rng.push_back(env_rng(cfg.seed, static_cast<uint32_t>(i)));
    elapsed.assign(n, 0);
    episode_return.assign(n, 0.0);
    needs_reset.assign(n, 0);
    broken.assign(n, 0);
    op.assign(n, Op::kStep);
    actions.assign(static_cast<size_t>(n) * action_size_, Action{});
    const bool final_obs = mode_ == AutoresetMode::kSameStep;
    scratch_.resize(num_blocks_);
    for (Scratch& s : scratch_) s.resize(block_size_, final_obs ? obs_size_ : 0, final_obs ? info_bytes_ : 0);
    blocks_.resize(num_blocks_);
  }

  int num_blocks() const { return num_blocks_; }

  // Makes block b's E (a ROM load can be slow: the pool runs this on its
  // threads, one block each).
  void construct(int b, const Options& options) { blocks_[b] = std::make_unique<E>(block_size_, options); }

  // Called by the caller thread for an env that is not in flight and whose
  // block no thread runs: its current frame or render state (frames) or observation.
  void peek(int e, bool frames, std::byte* out) {
    E& env = *blocks_[e / block_size_];
    const int i = e % block_size_;
    if constexpr (kHasRender) {
      if (frames) return env.render(i, reinterpret_cast<uint8_t*>(out));
    }
    if constexpr (kHasRenderState) {
      if (frames) return env.write_render_state(i, reinterpret_cast<int64_t*>(out));
    }
    env.write_obs(i, reinterpret_cast<Obs*>(out));
  }

  // Steps block b, then claims its rows in the ring and writes them: one row
  // per env, but none for envs held (a send for part of the block).
  // `stepped` runs once the block's envs have stepped, before its rows are published (a caller woken by them
  // then sees whatever `stepped` did: the pool's workers end a CPU lend there, cpu_spread.hpp).
  template <class Stepped = void (*)()>
  void run(int b, ResultRing& ring, Stepped&& stepped = [] {}) {
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
      special |= static_cast<uint8_t>(op[e] != Op::kStep) | needs_reset[e];
      one_by_one |= static_cast<uint8_t>(op[e] == Op::kObserve || op[e] == Op::kHold);
      held += op[e] == Op::kHold;
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
    stepped();

    const int64_t pos = ring.claim(n - held);
    if (held == 0 && (sync_ || ring.one_slot(pos, n))) {
      // The common case: the whole block, contiguous rows of one slot.
      ResultRing::Slot& slot = ring.slot_of(pos);
      const int ended = write_block(env, s, base, *slot.batch, sync_ ? base : ring.row_of(pos));
      release(b);
      ResultRing::publish(slot, n, ended);
      return;
    }
    // Some envs held, or rows that straddle two slots (after a partial send
    // the write cursor is no longer block-aligned): row by row. In sync mode
    // a row sits at its env's position.
    ResultRing::Slot* slots[2] = {&ring.slot_of(pos), nullptr};
    int rows[2] = {0, 0}, ended[2] = {0, 0};
    for (int i = 0, k = 0; i < n; ++i) {
      if (op[base + i] == Op::kHold) continue;
      const int64_t p = pos + k++;
      const int which = &ring.slot_of(p) == slots[0] ? 0 : 1;
      slots[which] = &ring.slot_of(p);
      ended[which] += write_row(env, s, base, i, *slots[which]->batch, sync_ ? base + i : ring.row_of(p));
      ++rows[which];
    }
    release(b);
    for (int which = 0; which < 2; ++which)
      if (rows[which] > 0) ResultRing::publish(*slots[which], rows[which], ended[which]);
  }

  // Called by the caller thread, with no error path cost: whether some env's error is yet to be reported.
  bool has_error() const { return has_error_.load(std::memory_order_acquire); }

  // Called by the caller thread: the first of the `rows` rows of `batch` whose env raised (-1 if none), with
  // that env's message in *msg. Forgets that env's errors (all_rows: every env's of the batch, whose rows are
  // then dropped); the others' wait for their rows (Pool keeps those rows for a later recv).
  int take_env_error(Batch& batch, int rows, int num_envs, bool all_rows, std::string* msg) {
    std::lock_guard<std::mutex> lock(error_mu_);
    std::vector<uint8_t> failed(num_envs, 0);
    for (const auto& err : errors_) failed[err.first] = 1;
    const int32_t* ids = batch.env_id();
    int row = -1;
    for (int r = 0; r < rows && row < 0; ++r)
      if (failed[ids[r]]) row = r;
    if (row < 0) return -1;
    const int env = ids[row];
    const auto it = std::find_if(errors_.begin(), errors_.end(), [&](const auto& err) { return err.first == env; });
    *msg = it->second;
    std::vector<uint8_t> forget(num_envs, 0);
    if (all_rows) {
      for (int r = 0; r < rows; ++r) forget[ids[r]] = 1;
    } else {
      forget[env] = 1;
    }
    errors_.erase(std::remove_if(errors_.begin(), errors_.end(), [&](const auto& err) { return forget[err.first] != 0; }),
                  errors_.end());
    has_error_.store(!errors_.empty(), std::memory_order_release);
    return row;
  }

  // Called by the caller thread with nothing in flight: forgets every error.
  void clear_errors() {
    std::lock_guard<std::mutex> lock(error_mu_);
    errors_.clear();
    has_error_.store(false, std::memory_order_release);
  }

  // Per env; owned as described at the top of this file.
  std::vector<Op> op;
  std::vector<Action> actions;
  std::vector<Pcg64> rng;
  std::vector<int32_t> elapsed;
  std::vector<double> episode_return;
  std::vector<uint8_t> needs_reset, broken;
  // Per block: 1 (or ResultRing::kClosedMark, at close) from dispatch until
  // the running thread is done with it; waiters announce themselves in
  // block_waiters. Set by the caller, cleared by the running thread.
  std::vector<std::atomic<int>> busy;
  std::atomic<int> block_waiters{0};

 private:
  // Per-block results of phase one (stepping), owned by the running thread.
  // Flags are bool, not uint8_t: a store through a char type may alias
  // anything, and would stop the compiler keeping the env's arrays in
  // registers across the step loop.
  // step_info/has_info: the env's info is a step's / a step's or a reset's (the masks write_info writes).
  struct Scratch {
    std::vector<Reward> reward;
    std::unique_ptr<bool[]> terminated, truncated, ended, stepped, step_info, has_info;
    std::vector<double> episode_return;
    std::vector<int32_t> episode_length;
    std::vector<Obs> final_obs;
    std::vector<std::byte> final_info;
    bool failed = false;  // some env of the block threw this round
    void resize(int n, size_t final_obs_size, size_t final_info_bytes) {
      reward.assign(n, Reward{});
      for (auto* flags : {&terminated, &truncated, &ended, &stepped, &step_info, &has_info})
        flags->reset(new bool[n]());
      episode_return.assign(n, 0.0);
      episode_length.assign(n, 0);
      final_obs.assign(static_cast<size_t>(n) * final_obs_size, Obs{});
      final_info.assign(static_cast<size_t>(n) * final_info_bytes, std::byte{});
    }
  };

  // Runs f() for env i of the block (env e); an exception is recorded as
  // that env's error, and the env reports zeros until it is reset.
  template <class F>
  void guarded(int e, int i, Scratch& s, F&& f) {
    try {
      f();
    } catch (const std::exception& ex) {
      record_error(e, ex.what(), i, s);
    } catch (...) {
      record_error(e, "unknown exception", i, s);
    }
  }

  void reset_env(E& env, int i, int e) {
    env.reset(i, rng[e]);
    elapsed[e] = 0;
    episode_return[e] = 0.0;
    needs_reset[e] = 0;
    broken[e] = 0;
  }

  // Phase one, the common case: every env of the block takes an ordinary
  // step, in a tight loop over the block's structure-of-arrays state.
  void step_all(E& env, Scratch& s, int base) {
    const int n = block_size_;
    std::fill(s.stepped.get(), s.stepped.get() + n, true);
    std::fill(s.step_info.get(), s.step_info.get() + n, true);
    std::fill(s.has_info.get(), s.has_info.get() + n, true);
    const Action* a = actions.data() + static_cast<size_t>(base) * action_size_;
    Reward* __restrict reward = s.reward.data();
    bool* __restrict terminated = s.terminated.get();
    if constexpr (kHasStepBlock) {
      static_assert(noexcept(env.step_block(n, a, reward, terminated)), "step_block must not throw");
      env.step_block(n, a, reward, terminated);
      return;
    }
    for (int i = 0; i < n; ++i) {
      guarded(base + i, i, s, [&] {
        const BasicStepResult<Reward> r = env.step(i, kDiscrete ? a + i : a + i * action_size_);
        reward[i] = r.reward;
        terminated[i] = r.terminated;
      });
    }
  }

  // After step_all on a block with resets: envs due a reset (explicit, or
  // next-step autoreset) reset now, and their step is discarded.
  void reset_finished(E& env, Scratch& s, int base) {
    for (int i = 0; i < block_size_; ++i) {
      const int e = base + i;
      if (op[e] != Op::kReset && !needs_reset[e]) continue;
      s.reward[i] = Reward{};
      s.terminated[i] = false;
      s.stepped[i] = false;
      s.step_info[i] = false;
      guarded(e, i, s, [&] { reset_env(env, i, e); });
    }
  }

  // Phase one, the general case: each env resets, reports its observation,
  // steps, or (held) does nothing, as its op and the autoreset mode say.
  void step_each(E& env, Scratch& s, int base) {
    for (int i = 0; i < block_size_; ++i) {
      const int e = base + i;
      s.reward[i] = Reward{};
      s.terminated[i] = false;
      s.stepped[i] = false;
      s.step_info[i] = s.has_info[i] = false;
      if (op[e] == Op::kHold) continue;
      if (broken[e]) s.failed = true;  // an observed broken env reports zeros
      guarded(e, i, s, [&] {
        if (op[e] == Op::kReset ||
            (op[e] == Op::kStep && needs_reset[e] && mode_ == AutoresetMode::kNextStep)) {
          reset_env(env, i, e);
          s.has_info[i] = true;
        } else if (op[e] == Op::kStep) {
          const BasicStepResult<Reward> r = env.step(i, &actions[static_cast<size_t>(e) * action_size_]);
          s.reward[i] = r.reward;
          s.terminated[i] = r.terminated;
          s.stepped[i] = s.step_info[i] = s.has_info[i] = true;
        }
      });
    }
  }

  // Phase two: the pool's bookkeeping for the envs that stepped: step
  // counts, truncation, returns; episodes that ended are recorded and, in
  // same-step mode, reset here.
  void count_steps(E& env, Scratch& s, int base) {
    const int n = block_size_;
    const bool any_end =
        count_block(n, limit_, s.stepped.get(), s.reward.data(), s.terminated.get(), &elapsed[base],
                    &episode_return[base], s.truncated.get(), s.ended.get(), s.episode_return.data(),
                    s.episode_length.data());
    if (!any_end) return;
    if (mode_ != AutoresetMode::kSameStep) {  // a flag per env, without a branch: toy text's episodes end at random
      for (int i = 0; i < n; ++i) needs_reset[base + i] |= static_cast<uint8_t>(s.ended[i]);
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (!s.ended[i]) continue;
      const int e = base + i;
      guarded(e, i, s, [&] {
        env.write_obs(i, &s.final_obs[static_cast<size_t>(i) * obs_size_]);
        // (final_info is empty when the env has no info fields)
        write_info(env, i, e, s.final_info.data() + static_cast<size_t>(i) * info_bytes_, true, true);
        reset_env(env, i, e);
        s.step_info[i] = false;  // the row's info is the new episode's
      });
    }
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
    if (!kHasInfo && elapsed_info_ && !info_masks_) {  // the pool's elapsed_step alone (EnvPool's classic
      std::byte* row = out.info(row0) + elapsed_offset_;  // control): a strided copy; write_info's per-row
      for (int i = 0; i < n; ++i, row += info_bytes_)     // branches showed in CartPole (docs/performance.md)
        std::memcpy(row, &elapsed[static_cast<size_t>(base + i)], sizeof(int32_t));
    } else if (kHasInfo || elapsed_info_) {
      for (int i = 0; i < n; ++i) write_info(env, i, base + i, out.info(row0 + i), s.step_info[i], s.has_info[i]);
    }
    std::memcpy(out.template reward<Reward>() + row0, s.reward.data(), n * sizeof(Reward));
    std::memcpy(out.terminated() + row0, s.terminated.get(), n);
    std::memcpy(out.truncated() + row0, s.truncated.get(), n);
    std::memcpy(out.ended() + row0, s.ended.get(), n);
    std::memcpy(out.episode_return() + row0, s.episode_return.data(), n * sizeof(double));
    std::memcpy(out.episode_length() + row0, s.episode_length.data(), n * sizeof(int32_t));
    int32_t* ids = out.env_id() + row0;
    int ended = 0;
    for (int i = 0; i < n; ++i) {
      ids[i] = base + i;
      ended += s.ended[i];
    }
    if (out.layout().with_final_obs && (ended || info_bytes_ > 0)) {
      for (int i = 0; i < n; ++i) write_final(s, i, out, row0 + i);
    }
    if (s.failed) {  // an env that threw reports zeros, never a half-written state
      for (int i = 0; i < n; ++i)
        if (broken[base + i]) std::fill_n(obs + static_cast<size_t>(i) * obs_size_, obs_size_, Obs{});
    }
    return ended;
  }

  // Writes env i's row into `row` of `out`; returns whether its episode ended.
  bool write_row(E& env, Scratch& s, int base, int i, Batch& out, int row) {
    Obs* obs = reinterpret_cast<Obs*>(out.obs(row));
    write_obs(env, s, base, i, obs);
    if (broken[base + i]) std::fill_n(obs, obs_size_, Obs{});  // an env that threw reports zeros
    write_info(env, i, base + i, out.info(row), s.step_info[i], s.has_info[i]);
    out.template reward<Reward>()[row] = s.reward[i];
    out.terminated()[row] = s.terminated[i];
    out.truncated()[row] = s.truncated[i];
    out.ended()[row] = s.ended[i];
    out.episode_return()[row] = s.episode_return[i];
    out.episode_length()[row] = s.episode_length[i];
    out.env_id()[row] = base + i;
    if (out.layout().with_final_obs) write_final(s, i, out, row);
    return s.ended[i];
  }

  // Env i's info values (env e of the pool): the env's own, then the pool's (PoolConfig::elapsed_info). With
  // masks, what a row's info lacks is 0 (a reset's: the fields only a step has; a row without info: all), and
  // each field's mask says whether the row has it.
  void write_info(const E& env, int i, int e, std::byte* out, bool step_info, bool has_info) const noexcept {
    if constexpr (kHasInfo) {
      static_assert(noexcept(env.write_info(0, static_cast<std::byte*>(nullptr))), "write_info must not throw");
      env.write_info(i, out);
    }
    if (elapsed_info_) std::memcpy(out + elapsed_offset_, &elapsed[e], sizeof(int32_t));
    if (!info_masks_) return;
    if (!has_info) {
      std::memset(out, 0, info_bytes_);
      return;
    }
    if (!step_info)
      for (const auto& [offset, bytes] : step_only_) std::memset(out + offset, 0, bytes);
    bool* mask = reinterpret_cast<bool*>(out + mask_offset_);
    for (size_t k = 0; k < at_reset_.size(); ++k) mask[k] = step_info || at_reset_[k];
  }

  void write_obs(E& env, Scratch& s, int base, int i, Obs* out) {
    try {
      env.write_obs(i, out);
    } catch (...) {
      record_error(base + i, "exception while writing the observation", i, s);
    }
  }

  // Same-step autoreset: the last observation and info values of the episode that ended; in other rows the
  // info values are 0 (as gymnasium's final_info has them outside its mask).
  void write_final(const Scratch& s, int i, Batch& out, int row) const {
    if (!s.ended[i]) {
      if (info_bytes_ > 0) std::memset(out.final_info(row), 0, info_bytes_);
      return;
    }
    std::memcpy(out.final_obs(row), &s.final_obs[static_cast<size_t>(i) * obs_size_], obs_size_ * sizeof(Obs));
    if (info_bytes_ > 0) std::memcpy(out.final_info(row), &s.final_info[i * info_bytes_], info_bytes_);
  }

  // Called by the running thread once it no longer touches block b's envs
  // or scratch: the caller may send the block's held envs again. Before the
  // rows are published, so that a received row implies a free block.
  void release(int b) {
    busy[b].store(0, std::memory_order_seq_cst);
    if (block_waiters.load(std::memory_order_seq_cst)) futex_wake_all(busy[b]);
  }

  void record_error(int e, const std::string& what, int i, Scratch& s) {
    broken[e] = 1;
    needs_reset[e] = 1;
    s.failed = true;
    s.reward[i] = Reward{};
    s.terminated[i] = s.truncated[i] = s.ended[i] = s.stepped[i] = s.step_info[i] = s.has_info[i] = false;
    s.episode_return[i] = 0.0;
    s.episode_length[i] = 0;
    std::lock_guard<std::mutex> lock(error_mu_);
    errors_.emplace_back(e, "env " + std::to_string(e) + " raised: " + what);
    has_error_.store(true, std::memory_order_release);
  }

  const AutoresetMode mode_;
  const int32_t limit_;
  const bool sync_;
  const int block_size_, num_blocks_;
  const size_t obs_size_, action_size_, info_bytes_;
  const bool elapsed_info_, info_masks_;
  const size_t mask_offset_;  // where an info row's masks start (with info_masks_)
  size_t elapsed_offset_ = 0;
  std::vector<uint8_t> at_reset_;  // per field: in a reset's info too
  std::vector<std::pair<size_t, size_t>> step_only_;  // (offset, bytes) of the fields a reset's info lacks
  std::vector<std::unique_ptr<E>> blocks_;
  std::vector<Scratch> scratch_;

  std::mutex error_mu_;
  std::vector<std::pair<int, std::string>> errors_;  // (env id, message); guarded by error_mu_
  std::atomic<bool> has_error_{false};
};

}  // namespace fastvec::core
