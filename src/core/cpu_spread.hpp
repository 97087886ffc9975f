#pragma once
// CpuSpread: keeps the threads of one pool that step blocks on different
// CPUs, and lends the caller's CPU to a worker the OS has descheduled.
//
// Why: Linux's load balancer counts runnable tasks per CPU, not whose they
// are. On 2 CPUs with one busy process beside a 2-thread sync pool, "caller
// and worker on one CPU, the busy loop alone on the other" is as balanced
// (2 and 1) as "caller alone, worker beside the busy loop", so the balancer
// never separates them, and a wake-up tends to place the woken worker next
// to the thread that woke it. Measured (AMD EPYC, 2 cores, Pong 8 sync,
// num_threads=2, one busy loop): the caller and the worker sat on one CPU in
// 4 samples of 5 and got 0.5 of a core each, the busy loop a whole one, and
// the step ran no faster than num_threads=1 (2.35k steps/s, 1 thread 2.27k).
// Kept apart, the pool's threads get the share the OS gives each thread:
// a CPU to one, half of the other to the other (2.7k); with the lending
// below, 3.16k (1 thread 2.41k, the same run).
// Apart, a sync step still waits for the block that the worker holds while
// the OS runs the busy process in its place, for a scheduler slice of a
// millisecond or more, and meanwhile the caller, its own blocks done, only
// waits. The caller's CPU is about to go idle: the held block can run there.
//
// How, keeping apart: each stepping thread publishes the CPU it runs on
// (sched_getcpu: a read of the rseq area or the vDSO) each time it
// takes a block: the caller in slot 0, worker t in slot t + 1. A worker
// that finds another stepping thread of its pool on its own CPU narrows its
// affinity to the allowed CPUs no such thread is on, which moves it at once,
// then restores its affinity, which does not move it back; the scheduler may
// place it anywhere again later, and the next block checks again. Nothing
// moves while every stepping thread has a CPU of its own (an idle machine's
// usual case), nor when there is no free CPU to go to. The caller never
// moves: it is the user's thread, and its affinity is the user's.
// How, lending: a caller that has waited a while with nothing left to step
// samples the workers' CPU time (watch); when it is about to sleep, a
// worker holding a block whose CPU time grew by less than half the time
// since is not running (descheduled, or asleep in its env), and the one
// that ran least is moved to the caller's CPU (lend_cpu), where it runs
// while the caller sleeps; when its block is done it takes its affinity
// back. A worker that computes keeps pace with its clock, so on an idle
// machine a pool lends only to envs that sleep or wait, which costs them a
// move and nothing else.
//
// Ownership: slot k's cpu is written only by its thread (relaxed: a CPU
// number is a hint, stale by the time it is read), `holding` only by its
// worker, `lent` set by the caller and cleared by the worker, the samples
// only by the caller; a worker's thread id and clock are written when it
// starts, and `alive`, under life_mu_, which the caller holds while it
// reads a worker's clock or moves it (so it never acts on the id of a
// thread that has ended). The masks are set by init().

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

namespace fastvec::core {

class CpuSpread {
 public:
  // Called once, before the workers start: slots for the caller and
  // `workers` workers; `enabled` false (threads pinned by the user, or one
  // CPU) makes every call a no-op.
  void init(int workers, bool enabled) {
    slots_.reset(new Slot[workers + 1]);
    count_ = workers + 1;
    enabled_ = enabled && workers > 0 && sched_getaffinity(0, sizeof(allowed_), &allowed_) == 0 &&
               CPU_COUNT(&allowed_) > 1;
  }

  // Called by worker t when it starts and as it ends.
  void worker_started(int t) {
    if (!enabled_) return;
    Slot& s = slots_[t + 1];
    std::lock_guard<std::mutex> lock(life_mu_);
    s.tid = gettid();
    s.alive = pthread_getcpuclockid(pthread_self(), &s.clock) == 0;
  }
  void worker_ended(int t) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(life_mu_);
    slots_[t + 1].alive = false;
  }

  // Called by the caller thread when it queues blocks: `steps` says whether
  // it will step some of them itself (a caller that only waits shares its CPU
  // with no one's work).
  void caller_at(bool steps) {
    if (enabled_) slots_[0].cpu.store(steps ? sched_getcpu() : -1, std::memory_order_relaxed);
  }

  // Called by worker `t` as it takes a block, with the workers allowed to
  // step (those beyond are parked and their slots stale): publishes its CPU
  // and moves off a CPU that another stepping thread of the pool is on.
  void worker_at(int t, int stepping_workers) {
    if (!enabled_) return;
    const int me = t + 1;
    slots_[me].holding.store(true, std::memory_order_relaxed);
    take_back(slots_[me]);  // lent after its last block ended (the caller saw it holding that block)
    const int cpu = sched_getcpu();
    cpu_set_t to = allowed_;
    bool shared = false;
    for (int k = 0; k <= stepping_workers && k < count_; ++k) {
      if (k == me) continue;
      const int other = slots_[k].cpu.load(std::memory_order_relaxed);
      if (other < 0 || other >= CPU_SETSIZE) continue;
      shared |= other == cpu;
      CPU_CLR(other, &to);
    }
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_CLR(cpu, &to);
    if (!shared || CPU_COUNT(&to) == 0 || sched_setaffinity(0, sizeof(to), &to) != 0) {
      publish(slots_[me], cpu);
      return;
    }
    restore_affinity();
    publish(slots_[me], sched_getcpu());
  }

