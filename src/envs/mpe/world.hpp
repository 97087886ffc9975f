#pragma once
// The Multi Particle Environments' world, shared by every scenario: a port of mpe2 1.1.1's
// mpe2/_mpe_utils/core.py (World.step: action forces, the soft contact forces, integration with damping and
// speed limits) and of SimpleEnv's action decoding and spaces (mpe2/_mpe_utils/simple_env.py), for a block
// of n envs kept as flat arrays. Every expression keeps numpy's float64 operations in mpe2's order (this
// file is compiled without contraction): np.sum of two squares is a + b, np.logaddexp is numpy's
// npy_logaddexp over libm's exp and log1p, and a continuous action is float32 arithmetic before it is
// widened.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/numpy_unary.hpp"

namespace fastvec::envs::mpe {

// An agent or a landmark, as mpe2's Entity/Agent: what the physics reads.
struct Entity {
  std::string name;
  double size = 0.05;
  bool movable = false;
  bool collide = true;
  bool silent = true;      // agents: no communication action (landmarks: unused)
  double accel = -1;       // < 0: None (the action's sensitivity is 5)
  double max_speed = -1;   // < 0: None
  double mass = 1.0;
};

inline Entity agent(std::string name, double size = 0.05) {
  Entity e;
  e.name = std::move(name);
  e.size = size;
  e.movable = true;
  e.silent = false;
  return e;
}

inline Entity landmark(double size = 0.05, bool collide = true) {
  Entity e;
  e.size = size;
  e.collide = collide;
  return e;
}

struct WorldDef {
  std::vector<Entity> agents;
  std::vector<Entity> landmarks;
  int dim_c = 0;
};

// np.logaddexp(0, y): numpy's npy_logaddexp.
inline double logaddexp0(double y) {
  const double x = 0.0;
  if (x == y) return x + 0.693147180559945309417232121458176568;
  const double tmp = x - y;
  if (tmp > 0) return x + std::log1p(std::exp(-tmp));
  if (tmp <= 0) return y + std::log1p(std::exp(tmp));
  return tmp;
}

// simple_tag's and simple_world_comm's bound(x): a good agent's penalty for being x out on an axis (leaving the
// screen): 0 below 0.9, linear to 1, then min(np.exp(2 * x - 2), 10), np.exp being numpy's own loop.
inline double screen_penalty(double x) {
  if (x < 0.9) return 0;
  if (x < 1.0) return (x - 0.9) * 10;
  const double e = numpy_exp(2 * x - 2);
  return 10 < e ? 10 : e;
}

// sqrt(np.sum(np.square(a - b))) of two 2-vectors.
inline double dist(const double* a, const double* b) {
  const double dx = a[0] - b[0], dy = a[1] - b[1];
  return std::sqrt(dx * dx + dy * dy);
}

// The options every MPE env takes (mpe2's keywords), and the scenario's own.
inline core::OptionTable options_with(core::OptionTable own) {
  using K = core::OptionSpec::Kind;
  core::OptionTable t = {
      {"max_cycles", K::kInt, 25, 1, 1e9},
      {"continuous_actions", K::kBool, 0},
      {"dynamic_rescaling", K::kBool, 1},  // rendering only
      {"benchmark_data", K::kBool, 0},
  };
  t.insert(t.end(), own.begin(), own.end());
  return t;
}

// mpe2's num_agent_neighbors and num_landmark_neighbors (partial observability): 0 is None (every one observed).
inline core::OptionTable neighbor_options() {
  using K = core::OptionSpec::Kind;
  return {{"num_agent_neighbors", K::kInt, 0, 0, 1024}, {"num_landmark_neighbors", K::kInt, 0, 0, 1024}};
}

// Refuses option values fastvec's port does not model (std::invalid_argument, a ValueError in Python).
inline void refuse(const core::Options& o, const std::string& env_id, const std::string& name, const char* why) {
  if (o.flag(name)) throw std::invalid_argument(env_id + ": " + name + "=True is not supported natively (" + why + ")");
}

// A block of n worlds: positions and velocities of every entity, communication states of every agent.
class World {
 public:
  World(int n, WorldDef def, bool continuous)
      : def_(std::move(def)),
        continuous_(continuous),
        num_agents_(static_cast<int>(def_.agents.size())),
        num_entities_(num_agents_ + static_cast<int>(def_.landmarks.size())),
        pos_(static_cast<size_t>(n) * num_entities_ * 2),
        vel_(pos_.size()),
        comm_(static_cast<size_t>(n) * num_agents_ * def_.dim_c),
        force_(static_cast<size_t>(num_entities_) * 2),
        has_force_(num_entities_) {
    for (const Entity& a : def_.agents) entities_.push_back(a);
    for (const Entity& l : def_.landmarks) entities_.push_back(l);
    int at = 0;
    for (const Entity& a : def_.agents) {
      action_offset_.push_back(at);
      at += static_cast<int>(action_size(a));
    }
  }

