#include "envs/mujoco/simulation.hpp"

#include <dlfcn.h>

#include <csetjmp>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

// libmujoco's thread-local log handler (preferred, on its thread, to the process's) and the process's: exported,
// not in MuJoCo's public headers; mujoco's Python bindings declare them so too (python/mujoco/private.h).
extern "C" {
mjfLogHandler _mjPRIVATE_setTlsLogHandler(mjfLogHandler handler);
mjfLogHandler _mjPRIVATE_getGlobalLogHandler(void);
}

namespace fastvec::envs::mujoco {
namespace {

struct ModelDeleter {
  void operator()(const mjModel* m) const { mj_deleteModel(const_cast<mjModel*>(m)); }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("xml_file: cannot read the MuJoCo model file " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What the log had before load_quietly's handler, for the messages it passes on (one load per thread at a time).
thread_local mjfLogHandler load_forward = nullptr;

void drop_warnings(const mjLogMessage* msg) {
  if (msg->level != mjLOG_WARNING && load_forward != nullptr) load_forward(msg);
}

// mj_loadXML, its compiler's warnings dropped: they are about the model file (dm_control's walker.xml uses the
// deprecated settotalmass), and MuJoCo's default handler would append them to a MUJOCO_LOG.TXT in the user's
// working directory. Errors come back in `error`, as without.
const mjModel* load_quietly(const std::string& path, char* error, int error_size) {
  const mjfLogHandler previous = _mjPRIVATE_setTlsLogHandler(drop_warnings);
  load_forward = previous != nullptr ? previous : _mjPRIVATE_getGlobalLogHandler();
  const mjModel* m = mj_loadXML(path.c_str(), nullptr, error, error_size);
  _mjPRIVATE_setTlsLogHandler(previous);
  return m;
}

// Models by path, kept while someone holds them (and the last one loaded, so that a pool's spec and its
// blocks load a file once); a file whose contents changed is loaded again (only the file itself is compared:
// a model whose <include>d files or assets change while a pool of it lives is not reloaded).
class ModelCache {
 public:
  std::shared_ptr<const mjModel> get(const std::string& path) {
    const std::string text = read_file(path);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(path);
    if (it != models_.end() && it->second.text == text) {
      if (std::shared_ptr<const mjModel> m = it->second.model.lock()) return last_ = m;
    }
    char error[1024] = "";
    const mjModel* m = load_quietly(path, error, sizeof(error));
    if (m == nullptr) throw std::invalid_argument("xml_file: MuJoCo cannot load " + path + ": " + error);
    std::shared_ptr<const mjModel> model(m, ModelDeleter{});
    std::erase_if(models_, [](const auto& entry) { return entry.second.model.expired(); });
    models_[path] = {text, model};
    return last_ = model;
  }

 private:
  struct Entry {
    std::string text;
    std::weak_ptr<const mjModel> model;
  };
  std::mutex mu_;
  std::map<std::string, Entry> models_;  // guarded by mu_
  std::shared_ptr<const mjModel> last_;  // guarded by mu_
};

ModelCache& cache() {
  static ModelCache c;
  return c;
}

// MuJoCo's fatal errors (mju_error: an arena too small for a user's model, ...) end the process by default, as
// exit(1). fastvec's calls into MuJoCo catch them instead, as gymnasium gets mujoco.FatalError, and they become
// the env's error (the pool names the env, and the env needs a reset, which mj_resetData makes clean). They are
// caught as mujoco's Python bindings catch them (python/mujoco/errors.h): for the length of the call, a log
// handler of this thread's own, which MuJoCo prefers to the process's (whatever mju_user_error or
// mju_setLogHandler set), and which on an error jumps back to the call (longjmp). No C++ exception is ever thrown
// through MuJoCo's C frames (nor through a callback's frames between them); the call throws once back in its own.
// The thread-local handler is libmujoco's, exported but not in its public headers (declared at the top of this
// file, as the bindings declare it); the library's version is checked against the headers' before any call
// (check_library_version).
thread_local std::jmp_buf error_jump;
thread_local char error_message[2048];
thread_local mjfLogHandler forward_to = nullptr;  // where other messages go: the handler that was in force

void jump_on_error(const mjLogMessage* msg) {
  if (msg->level != mjLOG_ERROR) {  // warnings (an unstable simulation's) go on to MuJoCo's log, as they did
    if (forward_to != nullptr) forward_to(msg);
    return;
  }
  if (msg->func != nullptr) {
    std::snprintf(error_message, sizeof(error_message), "%s: %s", msg->func, msg->subject);
  } else {
    std::snprintf(error_message, sizeof(error_message), "%s", msg->subject);
  }
  std::longjmp(error_jump, 1);
}

// Calls fn(arg), which calls into MuJoCo and holds nothing with a destructor across those calls: false if
// MuJoCo raised an error (its message in error_message). Not reentrant.
bool call_mujoco(void (*fn)(void*), void* arg) {
  const mjfLogHandler previous = _mjPRIVATE_setTlsLogHandler(jump_on_error);
  const mjfLogHandler previous_forward = forward_to;
  forward_to = previous != nullptr ? previous : _mjPRIVATE_getGlobalLogHandler();
  volatile bool ok = false;
  if (setjmp(error_jump) == 0) {
    fn(arg);
    ok = true;
  }
  forward_to = previous_forward;
  _mjPRIVATE_setTlsLogHandler(previous);
  return ok;
}

// MuJoCo's callbacks are the process's. mujoco's Python bindings set one for a Python function
// (mujoco.set_mjcb_control(f), ...) to a function of theirs that runs it only with the MjModel and MjData they
// made, and raises a MuJoCo error for any other (an mjData of fastvec's); while such a callback that takes an
// mjData is set, fastvec's envs refuse to load a model or step, naming it. A C function (a ctypes pointer, which
// the bindings set as it is) is not theirs: it runs, on the pool's threads. mjcb_time takes no mjData, and the
// bindings run a Python timer on any thread.
bool in_mujoco_python_bindings(void* fn) {
  Dl_info info;
  if (dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return false;
  const std::string_view file(info.dli_fname);
  const size_t slash = file.rfind('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view dir = file.substr(0, slash);
  return file.substr(slash + 1).starts_with("_callbacks.") && (dir == "mujoco" || dir.ends_with("/mujoco"));
}

// The name of the first callback taking an mjData that mujoco's Python bindings set to a Python function, or
// nullptr. Each thread remembers what it found of each pointer (a dladdr per change, not per step).
const char* python_callback() {
  const std::pair<const char*, void*> callbacks[] = {
      {"mjcb_control", reinterpret_cast<void*>(mjcb_control)},
      {"mjcb_passive", reinterpret_cast<void*>(mjcb_passive)},
      {"mjcb_contactfilter", reinterpret_cast<void*>(mjcb_contactfilter)},
      {"mjcb_sensor", reinterpret_cast<void*>(mjcb_sensor)},
      {"mjcb_act_dyn", reinterpret_cast<void*>(mjcb_act_dyn)},
      {"mjcb_act_gain", reinterpret_cast<void*>(mjcb_act_gain)},
      {"mjcb_act_bias", reinterpret_cast<void*>(mjcb_act_bias)},
  };
  constexpr size_t n = std::size(callbacks);
  thread_local void* seen[n] = {};
  thread_local bool python[n] = {};
  for (size_t k = 0; k < n; ++k) {
    void* fn = callbacks[k].second;
    if (fn == nullptr) continue;
    if (fn != seen[k]) {
      python[k] = in_mujoco_python_bindings(fn);
      seen[k] = fn;
    }
    if (python[k]) return callbacks[k].first;
  }
  return nullptr;
}

std::string refusal(const char* callback) {
  return std::string(callback) + " is set to a Python function (mujoco.set_" + callback +
         "), which mujoco's Python bindings run only with the MjData they made: fastvec's MuJoCo envs cannot run "
         "it, and do not load a model, reset or step while it is set; remove it with mujoco.set_" +
         callback + "(None)";
}

}  // namespace

void call_catching_errors(void (*fn)(void*), void* arg) {
  if (!call_mujoco(fn, arg)) throw core::EnvError(std::string("MuJoCo: ") + error_message);
}

void refuse_python_callbacks() {
  if (const char* callback = python_callback()) throw core::EnvError(refusal(callback));
}

void check_library_version() {
  if (mj_version() != mjVERSION_HEADER)
    throw std::runtime_error("fastvec was built against MuJoCo " + std::to_string(mjVERSION_HEADER) +
                             " but this process loaded MuJoCo " + mj_versionString() +
                             "; reinstall fastvec with the mujoco-core version it pins");
}

std::shared_ptr<const mjModel> load_model(const std::string& path) {
  check_library_version();
  // (MuJoCo's compiler steps the model: the callback would fail it, and the error blame the model file)
  if (const char* callback = python_callback()) throw std::runtime_error(refusal(callback));
  return cache().get(path);
}

void check_model(const mjModel& m, int64_t min_nq, int64_t min_nv, const char* what) {
  if (m.nq >= min_nq && m.nv >= min_nv) return;
  throw std::invalid_argument("xml_file: " + std::string(what) + ", but the model has " + std::to_string(m.nq) +
                              " position(s) and " + std::to_string(m.nv) + " velocity(ies) (at least " +
                              std::to_string(min_nq) + " and " + std::to_string(min_nv) + " are needed)");
}

core::Spec simulation_spec(const mjModel& m, int64_t obs_size, std::vector<core::InfoField> info,
                           double step_cost_ns) {
  core::Spec s;
  const double inf = std::numeric_limits<double>::infinity();
  s.obs_shape = {obs_size};
  s.obs_low.assign(obs_size, -inf);
  s.obs_high.assign(obs_size, inf);
  s.action_shape = {m.nu};
  for (int64_t k = 0; k < m.nu; ++k) {
    // gymnasium: model.actuator_ctrlrange.astype(np.float32)
    s.action_low.push_back(static_cast<float>(m.actuator_ctrlrange[2 * k]));
    s.action_high.push_back(static_cast<float>(m.actuator_ctrlrange[2 * k + 1]));
  }
  s.info = std::move(info);
  s.info_masks = true;
  s.step_cost_ns = step_cost_ns;
  // An mjData: its buffer, and its arena (stack and contacts), mostly untouched.
  s.env_address_bytes = static_cast<double>(m.nbuffer + m.narena) + sizeof(mjData);
  s.env_resident_bytes = static_cast<double>(m.nbuffer) + sizeof(mjData) + static_cast<double>(m.narena) / 8;
  return s;
}

Simulation::Simulation(int n, const core::Options& o)
    : model_(load_model(o.text("xml_file"))), frame_skip_(o.integer("frame_skip")) {
  data_.reserve(n);
  for (int i = 0; i < n; ++i) {
    mjData* d = nullptr;
    catching_errors([&] { d = mj_makeData(model_.get()); });
    data_.emplace_back(d);
    if (!data_.back()) throw std::runtime_error("MuJoCo could not allocate the data of env " + std::to_string(i));
  }
  init_qpos_.assign(model_->qpos0, model_->qpos0 + model_->nq);
  init_qvel_.assign(model_->nv, 0.0);
}

void Simulation::do_simulation(int i, const double* action) {
  refuse_python_callbacks();
  mjData* d = data_[i].get();
  const mjModel* m = model_.get();
  std::memcpy(d->ctrl, action, sizeof(double) * static_cast<size_t>(m->nu));
  catching_errors([&] {
    for (int k = 0; k < frame_skip_; ++k) mj_step(m, d);
    // As of MuJoCo 2.0, force-related quantities (cfrc_ext) need this (gymnasium does the same).
    mj_rnePostConstraint(m, d);
  });
}

void Simulation::reset_data(int i) {
  refuse_python_callbacks();
  mjData* d = data_[i].get();
  const mjModel* m = model_.get();
  catching_errors([&] { mj_resetData(m, d); });
}

void Simulation::set_state(int i, const double* qpos, const double* qvel) {
  refuse_python_callbacks();
  mjData* d = data_[i].get();
  const mjModel* m = model_.get();
  std::memcpy(d->qpos, qpos, sizeof(double) * static_cast<size_t>(m->nq));
  std::memcpy(d->qvel, qvel, sizeof(double) * static_cast<size_t>(m->nv));
  catching_errors([&] { mj_forward(m, d); });
}

void Simulation::add_uniform(core::Pcg64& rng, const double* init, double lo, double hi, int n, double* out) {
  for (int k = 0; k < n; ++k) out[k] = init[k] + rng.uniform(lo, hi);
}

void Simulation::add_normal(core::Pcg64& rng, const double* init, double scale, int n, double* out) {
  for (int k = 0; k < n; ++k) out[k] = init[k] + scale * rng.standard_normal();
}

int Simulation::body(const char* name, const char* option) const {
  const int id = mj_name2id(model_.get(), mjOBJ_BODY, name);
  if (id < 0) throw std::invalid_argument(std::string(option) + ": the model has no body named '" + name + "'");
  return id;
}

}  // namespace fastvec::envs::mujoco
