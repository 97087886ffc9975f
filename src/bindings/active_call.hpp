#pragma once
// The re-entry guard of the Python-facing pool's calls.

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace fastvec::bindings {

// Marks a call on `pool` for its duration; refuses a call re-entered on the same thread. A Python signal
// handler runs inside a pool's blocking wait (its interrupt check), on the waiting thread: a call from it on
// the same pool would wait for the pool's lock, which its own thread holds, forever.
class ActiveCall {
 public:
  explicit ActiveCall(const void* pool) : pool_(pool) {
    std::vector<const void*>& active = pools();
    if (std::find(active.begin(), active.end(), pool) != active.end())
      throw std::runtime_error(
          "this pool was called from a signal handler (or re-entrantly) while the same thread waits in one of its "
          "calls (recv, step, reset); only close() may be called there. Raise an exception in the handler and "
          "call the pool after it is caught, or close() it");
    active.push_back(pool);
  }
  ~ActiveCall() {
    std::vector<const void*>& active = pools();
    active.erase(std::find(active.begin(), active.end(), pool_));
  }
  ActiveCall(const ActiveCall&) = delete;
  ActiveCall& operator=(const ActiveCall&) = delete;

 private:
  // The pools this thread is inside a call of. Owned by its thread.
  static std::vector<const void*>& pools() {
    static thread_local std::vector<const void*> active;
    return active;
  }

  const void* pool_;
};

}  // namespace fastvec::bindings
