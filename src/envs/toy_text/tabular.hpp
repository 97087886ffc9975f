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
#include <vector>

#include "core/rng.hpp"

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

}  // namespace fastvec::envs