  // SimpleEnv's action space of an agent: Discrete(n) (one element holding the index) or Box(0, 1, (size,)).
  int64_t num_actions(const Entity& a) const {
    if (continuous_) return 0;
    int64_t n = a.movable ? 5 : 1;
    if (!a.silent) n *= def_.dim_c;
    return n;
  }
  int64_t action_size(const Entity& a) const {
    if (!continuous_) return 1;
    return (a.movable ? 5 : 0) + (a.silent ? 0 : def_.dim_c);
  }

  // The spec of an env whose agents observe obs_sizes[k] values each, with its per-agent rewards in info.
  core::Spec spec(const std::vector<int64_t>& obs_sizes) const {
    core::Spec s;
    int64_t obs = 0;
    for (int64_t k : obs_sizes) obs += k;
    s.obs_shape = {obs};
    s.obs_low.assign(obs, -std::numeric_limits<double>::infinity());
    s.obs_high.assign(obs, std::numeric_limits<double>::infinity());
    for (int k = 0; k < num_agents_; ++k) {
      const Entity& a = def_.agents[k];
      const int64_t n = num_actions(a), size = action_size(a);
      s.agents.push_back({a.name, obs_sizes[k], size, n});
      for (int64_t j = 0; j < size; ++j) {
        s.action_low.push_back(0.0);
        s.action_high.push_back(n > 0 ? static_cast<double>(n - 1) : 1.0);
      }
    }
    s.action_shape = {static_cast<int64_t>(s.action_low.size())};
    s.step_cost_ns = 40.0 * num_entities_ * num_entities_ + 20.0 * static_cast<double>(obs);
    s.env_address_bytes = s.env_resident_bytes =
        static_cast<double>(sizeof(double) * (4 * num_entities_ + num_agents_ * (def_.dim_c + 1)));
    // (the rows translator of fastvec/multiagent/native_rows.py reads both)
    s.info = {{"agent_rewards", core::InfoField::Type::kFloat64, num_agents_, true},
              {"terminated", core::InfoField::Type::kInt32, 1, true}};
    return s;
  }

  int num_agents() const { return num_agents_; }
  int num_entities() const { return num_entities_; }
  int dim_c() const { return def_.dim_c; }
  const Entity& entity(int e) const { return entities_[e]; }

  double* pos(int i, int e) { return &pos_[(static_cast<size_t>(i) * num_entities_ + e) * 2]; }
  const double* pos(int i, int e) const { return &pos_[(static_cast<size_t>(i) * num_entities_ + e) * 2]; }
  const double* vel(int i, int e) const { return &vel_[(static_cast<size_t>(i) * num_entities_ + e) * 2]; }
  const double* comm(int i, int a) const { return &comm_[(static_cast<size_t>(i) * num_agents_ + a) * def_.dim_c]; }

  // Velocities and communication states zero, as every scenario's reset_world leaves them.
  void zero_state(int i) {
    std::fill_n(&vel_[static_cast<size_t>(i) * num_entities_ * 2], num_entities_ * 2, 0.0);
    std::fill_n(&comm_[static_cast<size_t>(i) * num_agents_ * def_.dim_c], num_agents_ * def_.dim_c, 0.0);
  }

  // SimpleEnv._execute_world_step's actions, then World.step. actions: every agent's, concatenated.
  void step(int i, const float* actions) {
    for (int k = 0; k < num_agents_; ++k) set_action(i, k, actions + action_offset_[k]);
    apply_environment_force(i);
    integrate(i);
  }

 private:
  static float clip01(float x) { return std::min(std::max(x, 0.0f), 1.0f); }

