#pragma once
// The queue of blocks waiting to be stepped. Producers: the caller thread
// (send). Consumers: the worker threads, and the caller thread itself while it
// waits in recv (it steals work rather than sleep). Thread-safe; owns nothing
// but block indices. Workers are numbered 0..; only the first allowed() take
// tasks, the others sleep apart until allowed again (ThreadTuner's choice).

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>

namespace fastvec::core {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class TaskQueue {
 public:
  // With workers_from_back, workers take the newest task and the caller
  // (try_pop) the oldest. In sync mode blocks are queued in order every
  // step, so each block tends to run on the same thread step after step and
  // its env state stays in that core's cache.
  explicit TaskQueue(bool workers_from_back = false) : workers_from_back_(workers_from_back) {}

  // Called by the caller thread: workers 0 .. k-1 take tasks from now on;
  // the others finish the task they hold and park.
  void set_allowed(int k) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (allowed_.load(std::memory_order_relaxed) == k) return;
      allowed_.store(k, std::memory_order_release);
    }
    cv_.notify_all();
    parked_cv_.notify_all();
  }

  // How many workers take tasks (set_allowed's count); any thread.
  int allowed() const { return allowed_.load(std::memory_order_relaxed); }

  // Called by the caller thread. Wakes at most `wake` sleeping workers
  // (a caller that will run one task itself asks for one fewer); parked
  // workers sleep on their own condition variable and are never woken here.
  template <class It>
  void push(It first, It last, int wake) {
    int n = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (It it = first; it != last; ++it, ++n) tasks_.push_back(*it);
      size_.store(static_cast<int>(tasks_.size()), std::memory_order_release);
    }
    const int sleeping = sleepers_.load(std::memory_order_acquire);
    for (int i = 0; i < std::min({n, wake, sleeping}); ++i) cv_.notify_one();
  }

  // Called by any thread; never blocks. Returns -1 when empty or closed.
  int try_pop() {
    if (size_.load(std::memory_order_acquire) == 0) return -1;
    std::lock_guard<std::mutex> lock(mu_);
    return pop_locked(false);
  }

  // Called by worker `id`. Spins briefly (a step loop refills the queue
  // within microseconds), then sleeps. Returns -1 once closed.
  int pop(int id) {
    for (int spin = 0; spin < kSpins && id < allowed_.load(std::memory_order_acquire); ++spin) {
      if (closed_.load(std::memory_order_acquire)) return -1;
      if (size_.load(std::memory_order_acquire) > 0) {
        std::lock_guard<std::mutex> lock(mu_);
        const int t = id < allowed_.load(std::memory_order_relaxed) ? pop_locked(workers_from_back_) : -1;
        if (t >= 0) return t;
      }
      cpu_relax();
    }
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (closed_.load(std::memory_order_relaxed)) return -1;
      if (id >= allowed_.load(std::memory_order_relaxed)) {
        parked_cv_.wait(lock);
      } else if (tasks_.empty()) {
        sleepers_.fetch_add(1, std::memory_order_acq_rel);
        cv_.wait(lock);
        sleepers_.fetch_sub(1, std::memory_order_acq_rel);
      } else {
        return pop_locked(workers_from_back_);
      }
    }
  }

  // Drops queued tasks and wakes every worker; pop() returns -1 from now on.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_.store(true, std::memory_order_release);
      tasks_.clear();
      size_.store(0, std::memory_order_release);
    }
    cv_.notify_all();
    parked_cv_.notify_all();
  }

 private:
  static constexpr int kSpins = 4000;

  int pop_locked(bool from_back) {
    if (closed_.load(std::memory_order_relaxed) || tasks_.empty()) return -1;
    int t;
    if (from_back) {
      t = tasks_.back();
      tasks_.pop_back();
    } else {
      t = tasks_.front();
      tasks_.pop_front();
    }
    size_.store(static_cast<int>(tasks_.size()), std::memory_order_release);
    return t;
  }

  // What spinning workers read (size_, closed_, allowed_) shares a cache line with what the caller writes
  // per step anyway (the mutex, the deque's ends), and with nothing of the pool around the queue.
  alignas(64) std::mutex mu_;
  std::condition_variable cv_;       // workers allowed to take tasks sleep here
  std::deque<int> tasks_;            // guarded by mu_
  std::atomic<int> size_{0};         // mirror of tasks_.size() for lock-free peeks
  std::atomic<int> sleepers_{0};     // workers blocked in cv_.wait
  std::atomic<bool> closed_{false};
  std::atomic<int> allowed_{1 << 30};  // written under mu_; read without it only to stop spinning
  const bool workers_from_back_;
  alignas(64) std::condition_variable parked_cv_;  // the workers not allowed to take tasks sleep here
};

}  // namespace fastvec::core
