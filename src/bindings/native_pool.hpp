#pragma once
// fastvec._core.Pool: the core pool as Python sees it. Validation of user input happens here, before the
// pool is touched; waits release the GIL.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actions.hpp"
#include "core/pool_base.hpp"
#include "fork.hpp"
#include "info_layout.hpp"
#include "result_maker.hpp"
#include "xla_port.hpp"

namespace fastvec::bindings {

namespace py = pybind11;

// The core pool plus the conversion of actions and results. Owned by one Python object; its methods run
// with the GIL held except where they wait.
class NativePool {
 public:
  // info_layout: what a batch's info holds besides the env's values.
  NativePool(const std::string& env, int num_envs, int batch_size, int num_threads, int block_size,
             int max_episode_steps, const std::string& autoreset_mode, uint64_t seed,
             const std::map<std::string, double>& options, const std::map<std::string, std::string>& string_options,
             bool adapt_threads, int initial_threads, std::unique_ptr<InfoLayout> info_layout,
             int thread_affinity_offset, const std::map<std::string, std::array<double, 2>>& range_options);
  ~NativePool();
  NativePool(const NativePool&) = delete;
  NativePool& operator=(const NativePool&) = delete;

  py::dict spec() const;
  int num_envs() const { return pool_->num_envs(); }
  int batch_size() const { return pool_->batch_size(); }
  int num_threads() const { return pool_->num_threads(); }
  int active_threads() const { return pool_->active_threads(); }
  int block_size() const { return pool_->block_size(); }
  bool closed() const { return pool_->closed(); }
  // Envs sent (stepped or reset) and not received, kept rows included.
  int in_flight();

  // Sync step of every env, results in env order (fastvec.VectorEnv checks the pool is sync).
  py::object step(const py::handle& actions);
  void send(const py::handle& actions, const py::handle& env_id);
  // timeout: seconds (None: no limit) after which a wait still short of
  // its rows raises TimeoutError, leaving them in flight. The caller may be
  // stepping envs itself while it waits: the time-out is checked between.
  py::object recv(const std::optional<double>& timeout);
  // The envs still in flight, fewer than batch_size: an async pool's last, partial batch, or a sync pool's
  // partial send (rows in env order).
  py::object recv_rest(const std::optional<double>& timeout);
  // Queues a reset of every env (env_id None) or of those in env_id; seeds:
  // one per env reset, or none.
  void send_reset(const py::handle& env_id, const std::vector<std::optional<uint64_t>>& seeds);
  // A partial reset of a sync pool, nothing in flight, waited for: the listed envs' rows in env order or
  // (all_rows) every env's, the others reporting their current observation (then each must have been reset).
  py::object reset_envs(const py::handle& env_id, const std::vector<std::optional<uint64_t>>& seeds, bool all_rows);
  // The current frames (frames=True: (n, H, W, 3) uint8, spec()["render_shape"]; or, for an env that has a
  // render state, (n, spec()["render_state_size"]) int64) or observations of the envs in env_id (None: every
  // env), none of them in flight.
  py::array peek(const py::handle& env_id, bool frames);
  void drain();
  // In a forked child, close() only forgets the pool: its threads live in
  // the parent, and a mutex may have been copied locked. Allowed inside
  // another call of the same thread (a signal handler's): the waiting call
  // then raises "the pool is closed".
  void close();
  // The serial and call count of this pool's XlaPort (made on the first call): the handle of fastvec's xla().
  std::pair<uint32_t, uint32_t> xla_handle();

 private:
  class Deadline;

  // A pool belongs to the process that made it: fork copies its memory but
  // not its threads, so a child waiting on it would wait forever.
  bool foreign() const { return fork_generation.load(std::memory_order_relaxed) != generation_; }
  void check_process() const;
  void check_open() const;
  std::vector<int32_t> ids(const py::handle& env_id) const;  // env_id's, or every env's (None)
  // env_id's ids (every env's if None), with one seed each in `seeds` or none.
  std::vector<int32_t> reset_ids(const py::handle& env_id, const std::vector<std::optional<uint64_t>>& seeds) const;
  void queue_reset(const std::vector<int32_t>& ids, const std::vector<std::optional<uint64_t>>& seeds,
                   bool observe_others);

  const pid_t pid_ = getpid();  // for the message of check_process
  const unsigned generation_ = fork_generation.load(std::memory_order_relaxed);  // see foreign()
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // see Deadline
  std::string timeout_text_;
  ResultMaker results_;
  std::unique_ptr<core::PoolBase> pool_;
  ActionSpace action_space_;
  std::vector<int32_t> all_ids_;
  std::shared_ptr<XlaPort> xla_;  // made by xla_handle(); detached before the pool closes or goes
};

}  // namespace fastvec::bindings
