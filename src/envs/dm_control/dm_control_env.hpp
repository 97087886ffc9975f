#pragma once
// A dm_control suite task as a fastvec native env: what every task shares (its Environment's step and reset,
// its RandomState, options and spec), around the task's own part, a class T with
//
//   static constexpr const char* kModel;          the model's file in dm_control/suite ("cartpole.xml")
//   static constexpr double kTimeLimit;           the suite's default time_limit, seconds
//   static constexpr double kControlTimestep;     the task's control_timestep (0: one physics step per step)
//   T(const mjModel&);                            checks the model, finds what it reads of it
//   std::vector<core::ObsField> observation() const;           get_observation's keys and shapes, in order
//   void initialize_episode(Physics&, int i, RandomState&);    the task's, after reset_context's entry
//   double reward(const mjModel&, const mjData&) const;        get_reward
//   void write_obs(const mjModel&, const mjData&, double*) const;  get_observation, fields concatenated
//   static constexpr bool kModelPerEnv = true;    (optional) each env gets its own model (Physics::own_models)
//   void seeded(Physics&, int i, RandomState&);   (optional) after env i's RandomState is seeded: what the suite
//                                                 draws from it when it builds the environment (lqr's model)
//   bool terminated(const mjModel&, const mjData&) const;   (optional) get_termination returned 0.0 (discount 0)
//   (reward and write_obs may take the env's index after the mjData, for a task that keeps state per env: what
//   dm_control's task writes into the model at reset, which here the block's envs share)
//
// Reference: dm_control/rl/control.py (Environment), dm_control/suite/base.py (Task).

#include <mujoco/mujoco.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/dm_control/frames.hpp"
#include "envs/dm_control/physics.hpp"
#include "envs/dm_control/random_state.hpp"

namespace fastvec::envs::dm_control {

template <class T>
class DmControlEnv {
 public:
  using Obs = double;
  using Action = double;
  using Reward = double;

  // xml_file: the model (a path; Python resolves a bare name in the installed dm_control's suite directory);
  // time_limit: seconds (Python turns it into the pool's episode limit, with spec().control_timestep);
  // flat_observation: one array of the fields concatenated, as dm_control's Environment(flat_observation=True);
  // visualize_reward: dm_control colours the model by the reward in its frames, which fastvec does not: refused;
  // height, width, camera_id: the frames render() draws (frames.hpp).
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    core::OptionTable table = {
        {.name = "xml_file", .kind = K::kFile, .text_fallback = T::kModel},
        {.name = "time_limit", .kind = K::kReal, .fallback = T::kTimeLimit, .low = 0,
         .high = std::numeric_limits<double>::infinity()},
        {.name = "flat_observation", .kind = K::kBool, .fallback = 0},
        {.name = "visualize_reward", .kind = K::kBool, .fallback = 0},
    };
    for (core::OptionSpec& o : frame_options()) table.push_back(std::move(o));
    return table;
  }

  static core::Spec spec(const core::Options& o) {
    if (o.flag("visualize_reward"))
      throw std::invalid_argument(
          "visualize_reward: fastvec's dm_control envs do not colour the model by the reward in their frames; "
          "leave it False");
    if (!(o.get("time_limit") > 0)) throw std::invalid_argument("time_limit must be > 0 (seconds)");
    const std::shared_ptr<const mjModel> m = mujoco::load_model(o.text("xml_file"));
    const T task(*m);
    core::Spec s;
    const double inf = std::numeric_limits<double>::infinity();
    int64_t size = 0;
    for (const core::ObsField& f : task.observation()) size += core::obs_field_size(f);
    s.obs_shape = {size};
    if (!o.flag("flat_observation")) s.obs_fields = task.observation();
    s.obs_low.assign(size, -inf);
    s.obs_high.assign(size, inf);
    s.render_shape = FrameSettings(*m, o).shape();
    // mujoco.action_spec: the control range where the actuator is limited, else unbounded.
    s.action_shape = {m->nu};
    for (int64_t k = 0; k < m->nu; ++k) {
      const bool limited = m->actuator_ctrllimited[k] != 0;
      s.action_low.push_back(limited ? m->actuator_ctrlrange[2 * k] : -inf);
      s.action_high.push_back(limited ? m->actuator_ctrlrange[2 * k + 1] : inf);
    }
    const int n_sub_steps = compute_n_steps(T::kControlTimestep, m->opt.timestep);
    s.control_timestep = m->opt.timestep * n_sub_steps;
    s.step_cost_ns = 2e3 * n_sub_steps;
    s.env_address_bytes = static_cast<double>(m->nbuffer + m->narena) + sizeof(mjData) + sizeof(RandomState);
    s.env_resident_bytes =
        static_cast<double>(m->nbuffer) + sizeof(mjData) + static_cast<double>(m->narena) / 8 + sizeof(RandomState);
    if constexpr (requires { T::kModelPerEnv; }) {
      if (T::kModelPerEnv) {  // each env's own copy of the model
        s.env_address_bytes += static_cast<double>(m->nbuffer) + sizeof(mjModel);
        s.env_resident_bytes += static_cast<double>(m->nbuffer) + sizeof(mjModel);
      }
    }
    return s;
  }

