#include "envs/mujoco/simulation.hpp"

#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <utility>

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
    const mjModel* m = mj_loadXML(path.c_str(), nullptr, error, sizeof(error));
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
// exit(1). Thrown instead, from the env's call into MuJoCo, they are its env's error (the pool names the env and
// the env needs a reset, which mj_resetData makes clean), as gymnasium gets mujoco.FatalError. Installed once,
// only if no one else has set the handler.
[[noreturn]] void throw_mujoco_error(const char* message) { throw core::EnvError(std::string("MuJoCo: ") + message); }

void install_error_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (mju_user_error == nullptr) mju_user_error = throw_mujoco_error;
  });
}

}  // namespace

void check_library_version() {
  if (mj_version() != mjVERSION_HEADER)
    throw std::runtime_error("fastvec was built against MuJoCo " + std::to_string(mjVERSION_HEADER) +
                             " but this process loaded MuJoCo " + mj_versionString() +
                             "; reinstall fastvec with the mujoco-core version it pins");
}

std::shared_ptr<const mjModel> load_model(const std::string& path) {
  check_library_version();
  install_error_handler();
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
    data_.emplace_back(mj_makeData(model_.get()));
    if (!data_.back()) throw std::runtime_error("MuJoCo could not allocate the data of env " + std::to_string(i));
  }
  init_qpos_.assign(model_->qpos0, model_->qpos0 + model_->nq);
  init_qvel_.assign(model_->nv, 0.0);
}

void Simulation::do_simulation(int i, const double* action) {
  mjData* d = data_[i].get();
  std::memcpy(d->ctrl, action, sizeof(double) * static_cast<size_t>(model_->nu));
  for (int k = 0; k < frame_skip_; ++k) mj_step(model_.get(), d);
  // As of MuJoCo 2.0, force-related quantities (cfrc_ext) need this (gymnasium does the same).
  mj_rnePostConstraint(model_.get(), d);
}

void Simulation::set_state(int i, const double* qpos, const double* qvel) {
  mjData* d = data_[i].get();
  std::memcpy(d->qpos, qpos, sizeof(double) * static_cast<size_t>(model_->nq));
  std::memcpy(d->qvel, qvel, sizeof(double) * static_cast<size_t>(model_->nv));
  mj_forward(model_.get(), d);
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
