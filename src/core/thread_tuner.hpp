#pragma once
// ThreadTuner: how many of a pool's threads step blocks, chosen from the
// pool's own throughput. Owned by the pool's caller thread (Pool::receive
// calls it once per call); pure logic, no clock or system call of its own,
// so core_tests.cpp drives it with made-up times.
//
// Why: a sync step waits for its slowest thread. On an idle machine every
// thread has a core and more threads are faster. When another process takes
// cores (the learner, a second runner), the OS time-slices the pool's
// threads with it, and a thread descheduled for a few milliseconds holds the
// whole step: on 2 cores with one taken, 2 threads stepped CartPole and Pong
// no faster than 1 (docs/performance.md). (CpuSpread, cpu_spread.hpp, has
// since won most of that back: with one core taken, 2 threads now step both
// faster than 1. Whether they do depends on how many cores are left and on
// the env, and is still only measured.) Neither the machine's core count
// nor a load average read at construction says which count is faster now,
// and the other process may start after the pool; the throughput does.
//
// How: time runs in epochs of at least kEpochNs (and kMinCalls calls). A
// probe measures a candidate count against the current one on alternating
// epochs (candidate, current, candidate, current: a change of load during
// the probe hits both) and adopts the candidate if it is faster in both
// pairs and kMargin faster in all.
// Probes down (one thread fewer) run only while the process is being
// preempted: its involuntary context switches, counted over the epochs
// since the last probe (at least kMinCooldown, at most about kWindowNs),
// exceed kPreemptedPerThreadPerSecond for each thread stepping. The
// threshold lies between the rate an idle machine's kernel threads cause and
// the rate one busy loop beside the pool causes, well apart when counted over
// such a window (docs/performance.md); one epoch of 40 ms is too short to
// tell (two preemptions in it are 50 a second). So an idle machine does not
// pay for probes down. Probes up run whenever a thread is parked, since a
// parked thread cannot show that the load went away. A probe that changes
// nothing doubles the wait before the next (kMinCooldown to kMaxCooldown
// epochs), so a stable machine spends about 3% of its epochs, at worst,
// probing a slower count.

#include <algorithm>
#include <cstdint>

namespace fastvec::core {

class ThreadTuner {
 public:
  static constexpr int64_t kEpochNs = 40'000'000;   // long enough to average over a few scheduler slices
  static constexpr int kMinCalls = 2;
  static constexpr double kMargin = 0.03;           // below this, two counts are a tie (keep the current)
  static constexpr double kPreemptedPerThreadPerSecond = 50;
  static constexpr int64_t kWindowNs = 1'000'000'000;  // the longest the preemption count looks back
  static constexpr int kMinCooldown = 4, kMaxCooldown = 64;  // epochs between probes: 0.16 s to 2.6 s

  // Counts in [lo, hi], starting at `start`.
  ThreadTuner(int lo, int hi, int start) : lo_(lo), hi_(std::max(lo, hi)), active_(std::clamp(start, lo, hi_)) {}

  int active() const { return active_; }
  bool enabled() const { return hi_ > lo_; }

  // Called at the end of each pool call that returned `steps` env steps, at
  // time now_ns; preemptions() returns the process's involuntary context
  // switches so far and is called once per epoch. Returns the count for the
  // next call.
  template <class Preemptions>
  int on_call(int64_t steps, int64_t now_ns, Preemptions&& preemptions) {
    if (!enabled()) return active_;
    if (epoch_start_ns_ < 0) {  // the first call starts the first epoch and window
      epoch_start_ns_ = window_start_ns_ = now_ns;
      window_preempted_ = preemptions();
      return active_;
    }
    epoch_steps_ += steps;
    ++epoch_calls_;
    const int64_t elapsed = now_ns - epoch_start_ns_;
    if (elapsed < kEpochNs || epoch_calls_ < kMinCalls) return active_;
    end_epoch(static_cast<double>(epoch_steps_) * 1e9 / static_cast<double>(elapsed), now_ns, preemptions());
    epoch_start_ns_ = now_ns;
    epoch_steps_ = 0;
    epoch_calls_ = 0;
    return active_;
  }

 private:
  void end_epoch(double rate, int64_t now_ns, int64_t preempted) {
    if (probe_epoch_ >= 0) {
      // Epochs 0 and 2 ran the candidate, 1 and 3 the current count.
      if (probe_epoch_ % 2 == 0) {
        candidate_rate_ += rate;
        last_candidate_rate_ = rate;
      } else {
        current_rate_ += rate;
        wins_ += last_candidate_rate_ > rate;
      }
      if (++probe_epoch_ < 4) {
        active_ = probe_epoch_ % 2 == 0 ? candidate_ : current_;
        return;
      }
      probe_epoch_ = -1;
      // Adopted only if faster in both pairs and by kMargin in all: one lucky epoch on a noisy machine
      // (a scheduler slice more or less in 40 ms) must not move the pool.
      if (wins_ == 2 && candidate_rate_ > current_rate_ * (1 + kMargin)) {
        active_ = candidate_;
        backoff_ = kMinCooldown;
      } else {
        active_ = current_;
        backoff_ = std::min(backoff_ * 2, kMaxCooldown);
      }
      cooldown_ = backoff_;
      restart_window(now_ns, preempted);  // preemptions count from here, at the count just chosen
      return;
    }
    if (--cooldown_ > 0) return;
    const double preempted_per_s =
        static_cast<double>(preempted - window_preempted_) * 1e9 / static_cast<double>(now_ns - window_start_ns_);
    int candidate = active_;
    if (active_ > lo_ && preempted_per_s >= kPreemptedPerThreadPerSecond * active_) {
      candidate = active_ - 1;
    } else if (active_ < hi_) {
      candidate = active_ + 1;
    }
    if (candidate == active_) {  // nothing to try: look again next epoch, over the last second or so
      if (now_ns - window_start_ns_ >= kWindowNs) restart_window(now_ns, preempted);
      return;
    }
    current_ = active_;
    candidate_ = candidate;
    candidate_rate_ = current_rate_ = 0;
    wins_ = 0;
    probe_epoch_ = 0;
    active_ = candidate;
  }

  void restart_window(int64_t now_ns, int64_t preempted) {
    window_start_ns_ = now_ns;
    window_preempted_ = preempted;
  }

  int lo_, hi_;
  int active_;
  int64_t epoch_start_ns_ = -1, epoch_steps_ = 0;
  int64_t window_start_ns_ = 0, window_preempted_ = 0;  // where the preemption count starts
  int epoch_calls_ = 0;
  int cooldown_ = kMinCooldown, backoff_ = kMinCooldown;
  int probe_epoch_ = -1;  // -1: not probing; else which of the probe's 4 epochs is running
  int current_ = 0, candidate_ = 0;
  double current_rate_ = 0, candidate_rate_ = 0, last_candidate_rate_ = 0;
  int wins_ = 0;  // of the probe's two pairs, how many the candidate won
};

}  // namespace fastvec::core
