// fastvec._core: the native pool, as seen from Python. The only C++ that
// includes pybind11 (with register_*.cpp). Validation of user input happens
// here, before the pool is touched; waits release the GIL.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cxxabi.h>
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/simd.hpp"
#include "env_registry.hpp"
#include "info_layout.hpp"
#include "result_type.hpp"
#ifdef FASTVEC_WITH_ATARI
#include "envs/atari/atari.hpp"
#endif
#ifdef FASTVEC_WITH_MUJOCO
#include <mujoco/mujoco.h>

#include "envs/mujoco/simulation.hpp"
#endif

namespace py = pybind11;
using fastvec::core::AutoresetMode;
using fastvec::core::Batch;
using fastvec::core::PoolBase;

namespace fastvec::bindings {
namespace {

// -- the GIL around the pool's waits ------------------------------------------
//
// It is taken back by plain code, never by a destructor. CPython 3.11-3.13
// ends a thread that asks for the GIL while another thread finalizes the
// interpreter with pthread_exit, whose forced unwind aborts the process when
// it leaves a noexcept frame, and every destructor is one: a daemon thread
// stepping a pool (or blocked in recv) at interpreter exit took the process
// down with "terminate called without an active exception". Such a thread
// parks instead of unwinding: its process is exiting, and the objects on its
// stack must not be released without the GIL.

// -- fork ---------------------------------------------------------------------
//
// Counts the forks of this process's line: each fork() bumps it in the child (pthread_atfork, registered when
// the module loads), so a pool made before a fork sees another generation in the child. Asked on every call:
// getpid() there was a system call, 3% of a CartPole-8 step.
std::atomic<unsigned> fork_generation{0};

[[noreturn]] void park_forever() {
  for (;;) pause();
}

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

void take_gil(PyThreadState* state) {
  try {
    PyEval_RestoreThread(state);
  } catch (abi::__forced_unwind&) {
    park_forever();
  }
}

// Runs f() with the GIL released and takes it back, also when f throws. A
// forced unwind from f (its interrupt check asked for the GIL) parks too.
template <class F>
auto without_gil(F&& f) -> std::invoke_result_t<F&> {
  PyThreadState* state = PyEval_SaveThread();
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
      f();
      take_gil(state);
    } else {
      auto result = f();
      take_gil(state);
      return result;
    }
  } catch (abi::__forced_unwind&) {
    park_forever();
  } catch (...) {
    take_gil(state);
    throw;
  }
}

// The pools this thread is inside a call of. A Python signal handler runs
// inside a pool's blocking wait (its interrupt check), on the waiting
// thread: a call from it on the same pool would wait for the pool's lock,
// which its own thread holds, forever. Owned by its thread.
thread_local std::vector<const void*> t_active_pools;

// Marks a call on `pool` for its duration; refuses a call re-entered on the same thread.
class ActiveCall {
 public:
  explicit ActiveCall(const void* pool) : pool_(pool) {
    if (std::find(t_active_pools.begin(), t_active_pools.end(), pool) != t_active_pools.end())
      throw std::runtime_error(
          "this pool was called from a signal handler (or re-entrantly) while the same thread waits in one of its "
          "calls (recv, step, reset); only close() may be called there. Raise an exception in the handler and "
          "call the pool after it is caught, or close() it");
    t_active_pools.push_back(pool);
  }
  ~ActiveCall() { t_active_pools.erase(std::find(t_active_pools.begin(), t_active_pools.end(), pool_)); }
  ActiveCall(const ActiveCall&) = delete;
  ActiveCall& operator=(const ActiveCall&) = delete;

 private:
  const void* pool_;
};

// Whether every action is in [0, n): one vectorized pass (the common case);
// the caller looks for the culprit only when it fails.
FASTVEC_SIMD_CLONES bool all_in_range(const int64_t* __restrict p, int64_t rows, int64_t n) {
  int64_t lo = 0, hi = 0;
  for (int64_t k = 0; k < rows; ++k) {
    lo = std::min(lo, p[k]);
    hi = std::max(hi, p[k]);
  }
  return lo >= 0 && hi < n;
}

bool all_finite(const double* p, int64_t n) {
  for (int64_t k = 0; k < n; ++k)
    if (!std::isfinite(p[k])) return false;
  return true;
}

AutoresetMode parse_mode(const std::string& mode) {
  if (mode == "next_step") return AutoresetMode::kNextStep;
  if (mode == "same_step") return AutoresetMode::kSameStep;
  if (mode == "disabled") return AutoresetMode::kDisabled;
  throw py::value_error("autoreset_mode must be 'next_step', 'same_step' or 'disabled', got '" + mode + "'");
}

