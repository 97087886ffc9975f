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
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
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
      : num_actions_(num_actions),
        cells_(static_cast<size_t>(num_states) * num_actions),
        filled_(cells_.size()) {}

  // Appends an outcome to P[s][a], in the reference's order (at most three).
  void add(int64_t s, int a, Outcome o) {
    const size_t at = static_cast<size_t>(s) * num_actions_ + a;
    Cell& c = cells_[at];
    auto& [n, sum] = filled_[at];
    if (n == 3 || !(o.prob >= 0)) throw std::logic_error("a tabular cell takes up to 3 outcomes, each prob >= 0");
    sum = n == 0 ? o.prob : sum + o.prob;  // np.cumsum: left to right
    c.below[n] = threshold(sum);
    c.outcome[n] = {static_cast<int32_t>(o.next), index(probs_, o.prob), index(rewards_, o.reward), o.terminated};
    ++n;
    c.outcome[n] = c.outcome[0];  // argmax of all-false: the first outcome
  }

  // The reference's initial_state_distrib (already normalised, as it divides it by its sum).
  void set_initial(const std::vector<double>& p) {
    double sum = 0;
    for (size_t k = 0; k < p.size(); ++k) {
      sum += p[k];
      if (p[k] > 0) {  // a state of probability 0 is never the first whose sum exceeds the draw
        initial_below_.push_back(threshold(sum));
        initial_state_.push_back(static_cast<int64_t>(k));
      }
    }
  }

  int64_t sample_initial(core::Pcg64& rng) const {
    const uint64_t m = rng.next_u64() >> 11;  // random()'s 53 bits: random() = m / 2^53
    const auto it = std::upper_bound(initial_below_.begin(), initial_below_.end(), m);  // first sum > random()
    return it == initial_below_.end() ? 0 : initial_state_[it - initial_below_.begin()];
  }

  struct Drawn {
    int64_t next;
    double prob, reward;
    bool terminated;
  };

  // One draw, as the reference's step. Branch-free: the outcome is the number of partial sums at or below the
  // draw (they only grow), which is the count of outcomes when none exceeds it: the slot after the last repeats
  // the first.
  Drawn sample(int64_t s, int a, core::Pcg64& rng) const {
    const Cell& c = cells_[static_cast<size_t>(s) * num_actions_ + a];
    const uint64_t m = rng.next_u64() >> 11;
    const int k = (m >= c.below[0]) + (m >= c.below[1]) + (m >= c.below[2]);
    const Packed& o = c.outcome[k];
    return {o.next, probs_[o.prob], rewards_[o.reward], o.terminated};
  }

 private:
  // An outcome, its prob and reward as indices into the model's few distinct values: a cell fits a cache line
  // (Taxi's 3000 cells, 192 KiB, stay in L2).
  struct Packed {
    int32_t next;
    uint8_t prob, reward;
    bool terminated;
  };
  struct alignas(64) Cell {
    // below[k]: the draws m (random() = m / 2^53) with m < below[k] are those below partial sum k; unused
    // outcomes never (UINT64_MAX).
    std::array<uint64_t, 3> below{UINT64_MAX, UINT64_MAX, UINT64_MAX};
    std::array<Packed, 4> outcome{};
  };
  static_assert(sizeof(Cell) == 64);

  // sum > m / 2^53 exactly when m < ceil(sum * 2^53) (a power-of-two scaling is exact; m is an integer).
  static uint64_t threshold(double sum) {
    const double t = std::ceil(sum * 9007199254740992.0);
    return t >= 18446744073709551616.0 ? UINT64_MAX : static_cast<uint64_t>(t);
  }
  static uint8_t index(std::vector<double>& values, double v) {
    for (size_t k = 0; k < values.size(); ++k)
      if (std::memcmp(&values[k], &v, sizeof v) == 0) return static_cast<uint8_t>(k);
    if (values.size() == 256) throw std::logic_error("a tabular model takes up to 256 distinct values");
    values.push_back(v);
    return static_cast<uint8_t>(values.size() - 1);
  }

  int num_actions_;
  std::vector<Cell> cells_;
  std::vector<std::pair<int, double>> filled_;  // per cell, for add: its outcomes so far and their sum
  std::vector<double> probs_, rewards_;
  std::vector<uint64_t> initial_below_;  // threshold() of the partial sums at states of positive probability
  std::vector<int64_t> initial_state_;
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
    const TabularModel::Drawn o = model_->sample(s_[i], *a, *rng_[i]);
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
    s.step_cost_ns = 20;  // about CartPole's (its 20), measured: 4096 envs take two blocks or more
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
