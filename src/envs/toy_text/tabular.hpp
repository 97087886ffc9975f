#pragma once
// What FrozenLake, Taxi and CliffWalking share: gymnasium's DiscreteEnv shape, a table P[s][a] of up to three
// (probability, next state, reward, terminated) outcomes and an initial state distribution, each sampled as
// gymnasium/envs/toy_text/utils.py's categorical_sample does: argmax(cumsum(p) > np_random.random()), which is
// 0 when no partial sum exceeds the draw. The table is built once per pool (per block) and only read after.
//
// A step draws from the env's generator (the pool's, kept by the env at reset), so these envs have no
// step_block: the pool's tight block loop also steps envs about to be reset, whose generator must see only
// the reference's draws. Their blocks step env by env (still many envs to a block: they are cheap).

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "core/rng.hpp"
#include "core/spec.hpp"

namespace fastvec::envs {

struct Outcome {
  double prob;
  int64_t next;
  double reward;
  bool terminated;
};

class TabularModel {
 public:
  TabularModel(int num_states, int num_actions)
      : num_actions_(num_actions), cells_(static_cast<size_t>(num_states) * num_actions) {}

  // Appends an outcome to P[s][a], in the reference's order (at most three).
  void add(int64_t s, int a, Outcome o) {
    Cell& c = cells_[static_cast<size_t>(s) * num_actions_ + a];
    c.outcome[c.n] = o;
    c.cumsum[c.n] = c.n == 0 ? o.prob : c.cumsum[c.n - 1] + o.prob;  // np.cumsum: left to right
    ++c.n;
  }

  // The reference's initial_state_distrib (already normalised, as it divides it by its sum).
  void set_initial(const std::vector<double>& p) {
    initial_cumsum_.resize(p.size());
    double sum = 0;
    for (size_t k = 0; k < p.size(); ++k) initial_cumsum_[k] = sum += p[k];
  }

  int64_t sample_initial(core::Pcg64& rng) const {
    const double r = rng.next_double();
    const auto it = std::upper_bound(initial_cumsum_.begin(), initial_cumsum_.end(), r);  // first sum > r
    return it == initial_cumsum_.end() ? 0 : it - initial_cumsum_.begin();
  }

  // One draw, as the reference's step.
  const Outcome& sample(int64_t s, int a, core::Pcg64& rng) const {
    const Cell& c = cells_[static_cast<size_t>(s) * num_actions_ + a];
    const double r = rng.next_double();
    int k = 0;
    while (k < c.n && !(c.cumsum[k] > r)) ++k;
    return c.outcome[k == c.n ? 0 : k];
  }

 private:
  struct Cell {
    std::array<Outcome, 3> outcome{};
    std::array<double, 3> cumsum{};
    int n = 0;
  };
  int num_actions_;
  std::vector<Cell> cells_;
  std::vector<double> initial_cumsum_;
};

// The envs' common part: a block of n walkers over one shared table, each with its state s, the last draw's prob
// (info's "prob"), the last action and the pool's generator. An env derives from it, passing its table, and keeps
// only its options, its spec and its table's construction (Taxi adds to reset, step and the info).
class TabularEnv {
 public:
  using Obs = int64_t;
  using Action = int32_t;
  using Reward = double;

  void reset(int i, core::Pcg64& rng) {
    rng_[i] = &rng;  // the pool's generator of env i, at one address for the pool's life: steps draw from it too
    s_[i] = model_->sample_initial(rng);
    prob_[i] = 1.0;
    last_action_[i] = -1;
  }

  core::BasicStepResult<double> step(int i, const Action* a) noexcept {
    const Outcome& o = model_->sample(s_[i], *a, *rng_[i]);
    s_[i] = o.next;
    prob_[i] = o.prob;
    last_action_[i] = static_cast<int8_t>(*a);
    return {o.reward, o.terminated};
  }

  void write_obs(int i, Obs* out) const { *out = s_[i]; }
  void write_obs_block(int n, Obs* out) const noexcept { std::memcpy(out, s_.data(), sizeof(Obs) * n); }
  void write_info(int i, std::byte* out) const noexcept { std::memcpy(out, &prob_[i], sizeof(double)); }
  // For gymnasium's class to draw: its s and lastaction (-1: None).
  void write_render_state(int i, int64_t* out) const {
    out[0] = s_[i];
    out[1] = last_action_[i];
  }

 protected:
  TabularEnv(int n, std::shared_ptr<const TabularModel> model)
      : model_(std::move(model)), s_(n), prob_(n), last_action_(n), rng_(n) {}

  // The spec they share: Discrete(num_states) observations, Discrete(num_actions) actions, info's prob, and
  // write_render_state's two values.
  static core::Spec tabular_spec(int64_t num_states, int num_actions) {
    core::Spec s;
    s.obs_discrete = {num_states};
    s.obs_low = {0};
    s.obs_high = {static_cast<double>(num_states - 1)};
    s.num_actions = num_actions;
    s.step_cost_ns = 5;
    s.info = {{.name = "prob", .type = core::InfoField::Type::kFloat64}};
    s.info_masks = true;
    s.render_state_size = 2;
    return s;
  }

  std::shared_ptr<const TabularModel> model_;
  std::vector<Obs> s_;
  std::vector<double> prob_;
  std::vector<int8_t> last_action_;
  std::vector<core::Pcg64*> rng_;
};

}  // namespace fastvec::envs