std::string shape_str(const py::array& a) {
  std::string s = "(";
  // As Python prints a shape tuple: (3,) and (2, 2).
  for (py::ssize_t d = 0; d < a.ndim(); ++d) s += std::to_string(a.shape(d)) + (d + 1 < a.ndim() ? ", " : "");
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// The Python-facing pool: the core pool plus the conversion of actions and
// results. Owned by one Python object; its methods run with the GIL held
// except where they wait.
class NativePool {
 public:
  NativePool(const std::string& env, int num_envs, int batch_size, int num_threads, int block_size,
         int max_episode_steps, const std::string& autoreset_mode, uint64_t seed,
         const std::map<std::string, double>& options, const std::map<std::string, std::string>& string_options,
         bool adapt_threads, int initial_threads, const std::string& info_layout, int thread_affinity_offset,
         const std::map<std::string, std::array<double, 2>>& range_options)
      : info_layout_(make_info_layout(info_layout)) {
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
    cfg.elapsed_info = info_layout_->elapsed_step();
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
    const core::Spec& s = pool_->spec();
    obs_shape_ = {pool_->batch_size()};
    obs_shape_.insert(obs_shape_.end(), s.obs_shape.begin(), s.obs_shape.end());
    obs_dtype_ = py::dtype(pool_->obs_dtype());
    reward_dtype_ = py::dtype(pool_->reward_dtype());
    double_actions_ = std::string(pool_->action_dtype()) == "float64";
    const std::vector<size_t> offsets = core::info_offsets(s.info);
    info_row_bytes_ = static_cast<py::ssize_t>(core::info_row_bytes(s.info, s.info_masks));
    info_mask_offset_ = static_cast<py::ssize_t>(core::info_mask_offset(s.info));
    for (size_t k = 0; k < s.info.size(); ++k)
      info_columns_.push_back({py::str(s.info[k].name), py::str("_" + s.info[k].name),
                               py::dtype(core::info_dtype(s.info[k].type)), static_cast<py::ssize_t>(offsets[k]),
                               static_cast<py::ssize_t>(s.info[k].size), s.info[k].at_reset});
    info_masks_ = s.info_masks;
    info_layout_->prepare(info_columns_, info_masks_);
    all_ids_.resize(pool_->num_envs());
    for (int i = 0; i < pool_->num_envs(); ++i) all_ids_[i] = i;
    action_elems_ = 1;
    for (int64_t d : s.action_shape) action_elems_ *= d;
  }

  py::dict spec() const {
    const core::Spec& s = pool_->spec();
    py::dict d;
    d["obs_shape"] = s.obs_shape;
    d["obs_low"] = s.obs_low;
    d["obs_high"] = s.obs_high;
    d["obs_dtype"] = pool_->obs_dtype();
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
    return d;
  }

  int num_envs() const { return pool_->num_envs(); }
  int batch_size() const { return pool_->batch_size(); }
  int num_threads() const { return pool_->num_threads(); }
  int active_threads() const { return pool_->active_threads(); }
  int block_size() const { return pool_->block_size(); }
  bool closed() const { return pool_->closed(); }

  // Sync step of every env, results in env order (fastvec.VectorEnv checks the pool is sync).
  py::object step(const py::handle& actions) {
    const ActiveCall call(this);
    check_open();
    const Actions a = convert_actions(actions, pool_->num_envs());
    std::shared_ptr<Batch> batch = without_gil([&] {
      pool_->send_step_all(a.data);
      return pool_->recv();
    });
    return result(std::move(batch), pool_->batch_size());
  }

  void send(const py::handle& actions, const py::handle& env_id) {
    const ActiveCall call(this);
    check_open();
    std::vector<int32_t> ids = env_id.is_none() ? all_ids_ : convert_ids(env_id);  // None: every env
    const Actions a = convert_actions(actions, static_cast<int64_t>(ids.size()));
    without_gil([&] { pool_->send_step(a.data, ids.data(), static_cast<int>(ids.size())); });
  }

  // timeout: seconds (None: no limit) after which a wait still short of
  // its rows raises TimeoutError, leaving them in flight. The caller may be
  // stepping envs itself while it waits: the time-out is checked between.
  py::object recv(const std::optional<double>& timeout) {
    const ActiveCall call(this);
    check_open();
    const Deadline d(this, timeout);
    std::shared_ptr<Batch> batch = without_gil([&] { return pool_->recv(); });
    return result(std::move(batch), pool_->batch_size());
  }

  // The envs still in flight, fewer than batch_size: an async pool's last, partial batch, or a sync pool's
  // partial send (rows in env order).
  py::object recv_rest(const std::optional<double>& timeout) {
    const ActiveCall call(this);
    check_open();
    const Deadline d(this, timeout);
    int rows = 0;
    std::shared_ptr<Batch> batch = without_gil([&] { return pool_->recv_rest(&rows); });
    return result(std::move(batch), rows);
  }

  // Queues a reset of every env (env_id None) or of those in env_id; seeds:
  // one per env reset, or none.
  void send_reset(const py::handle& env_id, const std::vector<std::optional<uint64_t>>& seeds) {
    const ActiveCall call(this);
    check_open();
    queue_reset(env_id, seeds, false);
  }

  // A partial reset of a sync pool, waited for: every env's row, the others
  // reporting their current observation.
  py::object reset_envs(const py::handle& env_id, const std::vector<std::optional<uint64_t>>& seeds, bool) {
    const ActiveCall call(this);
    check_open();
    queue_reset(env_id, seeds, true);
    std::shared_ptr<Batch> batch = without_gil([&] { return pool_->recv(); });
    return result(std::move(batch), pool_->batch_size());
  }

  // The current frames (frames=True: (n, H, W, 3) uint8, spec()["render_shape"]) or observations of the envs
  // in env_id (None: every env), none of them in flight.
  py::array peek(const py::handle& env_id, bool frames) {
    const ActiveCall call(this);
    check_open();
    std::vector<int32_t> ids = env_id.is_none() ? all_ids_ : convert_ids(env_id);
    const core::Spec& s = pool_->spec();
    std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(ids.size())};
    for (int64_t d : frames ? s.render_shape : s.obs_shape) shape.push_back(d);
    py::array out = frames ? py::array(py::dtype::of<uint8_t>(), shape) : py::array(py::dtype(pool_->obs_dtype()), shape);
    void* data = out.mutable_data();
    without_gil([&] { pool_->peek(ids.data(), static_cast<int>(ids.size()), frames, data); });
    return out;
  }

  void drain() {
    const ActiveCall call(this);
    check_process();
    without_gil([&] { pool_->drain(); });
  }

  // In a forked child, close() only forgets the pool: its threads live in
  // the parent, and a mutex may have been copied locked. Allowed inside
  // another call of the same thread (a signal handler's): the waiting call
  // then raises "the pool is closed".
  void close() {
    if (foreign()) return;
    without_gil([&] { pool_->close(); });
  }

  ~NativePool() {
    if (foreign()) {
      (void)pool_.release();  // see close(): the parent's pool, not ours to tear down
    } else if (pool_) {
      without_gil([&] { pool_.reset(); });
    }
  }
  NativePool(const NativePool&) = delete;
  NativePool& operator=(const NativePool&) = delete;

 private:
  // A pool belongs to the process that made it: fork copies its memory but
  // not its threads, so a child waiting on it would wait forever.
  bool foreign() const { return fork_generation.load(std::memory_order_relaxed) != generation_; }
  void check_process() const {
    if (foreign())
      throw std::runtime_error("this pool was made in process " + std::to_string(pid_) +
                               " and cannot be used after fork (its threads run in the parent only); "
                               "make a new pool in the child process");
  }

  // The deadline of the recv in progress, for its interrupt check; owned by
  // the calling thread (calls are serialised by ActiveCall and the pool's lock).
  class Deadline {
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

  void check_open() const {
    check_process();
    if (pool_->closed()) throw std::runtime_error("the pool is closed");
  }

  void queue_reset(const py::handle& env_id, const std::vector<std::optional<uint64_t>>& seeds, bool observe_others) {
    std::vector<int32_t> ids = env_id.is_none() ? all_ids_ : convert_ids(env_id);
    if (!seeds.empty() && seeds.size() != ids.size())
      throw py::value_error("seed: expected " + std::to_string(ids.size()) + " seeds, got " + std::to_string(seeds.size()));
    without_gil([&] {
      pool_->send_reset(ids.data(), static_cast<int>(ids.size()), seeds.empty() ? nullptr : seeds.data(),
                        observe_others);
    });
  }

  // numpy's cast of `arr` to T. array_t::ensure returns null (and clears the
  // error) when numpy refuses, e.g. when warnings are errors and a cast warns.
  template <typename T>
  static py::array_t<T, py::array::c_style | py::array::forcecast> cast_array(const py::array& arr,
                                                                              const char* what) {
    auto out = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(arr);
    if (!out)
      throw py::value_error(std::string(what) + " of dtype " + std::string(py::str(arr.dtype())) +
                            " cannot be converted to " + std::string(py::str(py::dtype::of<T>())));
    return out;
  }

  // numpy's view of `value` as an array; when numpy refuses it, a TypeError
  // that says why (a torch tensor that requires grad: call .detach()).
  static py::array as_array(const py::handle& value, const char* what) {
    py::array arr = py::array::ensure(value);
    if (arr) return arr;
    try {
      py::module_::import("numpy").attr("asarray")(value);
    } catch (py::error_already_set& e) {
      throw py::type_error(std::string(what) + " could not be converted to a numpy array: " + e.what());
    }
    throw py::type_error(std::string(what) + " must be array-like, got " +
                         std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  }

  // The index of the first element of a 1-D integer array outside [0, n),
  // or -1; its value, as numpy prints it, in *value. Unsigned 64-bit values
  // are compared unsigned (2**64 - 1 is not -1).
  static int64_t first_out_of_range(const py::array& arr, int64_t n, std::string* value) {
    if (arr.dtype().kind() == 'u' && arr.itemsize() == 8) {
      auto u = cast_array<uint64_t>(arr, "value");
      for (py::ssize_t k = 0; k < u.size(); ++k) {
        if (u.data()[k] < static_cast<uint64_t>(n)) continue;
        *value = std::to_string(u.data()[k]);
        return k;
      }
      return -1;
    }
    auto v = cast_array<int64_t>(arr, "value");
    for (py::ssize_t k = 0; k < v.size(); ++k) {
      if (v.data()[k] >= 0 && v.data()[k] < n) continue;
      *value = std::to_string(v.data()[k]);
      return k;
    }
    return -1;
  }

  std::vector<int32_t> convert_ids(const py::handle& env_id) const {
    py::array arr = as_array(env_id, "env_id");
    if (arr.ndim() != 1)
      throw py::type_error("env_id must be a 1-D array of env indices, got " +
                           std::string(py::str(py::type::handle_of(env_id).attr("__name__"))) + " of shape " +
                           shape_str(arr));
    const char kind = arr.dtype().kind();
    if (kind != 'i' && kind != 'u' && !(arr.size() == 0))
      throw py::type_error("env_id must hold integers, got dtype " + std::string(py::str(arr.dtype())));
    std::string bad;
    if (first_out_of_range(arr, pool_->num_envs(), &bad) >= 0)
      throw py::value_error("env_id " + bad + " is out of range [0, " + std::to_string(pool_->num_envs()) + ")");
    auto ids = cast_array<int64_t>(arr, "env_id");
    std::vector<int32_t> out(ids.size());
    const int64_t* p = ids.data();
    for (py::ssize_t k = 0; k < ids.size(); ++k) out[k] = static_cast<int32_t>(p[k]);
    return out;
  }

  // Converted actions, owned by the call that converted them (never by the
  // NativePool: two Python threads may step the same pool).
  struct Actions {
    py::object keep;              // an int64 or float64 array the pool reads from
    std::vector<float> floats;    // or float32 elements
    const void* data = nullptr;
  };

  // Checks actions for `rows` envs against the action space and converts
  // them to what the pool reads (int64, float32 or float64: pool_->action_dtype()),
  // without touching the pool.
  Actions convert_actions(const py::handle& actions, int64_t rows) const {
    py::array arr = as_array(actions, "actions");
    const core::Spec& s = pool_->spec();
    const char kind = arr.dtype().kind();
    if (pool_->action_is_discrete()) {
      if (kind != 'i' && kind != 'u')
        throw py::type_error("actions for Discrete(" + std::to_string(s.num_actions) +
                             ") must be integers, got dtype " + std::string(py::str(arr.dtype())));
      if (arr.ndim() != 1 || arr.shape(0) != rows)
        throw py::value_error("actions must have shape (" + std::to_string(rows) + ",), got " + shape_str(arr));
      auto ints = cast_array<int64_t>(arr, "actions");
      const int64_t* p = ints.data();
      const bool wide_unsigned = kind == 'u' && arr.itemsize() == 8;  // cast to int64 above: may have wrapped
      if (wide_unsigned || !all_in_range(p, rows, s.num_actions)) {
        std::string bad;
        const int64_t k = first_out_of_range(arr, s.num_actions, &bad);
        if (k >= 0)
          throw py::value_error("actions[" + std::to_string(k) + "] = " + bad + " is out of range for Discrete(" +
                                std::to_string(s.num_actions) + ")");
      }
      Actions out;
      out.data = p;
      out.keep = std::move(ints);
      return out;
    }
    if (kind != 'f' && kind != 'i' && kind != 'u')
      throw py::type_error("actions for a Box space must be real numbers, got dtype " + std::string(py::str(arr.dtype())));
    std::string expected = "(" + std::to_string(rows);
    for (int64_t d : s.action_shape) expected += ", " + std::to_string(d);
    expected += ")";
    bool ok = arr.ndim() == static_cast<py::ssize_t>(s.action_shape.size()) + 1 && arr.shape(0) == rows;
    for (size_t d = 0; ok && d < s.action_shape.size(); ++d) ok = arr.shape(d + 1) == s.action_shape[d];
    const bool flat_1d = action_elems_ == 1 && arr.ndim() == 1 && arr.shape(0) == rows;
    if (!ok && !flat_1d) throw py::value_error("actions must have shape " + expected + ", got " + shape_str(arr));
    const int64_t n = rows * action_elems_;
    Actions out;
    if (double_actions_) {  // float64, as they came (float32 converts exactly): finite, or a ValueError
      auto doubles = cast_array<double>(arr, "actions");
      const double* p = doubles.data();
      if (!all_finite(p, n)) {
        for (int64_t k = 0; k < n; ++k)
          if (!std::isfinite(p[k]))
            throw py::value_error("actions must be finite, got " + std::string(py::repr(py::float_(p[k]))) +
                                  " for env row " + std::to_string(k / action_elems_));
      }
      out.data = p;
      out.keep = std::move(doubles);
      return out;
    }
    out.floats.resize(static_cast<size_t>(n));
    // Other dtypes are read as float64 and checked before the float32 the env
    // takes: 1e300 is finite as float64, not as float32 (and its C++ cast is undefined).
    const auto take = [&](const auto* p) {
      for (int64_t k = 0; k < n; ++k) {
        if (!(std::fabs(p[k]) <= std::numeric_limits<float>::max()))
          throw py::value_error("actions must be finite as float32, got " +
                                std::string(py::repr(py::float_(static_cast<double>(p[k])))) + " for env row " +
                                std::to_string(k / action_elems_));
        out.floats[k] = static_cast<float>(p[k]);
      }
    };
    if (arr.dtype().is(py::dtype::of<float>())) {
      take(cast_array<float>(arr, "actions").data());  // no conversion: at most a contiguous copy
    } else {
      take(cast_array<double>(arr, "actions").data());
    }
    out.data = out.floats.data();
    return out;
  }

  // A writable numpy array of `dtype` viewing `data` (C-contiguous when `strides` is null), owned by `owner`.
  // numpy's C API directly: pybind11's constructors build shape and stride vectors, a few hundred
  // nanoseconds an array, and a step returns one array per field.
  static py::object view(const py::dtype& dtype, int nd, const py::ssize_t* shape, const py::ssize_t* strides,
                         void* data, const py::handle& owner) {
    auto& api = py::detail::npy_api::get();
    PyObject* arr = api.PyArray_NewFromDescr_(api.PyArray_Type_, dtype.inc_ref().ptr(), nd, shape, strides, data,
                                              py::detail::npy_api::NPY_ARRAY_WRITEABLE_, nullptr);  // steals dtype
    if (arr == nullptr) throw py::error_already_set();
    if (api.PyArray_SetBaseObject_(arr, owner.inc_ref().ptr()) != 0) {  // steals owner
      Py_DECREF(arr);
      throw py::error_already_set();
    }
    return py::reinterpret_steal<py::object>(arr);
  }

  // A Result of numpy arrays viewing the batch, which stays alive (and
  // unrecycled) while any of them does. The env's info fields (spec.info)
  // become info[name] columns; in same-step mode the ended episodes' final
  // values become final_info[name] with masks.
  py::object result(std::shared_ptr<Batch> batch, py::ssize_t rows) const {
    Batch* b = batch.get();
    py::capsule owner(new std::shared_ptr<Batch>(std::move(batch)),
                      [](void* p) { delete static_cast<std::shared_ptr<Batch>*>(p); });
    auto vec = [&](auto* ptr) {
      using T = std::remove_pointer_t<decltype(ptr)>;
      return view(py::dtype::of<T>(), 1, &rows, nullptr, ptr, owner);
    };
    std::vector<py::ssize_t> obs_shape = obs_shape_;
    obs_shape[0] = rows;
    const int obs_nd = static_cast<int>(obs_shape.size());
    // Each field of the (rows, info_row_bytes) block: a strided view, (rows,) or (rows, size), and its "_name"
    // mask: with Spec::info_masks, the pool's column of the row (a view of its own memory: a caller may change
    // one mask in place, as gymnasium's are separate arrays); without, in final_info only, a copy of `ended`.
    // As gymnasium's vector envs, a key that no row has is left out (a reset's info lacks a step's keys).
    auto columns = [&](std::byte* p, const py::handle& into, bool final) {
      for (size_t k = 0; k < info_columns_.size(); ++k) {
        const InfoColumn& c = info_columns_[k];
        std::byte* mask = p + info_mask_offset_ + static_cast<py::ssize_t>(k);
        if (info_masks_ && !final) {
          bool any = false;
          for (py::ssize_t r = 0; r < rows && !any; ++r) any = mask[r * info_row_bytes_] != std::byte{0};
          if (!any) continue;
        }
        const py::ssize_t item = c.dtype.itemsize();
        const py::ssize_t shape[2] = {rows, c.size}, strides[2] = {info_row_bytes_, item};
        set_item(into, c.key, view(c.dtype, c.size == 1 ? 1 : 2, shape, strides, p + c.offset, owner));
        if (info_masks_) {
          set_item(into, c.mask_key, view(bool_dtype_, 1, &rows, &info_row_bytes_, mask, owner));
        } else if (final) {
          set_item(into, c.mask_key, vec(b->ended()).attr("copy")());
        }
      }
    };
    py::object none = py::none();
    py::object env_id = vec(b->env_id());
    // The layout's keys, then the columns. Envs without info values (most) share one empty, read-only
    // mapping: no dict per step.
    py::object info = info_layout_->begin(env_id);
    if (info) {
      columns(b->info(0), info, false);
    } else {
      info = no_info_;
    }
    py::object ended = none, ep_return = none, ep_length = none, final_obs = none, final_info = none;
    if (b->num_ended.load(std::memory_order_relaxed) > 0) {
      ended = vec(b->ended());
      ep_return = vec(b->episode_return());
      ep_length = vec(b->episode_length());
      if (b->layout().with_final_obs) {
        final_obs = view(obs_dtype_, obs_nd, obs_shape.data(), nullptr, b->final_obs(0), owner);
        py::dict finals;
        columns(b->final_info(0), finals, true);
        final_info = finals;
      }
    }
    py::object items[] = {view(obs_dtype_, obs_nd, obs_shape.data(), nullptr, b->obs(0), owner),
                          view(reward_dtype_, 1, &rows, nullptr, b->reward_bytes(), owner),
                          vec(b->terminated()), vec(b->truncated()), env_id, ended, ep_return, ep_length,
                          final_obs, info, final_info};
    static_assert(std::size(items) == kNumResultFields);
    PyObject* fields[kNumResultFields];
    for (int i = 0; i < kNumResultFields; ++i) fields[i] = items[i].release().ptr();
    PyObject* r = new_result(fields);
    if (r == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(r);
  }

  const pid_t pid_ = getpid();  // for the message of check_process
  const unsigned generation_ = fork_generation.load(std::memory_order_relaxed);  // see foreign()
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // see Deadline
  std::string timeout_text_;
  std::unique_ptr<PoolBase> pool_;
  std::vector<py::ssize_t> obs_shape_;
  py::dtype obs_dtype_, reward_dtype_, bool_dtype_ = py::dtype::of<bool>();
  bool double_actions_ = false;  // the env takes float64 actions (pool_->action_dtype())
  std::vector<int32_t> all_ids_;
  int64_t action_elems_ = 1;
  py::object no_info_ = py::module_::import("types").attr("MappingProxyType")(py::dict());
  const std::unique_ptr<InfoLayout> info_layout_;  // what a batch's info dict holds besides the columns
  std::vector<InfoColumn> info_columns_;  // spec().info's fields
  py::ssize_t info_row_bytes_ = 0, info_mask_offset_ = 0;
  bool info_masks_ = false;
};

}  // namespace
}  // namespace fastvec::bindings

PYBIND11_MODULE(_core, m) {
  using fastvec::bindings::NativePool;
  m.doc() = "fastvec's native pool (private; use fastvec.make)";
  m.attr("ale_py_version") = FASTVEC_ALE_PY_VERSION;
  if (fastvec::bindings::make_result_type() == nullptr) throw py::error_already_set();
  if (pthread_atfork(nullptr, nullptr,
                     [] { fastvec::bindings::fork_generation.fetch_add(1, std::memory_order_relaxed); }) != 0)
    throw std::runtime_error("pthread_atfork failed");
  m.attr("Result") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(fastvec::bindings::result_type));
  fastvec::bindings::EnvFamily::add_registered_envs();
#ifdef FASTVEC_WITH_ATARI
  m.attr("has_atari") = true;
  // "avx512" or "portable": the Atari preprocessing kernels this CPU runs
  // (FASTVEC_PORTABLE_KERNELS=1 forces the portable ones, for their tests).
  m.attr("atari_kernels") = fastvec::envs::atari_kernels();
  // The benchmark's baseline: one emulator stepped in a C++ loop on this thread.
  m.def(
      "atari_loop_rate",
      [](const std::map<std::string, double>& options, const std::map<std::string, std::string>& strings, int steps,
         bool preprocess) {
        return fastvec::bindings::without_gil([&] {
          return fastvec::envs::atari_loop_rate(
              fastvec::core::Options(fastvec::envs::Atari::options(), options, strings), steps, preprocess);
        });
      },
      py::arg("options"), py::arg("string_options"), py::arg("steps"), py::arg("preprocess"));
#else
  m.attr("has_atari") = false;
#endif
#ifdef FASTVEC_WITH_MUJOCO
  m.attr("has_mujoco") = true;
  m.attr("mujoco_version") = mj_versionString();
  m.def(
      "set_numpy_dot",
      [](const std::string& kind) {
        using fastvec::envs::mujoco::DotKind;
        const DotKind k = kind == "fused"       ? DotKind::kFused
                          : kind == "separate"  ? DotKind::kSeparate
                          : kind == "two_lanes" ? DotKind::kTwoLanes
                                                : throw py::value_error(
                                                      "kind must be 'fused', 'separate' or 'two_lanes', got '" +
                                                      kind + "'");
        fastvec::envs::mujoco::numpy_dot.store(k, std::memory_order_relaxed);
      },
      py::arg("kind"),
      "How numpy's dot sums a short vector in this process ('fused', 'separate' or 'two_lanes': "
      "fastvec.mujoco_models.numpy_dot_kind), for the envs' np.linalg.norm; set by fastvec when it is imported.");
#else
  m.attr("has_mujoco") = false;
#endif

  static py::exception<fastvec::core::EnvError> env_error(m, "EnvError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const fastvec::core::UsageError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const fastvec::core::OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const fastvec::core::EnvError& e) {
      // env_id names the env that raised (as the Python-env pool's exceptions have it): reset it to go on.
      py::object error = py::reinterpret_borrow<py::object>(env_error.ptr())(e.what());
      if (e.env_id() >= 0) error.attr("env_id") = e.env_id();
      PyErr_SetObject(env_error.ptr(), error.ptr());
    }
  });

  // The benchmarks' ceiling for any native env: one env stepped in a C++ loop on this thread (registry's loop_rate).
  m.def(
      "loop_rate",
      [](const std::string& env, const std::map<std::string, double>& options,
         const std::map<std::string, std::string>& string_options,
         const std::map<std::string, std::array<double, 2>>& range_options, int64_t steps, int max_episode_steps,
         bool next_step) {
        auto it = fastvec::bindings::native_envs().find(env);
        if (it == fastvec::bindings::native_envs().end()) throw py::value_error("unknown native env '" + env + "'");
        if (steps < 1) throw py::value_error("steps must be >= 1");
        const fastvec::core::Options opts(it->second.options, options, string_options, range_options);
        return fastvec::bindings::without_gil(
            [&] { return it->second.loop_rate(opts, steps, max_episode_steps, next_step); });
      },
      py::arg("env"), py::arg("options"), py::arg("string_options"), py::arg("range_options"), py::arg("steps"),
      py::arg("max_episode_steps"), py::arg("next_step") = true);

  // For the Python-env pool's request pipes: writes what a non-blocking fd takes of `pending` (a bytearray)
  // and deletes that from its front, in one call, so that no signal handler's exception (Ctrl-C) can fall
  // between the write and the bookkeeping (CPython runs handlers as a call returns): a request written but
  // still pending would be sent twice, and the rest of one half written would tear the stream. Returns the
  // bytes left; a full pipe writes nothing (BlockingIOError is not raised), a closed one raises OSError.
  m.def(
      "write_pending",
      [](int fd, py::bytearray pending) {
        PyObject* buf = pending.ptr();
        const Py_ssize_t size = PyByteArray_GET_SIZE(buf);
        if (size == 0) return Py_ssize_t{0};
        const ssize_t n = ::write(fd, PyByteArray_AS_STRING(buf), static_cast<size_t>(size));
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return size;  // the caller waits, and runs handlers
          PyErr_SetFromErrno(PyExc_OSError);
          throw py::error_already_set();
        }
        if (n > 0 && PySequence_DelSlice(buf, 0, n) != 0) throw py::error_already_set();
        return size - n;
      },
      py::arg("fd"), py::arg("pending"));

  // The native envs, for fastvec.registry: each one's metadata and option table.
  m.def("native_envs", [] {
    py::list envs;
    for (const auto& [id, entry] : fastvec::bindings::native_envs()) {
      py::list options;
      for (const fastvec::core::OptionSpec& o : entry.options) {
        py::dict d;
        d["name"] = o.name;
        d["kind"] = fastvec::core::kind_name(o.kind);
        using Kind = fastvec::core::OptionSpec::Kind;
        switch (o.kind) {
          case Kind::kBool:
            d["default"] = py::bool_(o.fallback != 0);
            break;
          case Kind::kInt:
            d["default"] = py::int_(static_cast<long long>(o.fallback));
            break;
          case Kind::kReal:
            d["default"] = py::float_(o.fallback);
            break;
          case Kind::kString:
          case Kind::kFile:
          case Kind::kName:
            d["default"] = py::str(o.text_fallback);
            break;
          case Kind::kRange:
            d["default"] = py::make_tuple(o.fallback, o.fallback_high);
            break;
        }
        d["low"] = o.low;
        d["high"] = o.high;
        options.append(d);
      }
      py::dict d;
      d["id"] = id;
      d["max_episode_steps"] = entry.info.max_episode_steps;
      d["reward_threshold"] = entry.info.reward_threshold;
      d["hidden"] = entry.info.hidden;
      d["family"] = entry.info.family;
      d["built"] = entry.built;
      d["options"] = options;
      envs.append(d);
    }
    return envs;
  });

  py::class_<NativePool>(m, "Pool")
      .def(py::init<const std::string&, int, int, int, int, int, const std::string&, uint64_t,
                    const std::map<std::string, double>&, const std::map<std::string, std::string>&, bool, int,
                    const std::string&, int,
                    const std::map<std::string, std::array<double, 2>>&>(),
           py::arg("env"), py::arg("num_envs"), py::arg("batch_size"), py::arg("num_threads"), py::arg("block_size"),
           py::arg("max_episode_steps"), py::arg("autoreset_mode"), py::arg("seed"), py::arg("options"),
           py::arg("string_options"), py::kw_only(), py::arg("adapt_threads") = false, py::arg("initial_threads") = 0,
           py::arg("info_layout") = "gymnasium", py::arg("thread_affinity_offset") = -1,
           py::arg("range_options") = std::map<std::string, std::array<double, 2>>{})
      .def("spec", &NativePool::spec)
      .def_property_readonly("num_envs", &NativePool::num_envs)
      .def_property_readonly("batch_size", &NativePool::batch_size)
      .def_property_readonly("num_threads", &NativePool::num_threads)
      .def_property_readonly("active_threads", &NativePool::active_threads)
      .def_property_readonly("block_size", &NativePool::block_size)
      .def_property_readonly("closed", &NativePool::closed)
      .def("step", &NativePool::step, py::arg("actions"))
      .def("send", &NativePool::send, py::arg("actions"), py::arg("env_id"))
      .def("recv", &NativePool::recv, py::arg("timeout") = py::none())
      .def("recv_rest", &NativePool::recv_rest, py::arg("timeout") = py::none())
      .def("send_reset", &NativePool::send_reset, py::arg("env_id"), py::arg("seeds"))
      .def("reset_envs", &NativePool::reset_envs, py::arg("env_id"), py::arg("seeds"), py::arg("all_rows"))
      .def("drain", &NativePool::drain)
      .def("peek", &NativePool::peek, py::arg("env_id"), py::arg("frames"))
      .def("close", &NativePool::close);
}