  // SimpleEnv._set_action (after ClipOutOfBoundsWrapper's clip for continuous actions), and the action part of
  // World.apply_action_force and World.update_agent_state: force_ holds u + 0.0, the comm state c + 0.0.
  void set_action(int i, int k, const float* a) {
    const Entity& e = def_.agents[k];
    double* force = &force_[static_cast<size_t>(k) * 2];
    double* c = &comm_[(static_cast<size_t>(i) * num_agents_ + k) * def_.dim_c];
    const double sensitivity = e.accel >= 0 ? e.accel : 5.0;
    if (continuous_) {
      int at = 0;
      if (e.movable) {
        // u[0] += a[2] - a[1]: float32 arithmetic, widened when added to float64 zeros
        double u0 = 0.0, u1 = 0.0;
        u0 += static_cast<double>(clip01(a[2]) - clip01(a[1]));
        u1 += static_cast<double>(clip01(a[4]) - clip01(a[3]));
        force[0] = u0 * sensitivity + 0.0;
        force[1] = u1 * sensitivity + 0.0;
        at = 5;
      }
      for (int j = 0; j < def_.dim_c; ++j)
        c[j] = e.silent ? 0.0 : static_cast<double>(clip01(a[at + j]) + 0.0f);
    } else {
      const int64_t n = num_actions(e);
      int64_t act = std::isnan(a[0]) ? 0 : std::clamp(static_cast<int64_t>(a[0]), int64_t{0}, n - 1);
      if (e.movable) {
        const int64_t move = act % 5;
        act /= 5;
        double u0 = 0.0, u1 = 0.0;
        if (move == 1) u0 = -1.0;
        if (move == 2) u0 = +1.0;
        if (move == 3) u1 = -1.0;
        if (move == 4) u1 = +1.0;
        force[0] = u0 * sensitivity + 0.0;
        force[1] = u1 * sensitivity + 0.0;
      }
      for (int j = 0; j < def_.dim_c; ++j) c[j] = (!e.silent && j == act) ? 1.0 : 0.0;
    }
    has_force_[k] = e.movable;
  }

  // World.apply_environment_force: the soft contact force of every colliding pair, added as mpe2 adds it
  // (f + p_force, starting from 0.0 for an entity without one yet).
  void apply_environment_force(int i) {
    for (int e = num_agents_; e < num_entities_; ++e) has_force_[e] = false;
    constexpr double kContactForce = 1e2, kMargin = 1e-3;
    for (int a = 0; a < num_entities_; ++a) {
      const Entity& ea = entities_[a];
      if (!ea.collide) continue;
      for (int b = a + 1; b < num_entities_; ++b) {
        const Entity& eb = entities_[b];
        if (!eb.collide) continue;
        const double* pa = pos(i, a);
        const double* pb = pos(i, b);
        const double dx = pa[0] - pb[0], dy = pa[1] - pb[1];
        const double d = std::sqrt(dx * dx + dy * dy);
        const double dist_min = ea.size + eb.size;
        const double penetration = logaddexp0(-(d - dist_min) / kMargin) * kMargin;
        const double fx = kContactForce * dx / d * penetration;
        const double fy = kContactForce * dy / d * penetration;
        if (ea.movable) add_force(a, fx, fy);
        if (eb.movable) add_force(b, -fx, -fy);
      }
    }
  }

  void add_force(int e, double fx, double fy) {
    double* f = &force_[static_cast<size_t>(e) * 2];
    if (!has_force_[e]) {
      f[0] = f[1] = 0.0;
      has_force_[e] = true;
    }
    f[0] = fx + f[0];
    f[1] = fy + f[1];
  }

  // World.integrate_state.
  void integrate(int i) {
    constexpr double kDt = 0.1, kKeep = 1 - 0.25;
    for (int e = 0; e < num_entities_; ++e) {
      const Entity& ent = entities_[e];
      if (!ent.movable) continue;
      double* p = pos(i, e);
      double* v = &vel_[(static_cast<size_t>(i) * num_entities_ + e) * 2];
      p[0] += v[0] * kDt;
      p[1] += v[1] * kDt;
      v[0] = v[0] * kKeep;
      v[1] = v[1] * kKeep;
      if (has_force_[e]) {
        const double* f = &force_[static_cast<size_t>(e) * 2];
        v[0] += (f[0] / ent.mass) * kDt;
        v[1] += (f[1] / ent.mass) * kDt;
      }
      if (ent.max_speed >= 0) {
        const double speed = std::sqrt(v[0] * v[0] + v[1] * v[1]);
        if (speed > ent.max_speed) {
          v[0] = v[0] / speed * ent.max_speed;
          v[1] = v[1] / speed * ent.max_speed;
        }
      }
    }
  }

  WorldDef def_;
  bool continuous_;
  int num_agents_, num_entities_;
  std::vector<Entity> entities_;   // agents, then landmarks (mpe2's world.entities)
  std::vector<int> action_offset_;  // where agent k's action starts in an env's action row
  std::vector<double> pos_, vel_;   // [env][entity][2]
  std::vector<double> comm_;        // [env][agent][dim_c]
  std::vector<double> force_;       // scratch of one step: [entity][2]
  std::vector<bool> has_force_;     // scratch: p_force[e] is not None
};

// What every scenario's env shares: the world, the per-agent rewards of the last step (info "agent_rewards"),
// and their sum as the step's reward.
class Scenario {
 public:
  using Obs = float;
  using Action = float;
  using Reward = double;

