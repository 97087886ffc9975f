#pragma once
// How much more memory this process can get, read from the limits Linux
// puts on it: its address-space limit (RLIMIT_AS, `ulimit -v`), its cgroup's
// memory limit (v2 memory.max, v1 memory.limit_in_bytes) and the system's
// available memory. A pool checks its estimate against them before it
// allocates, so that a pool far too large fails at once, naming the figures,
// instead of after minutes of allocation. Plain functions; any thread.

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <string>

namespace fastvec::core {

// Room left under each kind of limit, in bytes; `unlimited` when none applies.
struct MemoryRoom {
  static constexpr double kUnlimited = std::numeric_limits<double>::infinity();
  double address = kUnlimited;   // RLIMIT_AS minus the address space in use
  double resident = kUnlimited;  // the tighter of the cgroup's limit minus its usage and MemAvailable
  std::string resident_limit;    // which limit `resident` comes from, for messages
};

namespace detail {

// The first number in `path` (a cgroup or /proc file), or -1 if there is none ("max").
inline double read_number(const char* path) {
  std::ifstream in(path);
  double v = -1;
  if (!(in >> v)) return -1;
  return v;
}

// "MemAvailable:  123456 kB" from /proc/meminfo, in bytes; -1 if absent.
inline double mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024.0;
  return -1;
}

}  // namespace detail

inline MemoryRoom memory_room() {
  MemoryRoom room;
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const double pages = detail::read_number("/proc/self/statm");  // first field: address space, in pages
    const double used = pages > 0 ? pages * static_cast<double>(sysconf(_SC_PAGESIZE)) : 0.0;
    room.address = static_cast<double>(as.rlim_cur) - used;
  }
  const double available = detail::mem_available();
  if (available >= 0) {
    room.resident = available;
    room.resident_limit = "the system's available memory (MemAvailable)";
  }
  struct Cgroup {
    const char* limit;
    const char* usage;
  };
  for (const Cgroup& cg : {Cgroup{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
                           Cgroup{"/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                  "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const double limit = detail::read_number(cg.limit);
    const double usage = detail::read_number(cg.usage);
    // v1 reports "no limit" as a huge number; anything past 2**60 is none.
    if (limit <= 0 || usage < 0 || limit > 1e18) continue;
    if (limit - usage < room.resident) {
      room.resident = limit - usage;
      room.resident_limit = std::string("the cgroup memory limit (") + cg.limit + ")";
    }
    break;
  }
  return room;
}

}  // namespace fastvec::core
