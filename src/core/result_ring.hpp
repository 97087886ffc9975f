#pragma once
// The ring of result batches between the threads that step blocks and the
// caller that receives them.
//
// Rows are numbered by a write cursor: the rows of batch R are positions
// R*batch_size .. (R+1)*batch_size - 1, in slot R % num_slots. Ownership:
// - A stepping thread claims positions (claim, lock-free), writes its rows
//   into the slots' Batches and then publishes them (publish: the slot's
//   completion counter, seq_cst, and a wake-up if the caller sleeps on it).
// - The caller thread owns the read cursor: it waits until the current
//   slot holds the rows it needs (the counter, acquire), then takes the
//   Batch (take: a fresh one replaces it, for Python to own) or drops its
//   rows (skip), and moves on.
// Everything in flight is at most num_envs rows, so the ring's
// num_envs / batch_size + 1 slots are never written ahead of the reader by
// a whole turn.

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "batch.hpp"
#include "futex.hpp"

namespace fastvec::core {

class ResultRing {
 public:
  // Added to every counter by close(): any wait sees it and returns.
  static constexpr int kClosedMark = 1 << 29;

  struct Slot {
    std::unique_ptr<Batch> batch;
    // Rows written. Writers add (seq_cst) and then wake the caller if it
    // sleeps; the caller announces itself in `waiting` (seq_cst) before its
    // last look at `written`: one of the two always sees the other.
    std::atomic<int> written{0};
    std::atomic<int> waiting{0};
  };

  ResultRing(const BatchLayout& layout, int num_envs, int batch_size)
      : batch_size_(batch_size),
        num_slots_(num_envs / batch_size + 1),
        recycler_(std::make_shared<BatchRecycler>(layout, static_cast<size_t>(num_slots_) + 2)),
        slots_(static_cast<size_t>(num_slots_)) {
    for (int s = 0; s < num_slots_; ++s) slots_[s].batch = recycler_->take();
  }

  // How many Batches a ring of these dimensions keeps (its slots and the
  // spares Python holds), for the pool's memory estimate.
  static int batches(int num_envs, int batch_size) { return num_envs / batch_size + 1 + 2; }

  // -- stepping threads ---------------------------------------------------

  // Claims `rows` consecutive positions; returns the first.
  int64_t claim(int rows) { return write_pos_.fetch_add(rows, std::memory_order_acq_rel); }
  Slot& slot_of(int64_t pos) { return slots_[(pos / batch_size_) % num_slots_]; }
  // Where position `pos` sits in its slot's Batch (async: completion order).
  int row_of(int64_t pos) const { return static_cast<int>(pos % batch_size_); }
  // Whether positions pos .. pos + rows - 1 lie in one slot.
  bool one_slot(int64_t pos, int rows) const { return pos % batch_size_ + rows <= batch_size_; }

  // Publishes `rows` rows written into `slot`, `ended` of them with an
  // ended episode. Wakes a sleeping caller at every write: drain() and
  // recv_rest() wait for fewer than batch_size rows.
  static void publish(Slot& slot, int rows, int ended) {
    if (ended) slot.batch->num_ended.fetch_add(ended, std::memory_order_relaxed);
    slot.written.fetch_add(rows, std::memory_order_seq_cst);
    if (slot.waiting.load(std::memory_order_seq_cst)) futex_wake_all(slot.written);
  }

  // -- the caller thread --------------------------------------------------

  // The slot the next rows are received from (wait on its `written`).
  Slot& current() { return slots_[read_ % num_slots_]; }
  // The position of the current slot's first row.
  int64_t read_pos() const { return read_ * batch_size_; }

  // Hands the current slot's Batch over (its rows are in) and moves on; a
  // fresh Batch takes its place. Python owns what this returns.
  std::shared_ptr<Batch> take() {
    Slot& slot = current();
    std::unique_ptr<Batch> fresh = recycler_->take();  // may throw: before anything changes
    std::unique_ptr<Batch> full = std::exchange(slot.batch, std::move(fresh));
    advance(slot);
    return recycler_->lend(std::move(full));
  }

  // Drops the current slot's rows (they are in) and moves on.
  void skip() {
    Slot& slot = current();
    slot.batch->num_ended.store(0, std::memory_order_relaxed);
    advance(slot);
  }

  // With nothing in flight, the next rows start at the next slot: a partial
  // batch (recv_rest, drain) or a partial send leaves the cursor unaligned.
  void realign() { write_pos_.store(read_ * batch_size_, std::memory_order_release); }

  // Wakes a caller waiting on any slot (it rechecks the pool's closed flag).
  void close() {
    for (int s = 0; s < num_slots_; ++s) {
      slots_[s].written.fetch_add(kClosedMark, std::memory_order_seq_cst);
      futex_wake_all(slots_[s].written);
    }
  }

 private:
  void advance(Slot& slot) {
    slot.written.store(0, std::memory_order_relaxed);
    ++read_;
  }

  const int64_t batch_size_;
  const int num_slots_;
  std::shared_ptr<BatchRecycler> recycler_;
  std::vector<Slot> slots_;  // never resized: Slots hold atomics
  std::atomic<int64_t> write_pos_{0};
  int64_t read_ = 0;  // the read cursor, in batches; owned by the caller thread
};

}  // namespace fastvec::core
