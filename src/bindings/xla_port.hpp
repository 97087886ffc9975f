#pragma once
// What XLA's custom calls (xla_ffi.cpp: fastvec's pools stepped from inside jitted JAX code) reach of a pool:
// an XlaPort, found by its serial number in a process-wide registry, never through a pointer carried in the
// computation. A handle names a port and the number of calls made through it, so that a handle of a closed
// pool, of another pool, or one already used is refused with a message instead of stepping the wrong thing.
// No pybind11 and no XLA header here: the port is the Python-facing pool's (native_pool.hpp), the handlers are
// XLA's, and both include this.

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "core/pool_base.hpp"

namespace fastvec::bindings {

// The 8 bytes of a handle (EnvPool's and ale-py's are 8 uint8 too): the port's serial, then the number of
// calls made through it when the handle was made (little-endian uint32 each).
struct XlaHandle {
  uint32_t serial = 0, calls = 0;

  static XlaHandle read(const void* bytes) {
    XlaHandle h;
    std::memcpy(&h.serial, bytes, 4);
    std::memcpy(&h.calls, static_cast<const char*>(bytes) + 4, 4);
    return h;
  }
  void write(void* bytes) const {
    std::memcpy(bytes, &serial, 4);
    std::memcpy(static_cast<char*>(bytes) + 4, &calls, 4);
  }
};

// One pool as XLA's handlers see it. Made by the Python-facing pool (its owner) on its first xla(), and
// shared with the registry; the owner detaches it before it closes or frees the pool, so a handler never
// reaches a pool that is gone. mu_ is held for each handler's whole call (and by detach), so calls through
// one port are serialised; it is taken before the pool's own lock, never after it.
class XlaPort {
 public:
  explicit XlaPort(core::PoolBase* pool) : pool_(pool), serial_(next_serial()) {}
  ~XlaPort() {
    std::lock_guard<std::mutex> lock(registry_mu());
    registry().erase(serial_);
  }
  XlaPort(const XlaPort&) = delete;
  XlaPort& operator=(const XlaPort&) = delete;

  // A registered port of `pool`. Called by the owner, with the GIL held.
  static std::shared_ptr<XlaPort> make(core::PoolBase* pool) {
    auto port = std::make_shared<XlaPort>(pool);
    std::lock_guard<std::mutex> lock(registry_mu());
    registry()[port->serial_] = port;
    return port;
  }

  // The port with this serial, or null (its pool closed, or never made in this process).
  static std::shared_ptr<XlaPort> find(uint32_t serial) {
    std::lock_guard<std::mutex> lock(registry_mu());
    auto it = registry().find(serial);
    return it == registry().end() ? nullptr : it->second.lock();
  }

  // The handle of the port's current state: the one the next call must bring. Called by the owner.
  XlaHandle handle() {
    std::lock_guard<std::mutex> lock(mu_);
    return {serial_, calls_};
  }

  // Forgets the pool: the calls after this one are refused as made on a closed pool. Called by the owner
  // after the pool is closed (which wakes a handler waiting in it) and before the pool is freed.
  void detach() {
    std::lock_guard<std::mutex> lock(mu_);
    pool_ = nullptr;
  }

  // Runs op(pool) for a handler that brought `handle`, if the handle is this port's current one, and writes
  // the next handle into `out_handle`; throws (nothing run, the handle still current) otherwise. op runs on
  // XLA's thread with mu_ held; it must not need the GIL.
  template <class Op>
  void call(const XlaHandle& handle, void* out_handle, Op&& op) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pool_ == nullptr || pool_->closed()) throw std::runtime_error("the pool is closed");
    if (handle.serial != serial_)
      throw std::invalid_argument("this handle belongs to another pool: use the handle of this pool's xla()");
    if (handle.calls != calls_)
      throw std::invalid_argument(
          "stale handle: it was already used (made after " + std::to_string(handle.calls) + " call(s); this pool " +
          "has had " + std::to_string(calls_) + "). Pass each call the handle the previous call returned, as "
          "lax.scan's carry does; env.xla() gives the current one");
    const InCall in_call;
    op(*pool_);
    ++calls_;
    XlaHandle{serial_, calls_}.write(out_handle);
  }

  // Whether this thread is inside a handler's call: the pool's waits then must not ask for the GIL (the
  // thread is XLA's; the Python thread that dispatched the computation may hold it).
  static bool in_call() { return depth() > 0; }

 private:
  struct InCall {
    InCall() { ++depth(); }
    ~InCall() { --depth(); }
  };
  static int& depth() {
    static thread_local int d = 0;
    return d;
  }
  static uint32_t next_serial() {
    static std::atomic<uint32_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }
  static std::mutex& registry_mu() {
    static std::mutex mu;
    return mu;
  }
  static std::unordered_map<uint32_t, std::weak_ptr<XlaPort>>& registry() {
    static auto* ports = new std::unordered_map<uint32_t, std::weak_ptr<XlaPort>>();  // (outlives every port)
    return *ports;
  }

  std::mutex mu_;
  core::PoolBase* pool_;  // guarded by mu_; null once detached
  const uint32_t serial_;
  uint32_t calls_ = 0;  // guarded by mu_
};

}  // namespace fastvec::bindings
