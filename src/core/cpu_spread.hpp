#pragma once
// CpuSpread: keeps the threads of one pool that step blocks on different
// CPUs, and lends the caller's CPU to a worker the OS has descheduled.
//
// Why: Linux's load balancer counts runnable tasks per CPU, not whose they
// are. On 2 CPUs with one busy process beside a 2-thread sync pool, "caller
// and worker on one CPU, the busy loop alone on the other" is as balanced
// (2 and 1) as "caller alone, worker beside the busy loop", so the balancer
// never separates them, and a wake-up tends to place the woken worker next
// to the thread that woke it. Measured on 2 cores beside one busy loop (see
// docs/performance.md): the caller and the worker mostly sat on one CPU and
// shared it, the busy loop had the other to itself, and a 2-thread sync pool
// stepped no faster than one thread. Kept apart, the pool's threads get the
// share the OS gives each thread (a CPU to one, half of the other to the
// other), and with the lending below they step faster still.
// Apart, a sync step still waits for the block that the worker holds while
// the OS runs the busy process in its place, for a scheduler slice of a
// millisecond or more, and meanwhile the caller, its own blocks done, only
// waits. The caller's CPU is about to go idle: the held block can run there.
//
// How, keeping apart: each stepping thread publishes the CPU it runs on
// (sched_getcpu: a read of the rseq area or the vDSO) each time it
// takes a block: the caller in slot 0, worker t in slot t + 1. A worker
// that finds another stepping thread of its pool on its own CPU narrows its
// affinity to the CPUs of its current affinity that no such thread is on,
// which moves it at once, then restores that affinity, which does not move
// it back; the scheduler may place it anywhere again later, and the next
// block checks again. Nothing moves while every stepping thread has a CPU of
// its own (an idle machine's usual case), nor when there is no free CPU to
// go to. The caller never moves: it is the user's thread, and its affinity
// is the user's.
// A thread never leaves the affinity it has when it is moved: the user may
// narrow the pool's threads at any time (taskset -a -p), and a narrowed
// pool stays narrowed. Each move goes to a subset of the thread's affinity
// of the moment, and is undone back to that affinity only while the
// thread's affinity is still the one the move set (a user's change in
// between wins).
// How, lending: a caller that has waited a while with nothing left to step
// samples the workers' CPU time (watch); when it is about to sleep, a
// worker holding a block whose CPU time grew by less than half the time
// since is not running (descheduled, or asleep in its env), and the one
// that ran least is moved to the caller's CPU (lend_cpu) if its affinity
// has that CPU, where it runs while the caller sleeps; when its block is
// done it takes its affinity back. A worker that computes keeps pace with its clock, so on an idle
// machine a pool lends only to envs that sleep or wait, which costs them a
// move and nothing else.
//
// Ownership: slot k's cpu is written only by its thread (relaxed: a CPU
// number is a hint, stale by the time it is read), `holding` only by its
// worker, `lent` set by the caller and cleared by the worker, the samples
// only by the caller; a worker's thread id and clock are written when it
// starts, and `alive`, under life_mu_, which the caller holds while it
// reads a worker's clock or moves it (so it never acts on the id of a
// thread that has ended). A lent worker's affinity from before the lend
// (`before_lend`) is written by the caller before it sets `lent` (release)
// and read by the worker after it clears `lent` (acquire); so are `lender`
// and `lender_before`.

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
    cpu_set_t allowed;
    enabled_ = enabled && workers > 0 && sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) > 1;
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
    const int cpu = sched_getcpu();
    bool shared = false;
    for (int k = 0; k <= stepping_workers && k < count_ && !shared; ++k)
      shared = k != me && slots_[k].cpu.load(std::memory_order_relaxed) == cpu;
    cpu_set_t own, to;
    if (!shared || sched_getaffinity(0, sizeof(own), &own) != 0) {
      publish(slots_[me], cpu);
      return;
    }
    to = own;  // the CPUs of its affinity that no other stepping thread of the pool is on
    for (int k = 0; k <= stepping_workers && k < count_; ++k) {
      const int other = k == me ? cpu : slots_[k].cpu.load(std::memory_order_relaxed);
      if (other >= 0 && other < CPU_SETSIZE) CPU_CLR(other, &to);
    }
    if (CPU_COUNT(&to) == 0 || sched_setaffinity(0, sizeof(to), &to) != 0) {
      publish(slots_[me], cpu);
      return;
    }
    undo_move(0, to, own);
    publish(slots_[me], sched_getcpu());
  }

  // Called by worker `t` when it has finished its block: a worker lent the
  // caller's CPU for that block takes its affinity back at once (before it
  // spins there, waiting for the next step).
  void worker_done(int t) {
    if (!enabled_) return;
    slots_[t + 1].holding.store(false, std::memory_order_seq_cst);  // before take_back's read of `lent` (lend_cpu)
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
    // Lent only a CPU its affinity has (the user may have narrowed it), and once: a worker still lent keeps the
    // affinity it had before.
    if (stalled->lent.load(std::memory_order_relaxed)) return;
    if (sched_getaffinity(stalled->tid, sizeof(stalled->before_lend), &stalled->before_lend) != 0 ||
        !CPU_ISSET(cpu, &stalled->before_lend) || CPU_COUNT(&stalled->before_lend) == 1 ||
        sched_getaffinity(0, sizeof(stalled->lender_before), &stalled->lender_before) != 0)
      return;
    stalled->lender = gettid();
    cpu_set_t here;
    CPU_ZERO(&here);
    CPU_SET(cpu, &here);
    if (sched_setaffinity(stalled->tid, sizeof(here), &here) != 0) return;
    stalled->lent.store(true, std::memory_order_seq_cst);
    // The worker may have ended its block since it was sampled; then it may not have seen `lent` (it clears
    // `holding`, then reads `lent`: of the two threads, one sees the other's store), and the lend is undone here,
    // so that a lend never outlives the block it was made for.
    if (!stalled->holding.load(std::memory_order_seq_cst) && stalled->lent.exchange(false, std::memory_order_acquire))
      undo_move(stalled->tid, here, stalled->before_lend);
  }

  // Called by the caller thread when its wait is over.
  void unwatch() { watched_ns_ = -1; }

 private:
  static constexpr int64_t kMinWindowNs = 10'000;  // a shorter look tells a stall from a cache miss poorly

  struct alignas(64) Slot {
    std::atomic<int> cpu{-1};
    std::atomic<bool> holding{false};
    std::atomic<bool> lent{false};  // set by the caller's lend_cpu, cleared by whichever restores the affinity
    pid_t tid = 0;            // workers only, set at start (under life_mu_)
    clockid_t clock{};        // the worker's CPU-time clock
    bool alive = false;       // under life_mu_
    int64_t watched_cpu_ns = -1;  // the caller's sample
    cpu_set_t before_lend{};  // the worker's affinity when the caller lent it its CPU (see `lent`)
    pid_t lender = 0;            // the caller that lent it, and that caller's affinity then
    cpu_set_t lender_before{};
  };

  // Called by a worker for its own slot.
  static void publish(Slot& s, int cpu) {
    if (s.cpu.load(std::memory_order_relaxed) != cpu) s.cpu.store(cpu, std::memory_order_relaxed);
  }

  // Called by a worker for its own slot: undoes a lend.
  static void take_back(Slot& s) {
    if (!s.lent.load(std::memory_order_seq_cst) || !s.lent.exchange(false, std::memory_order_acquire)) return;
    const int cpu = sched_getcpu();
    cpu_set_t here;
    CPU_ZERO(&here);
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &here);
    // A user who narrowed the pool's threads while this one was lent (taskset -a: the caller too) may have given
    // it the very CPU it was lent, which undo_move cannot tell from the lend: what the caller's affinity lost
    // since, the worker's loses too.
    cpu_set_t back = s.before_lend, lender_now;
    if (sched_getaffinity(s.lender, sizeof(lender_now), &lender_now) == 0 && !CPU_EQUAL(&lender_now, &s.lender_before))
      CPU_AND(&back, &back, &lender_now);
    if (CPU_COUNT(&back) > 0) undo_move(0, here, back);
  }

  // Thread `tid`'s (0: the calling thread's) affinity back from `moved` (what a move set) to `before`, unless it
  // is no longer `moved` (the user set another since: theirs stays; a user's set equal to `moved`, made while
  // moved, cannot be told from the move). If `before` cannot be set (its CPUs left the process's cpuset since),
  // the thread keeps the narrower affinity it has.
  static void undo_move(pid_t tid, const cpu_set_t& moved, const cpu_set_t& before) {
    cpu_set_t now;
    if (sched_getaffinity(tid, sizeof(now), &now) != 0 || !CPU_EQUAL(&now, &moved)) return;
    sched_setaffinity(tid, sizeof(before), &before);
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
  bool enabled_ = false;
  std::mutex life_mu_;
  int64_t watched_ns_ = -1;  // the caller's: when watch() or lend_cpu() last sampled, -1 outside a wait
};

}  // namespace fastvec::core