  // Called by worker `t` when it has finished its block: a worker lent the
  // caller's CPU for that block takes its affinity back at once (before it
  // spins there, waiting for the next step).
  void worker_done(int t) {
    if (!enabled_) return;
    slots_[t + 1].holding.store(false, std::memory_order_relaxed);
    take_back(slots_[t + 1]);
  }

  // Called by the caller thread when it starts waiting with nothing to step:
  // the workers' CPU times, to tell a stalled worker from a running one.
  void watch(int stepping_workers) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(life_mu_);
    watched_ns_ = now_ns();
    for (int k = 1; k <= stepping_workers && k < count_; ++k) {
      Slot& s = slots_[k];
      s.watched_cpu_ns = s.holding.load(std::memory_order_relaxed) ? cpu_ns(s) : -1;
    }
  }

  // Called by the caller thread before it sleeps, after watch() in the same
  // wait: of the workers that hold a block but ran for less than half the
  // time since, moves the one that ran least to the caller's CPU (the one
  // CPU its sleep frees), then watches again.
  void lend_cpu(int stepping_workers) {
    if (!enabled_ || watched_ns_ < 0) return;
    std::lock_guard<std::mutex> lock(life_mu_);
    const int64_t now = now_ns(), window = now - watched_ns_;
    watched_ns_ = now;
    Slot* stalled = nullptr;
    int64_t least = window / 2;
    for (int k = 1; k <= stepping_workers && k < count_; ++k) {
      Slot& s = slots_[k];
      if (!s.holding.load(std::memory_order_relaxed)) {
        s.watched_cpu_ns = -1;  // between blocks: nothing to judge until it holds one
        continue;
      }
      const int64_t ran = cpu_ns(s), before = s.watched_cpu_ns;
      s.watched_cpu_ns = ran;
      if (ran < 0 || before < 0 || ran - before >= least) continue;
      least = ran - before;
      stalled = &s;
    }
    const int cpu = sched_getcpu();
    if (stalled == nullptr || window < kMinWindowNs || cpu < 0 || cpu >= CPU_SETSIZE) return;
    cpu_set_t here;
    CPU_ZERO(&here);
    CPU_SET(cpu, &here);
    if (sched_setaffinity(stalled->tid, sizeof(here), &here) == 0) stalled->lent.store(true, std::memory_order_relaxed);
  }

  // Called by the caller thread when its wait is over.
  void unwatch() { watched_ns_ = -1; }

 private:
  static constexpr int64_t kMinWindowNs = 10'000;  // a shorter look tells a stall from a cache miss poorly

  struct alignas(64) Slot {
    std::atomic<int> cpu{-1};
    std::atomic<bool> holding{false};
    std::atomic<bool> lent{false};  // set by the caller's lend_cpu, cleared by the worker as it restores its affinity
    pid_t tid = 0;            // workers only, set at start (under life_mu_)
    clockid_t clock{};        // the worker's CPU-time clock
    bool alive = false;       // under life_mu_
    int64_t watched_cpu_ns = -1;  // the caller's sample
  };

  // Called by a worker for its own slot.
  static void publish(Slot& s, int cpu) {
    if (s.cpu.load(std::memory_order_relaxed) != cpu) s.cpu.store(cpu, std::memory_order_relaxed);
  }

  // Called by a worker for its own slot: undoes a lend.
  void take_back(Slot& s) {
    if (s.lent.load(std::memory_order_relaxed) && s.lent.exchange(false, std::memory_order_relaxed))
      restore_affinity();
  }

  // Called by a worker: its affinity back to what it started with, or, if
  // those CPUs have all left the process's cpuset since, to every CPU (the
  // kernel keeps the cpuset's part).
  void restore_affinity() {
    if (sched_setaffinity(0, sizeof(allowed_), &allowed_) == 0) return;
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
    sched_setaffinity(0, sizeof(all), &all);
  }

  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Called with life_mu_ held.
  static int64_t cpu_ns(const Slot& s) {
    timespec t{};
    if (!s.alive || clock_gettime(s.clock, &t) != 0) return -1;
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  }

  std::unique_ptr<Slot[]> slots_;
  int count_ = 0;
  cpu_set_t allowed_{};  // the creating thread's affinity, which the workers inherit
  bool enabled_ = false;
  std::mutex life_mu_;
  int64_t watched_ns_ = -1;  // the caller's: when watch() or lend_cpu() last sampled, -1 outside a wait
};

}  // namespace fastvec::core
