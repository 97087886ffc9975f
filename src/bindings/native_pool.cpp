#include "native_pool.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "active_call.hpp"
#include "env_registry.hpp"
#include "gil.hpp"

namespace fastvec::bindings {
namespace {

using core::AutoresetMode;
using core::Batch;

AutoresetMode parse_mode(const std::string& mode) {
  if (mode == "next_step") return AutoresetMode::kNextStep;
  if (mode == "same_step") return AutoresetMode::kSameStep;
  if (mode == "disabled") return AutoresetMode::kDisabled;
  throw py::value_error("autoreset_mode must be 'next_step', 'same_step' or 'disabled', got '" + mode + "'");
}

}  // namespace

// The deadline of the recv in progress, for its interrupt check; owned by
// the calling thread (calls are serialised by ActiveCall and the pool's lock).
class NativePool::Deadline {
 public:
  Deadline(NativePool* pool, const std::optional<double>& timeout) : pool_(pool) {
    if (!timeout) return;
    if (!std::isfinite(*timeout) || *timeout < 0)
      throw py::value_error("timeout must be None or a finite number of seconds >= 0, got " +
                            py::repr(py::float_(*timeout)).cast<std::string>());
    pool_->deadline_ = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(std::min(*timeout, 1e9)));
    pool_->timeout_text_ = py::repr(py::float_(*timeout)).cast<std::string>();
  }
  ~Deadline() { pool_->deadline_.reset(); }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

 private:
  NativePool* pool_;
};

NativePool::NativePool(const std::string& env, int num_envs, int batch_size, int num_threads, int block_size,
                       int max_episode_steps, const std::string& autoreset_mode, uint64_t seed,
                       const std::map<std::string, double>& options,
                       const std::map<std::string, std::string>& string_options, bool adapt_threads,
                       int initial_threads, std::unique_ptr<InfoLayout> info_layout, int thread_affinity_offset,
                       const std::map<std::string, std::array<double, 2>>& range_options)
    : results_(std::move(info_layout)) {
  auto it = native_envs().find(env);
  if (it == native_envs().end()) throw py::value_error("unknown native env '" + env + "'");
  core::PoolConfig cfg;
  cfg.num_envs = num_envs;
  cfg.batch_size = batch_size;
  cfg.num_threads = num_threads;
  cfg.block_size = block_size;
  cfg.max_episode_steps = max_episode_steps;
  cfg.autoreset_mode = parse_mode(autoreset_mode);
  cfg.seed = seed;
  cfg.adapt_threads = adapt_threads;
  cfg.initial_threads = initial_threads;
  cfg.elapsed_info = results_.elapsed_step();
  cfg.thread_affinity_offset = thread_affinity_offset;
  const core::Options opts(it->second.options, options, string_options,
                           range_options);  // checks names, kinds, ranges
  pool_ = without_gil([&] { return it->second.make(cfg, opts); });
  // Blocking waits (GIL released) look up every few ms: Ctrl-C in the
  // main thread raises KeyboardInterrupt there; what is in flight stays
  // in flight (reset() or close() go on from there). Python's signal
  // handlers run here, on the waiting thread (see ActiveCall).
  pool_->set_interrupt_check([this] {
    // The interpreter is finalizing while this thread waits in a pool call: this is not the finalizing
    // thread (atexit handlers, which could call a pool, run before finalization is flagged), so it is a
    // daemon thread that CPython would end. Park before asking for the GIL: no forced unwind at all.
    if (interpreter_finalizing()) park_forever();
    if (XlaPort::in_call()) return;  // XLA's thread, in a jitted step: no Python here (close() still wakes it)
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    // A recv(timeout=...) past its deadline leaves as an interrupt does: nothing taken, all still in flight.
    if (deadline_ && std::chrono::steady_clock::now() >= *deadline_) {
      PyErr_SetString(PyExc_TimeoutError, ("recv(timeout=" + timeout_text_ +
                                           "): the envs in flight did not finish in time; they are still in "
                                           "flight: recv() again to take their results, or reset() or close()")
                                              .c_str());
      throw py::error_already_set();
    }
  });
  results_.prepare(*pool_);
  const core::Spec& s = pool_->spec();
  action_space_.discrete = pool_->action_is_discrete();
  action_space_.num_actions = s.num_actions;
  action_space_.shape = s.action_shape;
  for (int64_t d : s.action_shape) action_space_.elements *= d;
  action_space_.doubles = std::string(pool_->action_dtype()) == "float64";
  all_ids_.resize(pool_->num_envs());
  for (int i = 0; i < pool_->num_envs(); ++i) all_ids_[i] = i;
}

