#pragma once
// Forks: a pool belongs to the process that made it (fork copies its memory, not its threads).

#include <pthread.h>

#include <atomic>
#include <stdexcept>

namespace fastvec::bindings {

// Counts the forks of this process's line: each fork() bumps it in the child (count_forks, called when the
// module loads), so a pool made before a fork sees another generation in the child. Asked on every call,
// where getpid() was a system call that showed in small-batch stepping (docs/performance.md).
inline std::atomic<unsigned> fork_generation{0};

inline void count_forks() {
  if (pthread_atfork(nullptr, nullptr, [] { fork_generation.fetch_add(1, std::memory_order_relaxed); }) != 0)
    throw std::runtime_error("pthread_atfork failed");
}

}  // namespace fastvec::bindings
