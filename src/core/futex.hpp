#pragma once
// A wait on an atomic int with a timeout (Linux futex), for the one place the
// pool's caller blocks: it wakes every few milliseconds to let Python check
// for signals (Ctrl-C). std::atomic::wait has no timeout, and mixing it with
// a raw futex would lose wake-ups, so the waker side is here too.

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <ctime>

namespace fastvec::core {

static_assert(sizeof(std::atomic<int>) == sizeof(int), "futex needs a plain int");

// Sleeps while *word == expected, at most timeout_ms; returns early on a
// wake-up, a signal or a change of value (callers recheck).
inline void futex_wait(std::atomic<int>& word, int expected, int timeout_ms) {
  timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<int*>(&word), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

inline void futex_wake_all(std::atomic<int>& word) {
  syscall(SYS_futex, reinterpret_cast<int*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace fastvec::core