NativePool::~NativePool() {
  if (foreign()) {
    (void)pool_.release();  // see close(): the parent's pool, not ours to tear down
  } else if (pool_) {
    without_gil([&] {
      if (xla_) {  // a jitted call may be waiting in the pool: closing wakes it, detaching waits for it to leave
        pool_->close();
        xla_->detach();
      }
      pool_.reset();
    });
  }
}

py::dict NativePool::spec() const {
  const core::Spec& s = pool_->spec();
  py::dict d;
  d["obs_shape"] = s.obs_shape;
  d["obs_low"] = s.obs_low;
  d["obs_high"] = s.obs_high;
  d["obs_dtype"] = pool_->obs_dtype();
  py::list obs_fields;
  for (const core::ObsField& f : s.obs_fields) obs_fields.append(py::make_tuple(f.name, py::tuple(py::cast(f.shape))));
  d["obs_fields"] = obs_fields;
  d["obs_discrete"] = s.obs_discrete;
  d["obs_tuple"] = s.obs_tuple;
  d["num_actions"] = s.num_actions;
  d["action_shape"] = s.action_shape;
  d["action_low"] = s.action_low;
  d["action_high"] = s.action_high;
  py::list info;
  for (const core::InfoField& f : s.info) {
    py::dict field;
    field["name"] = f.name;
    field["dtype"] = core::info_dtype(f.type);
    field["size"] = f.size;
    field["at_reset"] = f.at_reset;
    info.append(field);
  }
  d["info"] = info;
  d["info_masks"] = s.info_masks;
  d["action_dtype"] = pool_->action_dtype();
  d["reward_dtype"] = pool_->reward_dtype();
  d["render_shape"] = s.render_shape;
  d["render_state_size"] = s.render_state_size;
  py::list agents;
  for (const core::AgentSpec& a : s.agents) {
    py::dict agent;
    agent["name"] = a.name;
    agent["obs_size"] = a.obs_size;
    agent["action_size"] = a.action_size;
    agent["num_actions"] = a.num_actions;
    agents.append(agent);
  }
  d["agents"] = agents;
  return d;
}

py::object NativePool::step(const py::handle& actions) {
  const ActiveCall call(this);
  check_open();
  const Actions a = convert_actions(actions, pool_->num_envs(), action_space_);
  std::shared_ptr<Batch> batch = without_gil([&] {
    pool_->send_step_all(a.data);
    return pool_->recv();
  });
  return results_.make(std::move(batch), pool_->batch_size());
}

void NativePool::send(const py::handle& actions, const py::handle& env_id) {
  const ActiveCall call(this);
  check_open();
  std::vector<int32_t> ids = this->ids(env_id);
  const Actions a = convert_actions(actions, static_cast<int64_t>(ids.size()), action_space_);
  without_gil([&] { pool_->send_step(a.data, ids.data(), static_cast<int>(ids.size())); });
}

py::object NativePool::recv(const std::optional<double>& timeout) {
  const ActiveCall call(this);
  check_open();
  const Deadline d(this, timeout);
  std::shared_ptr<Batch> batch = without_gil([&] { return pool_->recv(); });
  return results_.make(std::move(batch), pool_->batch_size());
}

py::object NativePool::recv_rest(const std::optional<double>& timeout) {
  const ActiveCall call(this);
  check_open();
  const Deadline d(this, timeout);
  int rows = 0;
  std::shared_ptr<Batch> batch = without_gil([&] { return pool_->recv_rest(&rows); });
  return results_.make(std::move(batch), rows);
}

int NativePool::in_flight() {
  const ActiveCall call(this);
  check_open();
  return without_gil([&] { return pool_->in_flight(); });
}

void NativePool::send_reset(const py::handle& env_id, const std::vector<std::optional<uint64_t>>& seeds) {
  const ActiveCall call(this);
  check_open();
  queue_reset(reset_ids(env_id, seeds), seeds, false);
}

