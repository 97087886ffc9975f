#include "envs/dm_control/physics.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/spec.hpp"

namespace fastvec::envs::dm_control {

int compute_n_steps(double control_timestep, double physics_timestep) {
  if (control_timestep == 0) return 1;
  if (control_timestep < physics_timestep)
    throw std::invalid_argument("control timestep (" + std::to_string(control_timestep) +
                                ") cannot be smaller than the physics timestep (" + std::to_string(physics_timestep) +
                                ")");
  const double ratio = control_timestep / physics_timestep;
  if (std::fabs(ratio - std::nearbyint(ratio)) > 1e-8)
    throw std::invalid_argument("control timestep (" + std::to_string(control_timestep) +
                                ") must be an integer multiple of the physics timestep (" +
                                std::to_string(physics_timestep) + ")");
  return static_cast<int>(std::nearbyint(ratio));
}

Physics::Physics(int n, const std::string& path)
    : model_(mujoco::load_model(path)), passive_(nullptr, [](mjModel* m) { mj_deleteModel(m); }) {
  mjModel* passive = nullptr;
  mujoco::catching_errors([&] { passive = mj_copyModel(nullptr, model_.get()); });
  if (passive == nullptr) throw std::runtime_error("MuJoCo could not copy the model of " + path);
  passive->opt.disableflags |= mjDSBL_ACTUATION;
  passive_.reset(passive);
  data_.reserve(n);
  for (int i = 0; i < n; ++i) {
    mjData* d = nullptr;
    mujoco::catching_errors([&] { d = mj_makeData(model_.get()); });
    data_.emplace_back(d);
    if (!data_.back()) throw std::runtime_error("MuJoCo could not allocate the data of env " + std::to_string(i));
  }
}

void Physics::own_models() {
  own_.clear();
  for (size_t i = 0; i < data_.size(); ++i) {
    mjModel* m = nullptr;
    mujoco::catching_errors([&] { m = mj_copyModel(nullptr, model_.get()); });
    if (m == nullptr) throw std::runtime_error("MuJoCo could not copy the model of env " + std::to_string(i));
    own_.emplace_back(m, [](mjModel* p) { mj_deleteModel(p); });
  }
}

void Physics::forward_passive(int i) {
  mjData* d = data_[i].get();
  if (own_.empty()) {
    mj_forward(passive_.get(), d);
    return;
  }
  // Model.disable('actuation') on env i's own model, for this forward only.
  mjModel* m = own_[i].get();
  const int flags = m->opt.disableflags;
  m->opt.disableflags |= mjDSBL_ACTUATION;
  struct Restore {
    mjModel* m;
    int flags;
    ~Restore() { m->opt.disableflags = flags; }
  } restore{m, flags};
  mj_forward(m, d);
}

template <class F>
void Physics::checked(int i, F&& f) {
  mjData* d = data_[i].get();
  int before[mjNWARNING];
  for (int k = 0; k < mjNWARNING; ++k) before[k] = d->warning[k].number;
  mujoco::catching_errors(f);
  std::string raised;
  for (int k = 0; k < mjNWARNING; ++k) {
    if (d->warning[k].number > before[k]) {
      if (!raised.empty()) raised += "; ";
      raised += mju_warningText(k, d->warning[k].lastinfo);
    }
  }
  // dm_control raises PhysicsError here: the episode cannot go on (the pool names the env; a reset clears it).
  if (!raised.empty()) throw core::EnvError("PhysicsError: the physics state is invalid: " + raised);
}

void Physics::reset(int i) {
  mujoco::refuse_python_callbacks();
  mjData* d = data_[i].get();
  mujoco::catching_errors([&] {
    mj_resetData(stepped(i), d);
    forward_passive(i);  // (reset_context ignores a PhysicsError of this forward)
  });
}

void Physics::after_reset(int i) {
  mujoco::refuse_python_callbacks();
  checked(i, [&] { forward_passive(i); });
}

void Physics::set_control(int i, const double* action) {
  std::memcpy(data_[i]->ctrl, action, sizeof(double) * static_cast<size_t>(model_->nu));
}

void Physics::step(int i, int nstep) {
  mujoco::refuse_python_callbacks();
  const mjModel* m = stepped(i);
  mjData* d = data_[i].get();
  checked(i, [&] {
    if (m->opt.integrator != mjINT_RK4) {
      // mj_step1 ran at the end of the last step (or the reset's forward): finish this one, then step on.
      mj_step2(m, d);
      for (int k = 1; k < nstep; ++k) mj_step(m, d);
    } else {
      for (int k = 0; k < nstep; ++k) mj_step(m, d);
    }
    mj_step1(m, d);
  });
}

}  // namespace fastvec::envs::dm_control