  DmControlEnv(int n, const core::Options& o)
      : physics_(n, o.text("xml_file")),
        task_(physics_.model()),
        n_sub_steps_(compute_n_steps(T::kControlTimestep, physics_.model().opt.timestep)),
        random_(static_cast<size_t>(n)),
        seeded_(static_cast<size_t>(n), false),
        frames_(physics_.shared_model(), FrameSettings(physics_.model(), o)) {
    if constexpr (requires { T::kModelPerEnv; })
      if (T::kModelPerEnv) physics_.own_models();
  }

  // Environment.reset: the task's RandomState, seeded once (with the env's seed; a seed past 2**32 - 1, which
  // dm_control's RandomState refuses, or an env reset without one: with a draw from the pool's stream for it)
  // and continued across episodes; reset_context around task.initialize_episode.
  void reset(int i, core::Pcg64& rng) {
    if (const std::optional<uint64_t> seed = rng.take_seed()) {
      random_[i].seed(*seed <= UINT32_MAX ? static_cast<uint32_t>(*seed) : rng.next_u32());
      seeded_[i] = true;
      if constexpr (requires { task_.seeded(physics_, i, random_[i]); }) task_.seeded(physics_, i, random_[i]);
    } else if (!seeded_[i]) {
      random_[i].seed(rng.next_u32());
      seeded_[i] = true;
      if constexpr (requires { task_.seeded(physics_, i, random_[i]); }) task_.seeded(physics_, i, random_[i]);
    }
    physics_.reset(i);
    task_.initialize_episode(physics_, i, random_[i]);
    physics_.after_reset(i);
  }

  // Environment.step: before_step (set_control), n_sub_steps physics steps, get_reward, get_termination (a task
  // that has one: terminated is dm_env's discount 0). Otherwise the pool's time limit ends the episode, with
  // discount 1.
  core::BasicStepResult<double> step(int i, const double* action) {
    physics_.set_control(i, action);
    physics_.step(i, n_sub_steps_);
    double reward;
    if constexpr (requires { task_.reward(physics_.model(), physics_.data(i), i); })
      reward = task_.reward(physics_.model(), physics_.data(i), i);
    else
      reward = task_.reward(physics_.model(), physics_.data(i));
    bool terminated = false;
    if constexpr (requires { task_.terminated(physics_.model(), physics_.data(i)); })
      terminated = task_.terminated(physics_.model(), physics_.data(i));
    return {reward, terminated};
  }

  // Env i's frame (spec().render_shape), as its Physics.render(height, width, camera_id) draws it.
  void render(int i, uint8_t* out) {
    frames_.render(physics_.model(i), physics_.data(i), out);
  }

  void write_obs(int i, double* out) const {
    if constexpr (requires { task_.write_obs(physics_.model(), physics_.data(i), i, out); })
      task_.write_obs(physics_.model(), physics_.data(i), i, out);
    else
      task_.write_obs(physics_.model(), physics_.data(i), out);
  }

 private:
  Physics physics_;
  T task_;
  const int n_sub_steps_;
  std::vector<RandomState> random_;
  std::vector<bool> seeded_;
  Frames frames_;
};

// The index of `name` among the model's objects of `type`: std::invalid_argument naming xml_file if absent.
inline int object_id(const mjModel& m, mjtObj type, const char* name) {
  const int id = mj_name2id(&m, type, name);
  if (id < 0) throw std::invalid_argument(std::string("xml_file: the model has no ") + mju_type2Str(type) +
                                          " named '" + name + "'");
  return id;
}

// out = v.dot(R) of a 3-vector and a row-major 3x3 matrix (a rotation, from xmat): OpenBLAS's gemv sums each
// column as its ddot does (fused multiply-adds in order where numpy's dot is kFused, else in order).
inline void vec_dot_mat3(const double* v, const double* r, double* out) {
  const bool fused = mujoco::numpy_dot.load(std::memory_order_relaxed) == mujoco::DotKind::kFused;
  for (int j = 0; j < 3; ++j)
    out[j] = fused ? std::fma(v[2], r[6 + j], std::fma(v[1], r[3 + j], v[0] * r[j]))
                   : v[0] * r[j] + v[1] * r[3 + j] + v[2] * r[6 + j];
}

// randomizers.randomize_limited_and_rotational_joints: each joint, in order, drawn from `random`: a limited
// hinge or slide uniform in its range, an unlimited hinge uniform in [-pi, pi], a ball joint's quaternion
// (limited: random_limited_quaternion), a free joint's orientation; the rest left alone.
void randomize_limited_and_rotational_joints(const mjModel& m, mjData& d, RandomState& random);

}  // namespace fastvec::envs::dm_control