py::object NativePool::reset_envs(const py::handle& env_id, const std::vector<std::optional<uint64_t>>& seeds,
                                  bool all_rows) {
  const ActiveCall call(this);
  check_open();
  if (pool_->batch_size() != pool_->num_envs())
    throw py::value_error("partial resets (reset_mask / env_id) need batch_size == num_envs");
  const std::vector<int32_t> ids = reset_ids(env_id, seeds);
  if (all_rows) {  // the core refuses it with envs in flight, or with another env never reset
    queue_reset(ids, seeds, true);
    std::shared_ptr<Batch> batch = without_gil([&] { return pool_->recv(); });
    return results_.make(std::move(batch), pool_->batch_size());
  }
  // The listed envs' rows only, as a reset of them and the receipt of what is in flight: which must be
  // nothing else. The other envs are not asked for anything, so they need not have been reset.
  if (without_gil([&] { return pool_->in_flight(); }) > 0)
    throw std::runtime_error("envs are in flight; receive their results before a partial reset");
  if (ids.empty()) return results_.make_empty();
  queue_reset(ids, seeds, false);
  int rows = 0;
  std::shared_ptr<Batch> batch = without_gil([&] {
    if (static_cast<int>(ids.size()) < pool_->batch_size()) return pool_->recv_rest(&rows);  // in env order
    rows = pool_->batch_size();
    return pool_->recv();
  });
  return results_.make(std::move(batch), rows);
}

py::array NativePool::peek(const py::handle& env_id, bool frames) {
  const ActiveCall call(this);
  check_open();
  std::vector<int32_t> ids = this->ids(env_id);
  const core::Spec& s = pool_->spec();
  std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(ids.size())};
  const bool state = frames && s.render_state_size > 0;  // (the state Python draws the frame from)
  if (state)
    shape.push_back(s.render_state_size);
  else
    for (int64_t d : frames ? s.render_shape : s.obs_shape) shape.push_back(d);
  py::array out = state    ? py::array(py::dtype::of<int64_t>(), shape)
                  : frames ? py::array(py::dtype::of<uint8_t>(), shape)
                           : py::array(py::dtype(pool_->obs_dtype()), shape);
  void* data = out.mutable_data();
  without_gil([&] { pool_->peek(ids.data(), static_cast<int>(ids.size()), frames, data); });
  return out;
}

void NativePool::drain() {
  const ActiveCall call(this);
  check_process();
  without_gil([&] { pool_->drain(); });
}

void NativePool::close() {
  if (foreign()) return;
  std::shared_ptr<XlaPort> port = xla_;  // (read with the GIL held: xla_handle() sets it)
  without_gil([&] {
    pool_->close();
    if (port) port->detach();  // (after close, which wakes a jitted call waiting in the pool)
  });
}

std::pair<uint32_t, uint32_t> NativePool::xla_handle() {
  check_open();
  if (!xla_) xla_ = XlaPort::make(pool_.get());
  const XlaHandle h = xla_->handle();
  return {h.serial, h.calls};
}

void NativePool::check_process() const {
  if (foreign())
    throw std::runtime_error("this pool was made in process " + std::to_string(pid_) +
                             " and cannot be used after fork (its threads run in the parent only); "
                             "make a new pool in the child process");
}

void NativePool::check_open() const {
  check_process();
  if (pool_->closed()) throw std::runtime_error("the pool is closed");
}

std::vector<int32_t> NativePool::ids(const py::handle& env_id) const {
  return env_id.is_none() ? all_ids_ : convert_ids(env_id, pool_->num_envs());
}

std::vector<int32_t> NativePool::reset_ids(const py::handle& env_id,
                                           const std::vector<std::optional<uint64_t>>& seeds) const {
  std::vector<int32_t> ids = this->ids(env_id);
  if (!seeds.empty() && seeds.size() != ids.size())
    throw py::value_error("seed: expected " + std::to_string(ids.size()) + " seeds, got " +
                          std::to_string(seeds.size()));
  return ids;
}

void NativePool::queue_reset(const std::vector<int32_t>& ids, const std::vector<std::optional<uint64_t>>& seeds,
                             bool observe_others) {
  without_gil([&] {
    pool_->send_reset(ids.data(), static_cast<int>(ids.size()), seeds.empty() ? nullptr : seeds.data(),
                      observe_others);
  });
}

}  // namespace fastvec::bindings
