#pragma once
// dm_control's Physics for a block of envs: one model (MuJoCo's, loaded once per file and shared with the
// gymnasium MuJoCo envs' cache) and one mjData per env, stepped and reset as dm_control 1.0.52 does.
// Reference: dm_control/mujoco/engine.py (Physics.step with legacy_step, reset, after_reset,
// check_invalid_state) and dm_control/rl/control.py (Physics.reset_context, compute_n_steps).
//
// A Physics belongs to one block of envs: the pool calls it from one thread at a time.

#include <mujoco/mujoco.h>

#include <memory>
#include <string>
#include <vector>

#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::dm_control {

// control.compute_n_steps: the physics steps in a control step (control_timestep 0: one, dm_control's
// default); std::invalid_argument when control_timestep is not a multiple of the model's timestep.
int compute_n_steps(double control_timestep, double physics_timestep);

class Physics {
 public:
  // n envs of the model at `path`, none reset yet.
  Physics(int n, const std::string& path);

  const mjModel& model() const { return *model_; }
  const std::shared_ptr<const mjModel>& shared_model() const { return model_; }
  // The model env i steps: its own copy (own_models) or the block's.
  const mjModel& model(int i) const { return *stepped(i); }
  // Gives each env its own copy of the model, for a task that writes into it at reset (manipulator moves its
  // target and receptacle; each dm_control env owns its model): reset and step then use env i's copy.
  void own_models();
  // Env i's own model (own_models() called first), for its task's initialize_episode to write into.
  mjModel& own_model(int i) { return *own_[i]; }
  mjData& data(int i) { return *data_[i]; }
  const mjData& data(int i) const { return *data_[i]; }

  // Each of these calls MuJoCo: its fatal errors are thrown as core::EnvError("MuJoCo: ..."), and so is a
  // callback set through mujoco's Python bindings (envs/mujoco/simulation.hpp).
  // reset_context's entry: mj_resetData, then mj_forward with actuation disabled (a PhysicsError ignored).
  void reset(int i);
  // reset_context's exit (after_reset): mj_forward with actuation disabled.
  void after_reset(int i);
  // set_control: ctrl = action, as it came (MuJoCo clamps it where the model limits it).
  void set_control(int i, const double* action);
  // Physics.step(nstep), legacy_step: mj_step2, mj_step(nstep - 1), mj_step1 (RK4: mj_step(nstep), mj_step1).
  void step(int i, int nstep);

 private:
  // f() inside check_invalid_state: a MuJoCo warning it raises is a PhysicsError (core::EnvError).
  template <class F>
  void checked(int i, F&& f);
  // mj_forward of env i with actuation disabled.
  void forward_passive(int i);
  const mjModel* stepped(int i) const { return own_.empty() ? model_.get() : own_[i].get(); }

  std::shared_ptr<const mjModel> model_;
  // The model with mjDSBL_ACTUATION (Model.disable('actuation')): a copy of this block's, for reset's forwards.
  std::unique_ptr<mjModel, void (*)(mjModel*)> passive_;
  std::vector<mujoco::DataPtr> data_;
  // Empty, or each env's model (own_models).
  std::vector<std::unique_ptr<mjModel, void (*)(mjModel*)>> own_;
};

}  // namespace fastvec::envs::dm_control