  // info "agent_rewards" (each agent's reward, float64) and "terminated" (int32) of the last step; 0 after a reset.
  void write_info(int i, std::byte* out) const noexcept {
    const size_t bytes = sizeof(double) * world_.num_agents();
    std::memcpy(out, &rewards_[static_cast<size_t>(i) * world_.num_agents()], bytes);
    const int32_t terminated = terminated_[i];
    std::memcpy(out + bytes, &terminated, sizeof(terminated));
  }

 protected:
  Scenario(int n, WorldDef def, const core::Options& o)
      : world_(n, std::move(def), o.flag("continuous_actions")),
        rewards_(static_cast<size_t>(n) * world_.num_agents()),
        cycles_(static_cast<size_t>(n)),
        terminated_(static_cast<size_t>(n)),
        near_ids_(world_.num_entities()),
        near_selected_(world_.num_entities()),
        near_dist_(world_.num_entities()),
        near_order_(world_.num_entities()),
        max_cycles_(o.integer("max_cycles")) {}

  double* rewards(int i) { return &rewards_[static_cast<size_t>(i) * world_.num_agents()]; }

  // What every reset_world leaves (before the scenario draws its positions): zero velocities, communication
  // and rewards.
  void begin_episode(int i) {
    world_.zero_state(i);
    std::fill_n(rewards(i), world_.num_agents(), 0.0);
    cycles_[i] = 0;
    terminated_[i] = 0;
  }

  // Entities first .. first + count - 1 placed at np_random.uniform(-bound, +bound, dim_p) each, in order.
  void place(int i, int first, int count, double bound, core::Pcg64& rng) {
    for (int e = first; e < first + count; ++e) {
      double* p = world_.pos(i, e);
      p[0] = rng.uniform(-bound, bound);
      p[1] = rng.uniform(-bound, bound);
    }
  }

  // The scenarios' is_collision(a, b): closer than the sum of their sizes.
  bool is_collision(int i, int a, int b) const {
    return dist(world_.pos(i, a), world_.pos(i, b)) < world_.entity(a).size + world_.entity(b).size;
  }

  // mpe2's partial observability (_mpe_utils/partial_observability.py, nearest_entities): of the `count`
  // entities `ids`, the (at most) n nearest to entity k, closest first, into out; returns how many. np.argsort of
  // np.linalg.norm: a stable order of the distances (numpy's norm is a BLAS dot, which may differ from this
  // sqrt by an ulp: only distances within an ulp of each other could be ordered differently).
  int nearest(int i, int k, const int* ids, int count, int n, int* out) const {
    double* d = near_dist_.data();
    int* order = near_order_.data();
    for (int j = 0; j < count; ++j) {
      d[j] = dist(world_.pos(i, ids[j]), world_.pos(i, k));
      order[j] = j;
      for (int m = j; m > 0 && d[order[m]] < d[order[m - 1]]; --m) std::swap(order[m], order[m - 1]);
    }
    const int m = std::min(n, count);
    for (int j = 0; j < m; ++j) out[j] = ids[order[j]];
    return m;
  }

  // padded_relative_positions: the positions of `selected` relative to entity k, then zeros up to n slots.
  float* padded_rel(float* out, int i, int k, const int* selected, int m, int n) const {
    for (int j = 0; j < m; ++j) out = rel(out, world_.pos(i, selected[j]), world_.pos(i, k));
    return std::fill_n(out, 2 * (n - m), 0.0f);
  }

  // The step's reward: the sum of the agents' rewards, in agent order. terminated (a scenario's is_terminal)
  // counts only before the last cycle: at max_cycles mpe2 truncates instead (the pool truncates there).
  core::BasicStepResult<double> result(int i, bool terminated) {
    const double* r = rewards(i);
    double total = 0.0;
    for (int k = 0; k < world_.num_agents(); ++k) total += r[k];
    ++cycles_[i];
    terminated_[i] = terminated && cycles_[i] < max_cycles_;
    return {total, terminated_[i] != 0};
  }

  // Writes b - a of two 2-vectors as float32 (an observation's relative position).
  static float* rel(float* out, const double* b, const double* a) {
    out[0] = static_cast<float>(b[0] - a[0]);
    out[1] = static_cast<float>(b[1] - a[1]);
    return out + 2;
  }
  static float* put(float* out, const double* v, int n) {
    for (int j = 0; j < n; ++j) out[j] = static_cast<float>(v[j]);
    return out + n;
  }

  World world_;
  std::vector<double> rewards_;  // [env][agent]
  std::vector<int> cycles_;      // steps of the episode so far
  std::vector<uint8_t> terminated_;  // the last step's
  mutable std::vector<int> near_ids_, near_selected_;  // scratch of the scenarios' partial observations
  mutable std::vector<double> near_dist_;  // scratch of nearest()
  mutable std::vector<int> near_order_;
  int max_cycles_;
};

}  // namespace fastvec::envs::mpe
