#pragma once
// CliffWalking-v1 and CliffWalkingSlippery-v1, a port of gymnasium/envs/toy_text/cliffwalking.py (Sutton &
// Barto, Example 6.6): a 4x12 grid, the cliff sending the walker back to the start for -100.

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/toy_text/tabular.hpp"

namespace fastvec::envs {

class CliffWalking {
 public:
  using Obs = int64_t;
  using Action = int32_t;
  using Reward = double;

  static core::OptionTable options() { return table(false); }

  static core::Spec spec(const core::Options&) {
    core::Spec s;
    s.obs_discrete = {kRows * kCols};
    s.obs_low = {0};
    s.obs_high = {kRows * kCols - 1};
    s.num_actions = 4;
    s.step_cost_ns = 5;
    s.info = {{.name = "prob", .type = core::InfoField::Type::kFloat64}};
    s.info_masks = true;
    s.render_state_size = 2;
    return s;
  }

  CliffWalking(int n, const core::Options& o) : model_(build(o.flag("is_slippery"))), s_(n), prob_(n), last_action_(n), rng_(n) {}

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
    last_action_[i] = *a;
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
  static core::OptionTable table(bool slippery) {
    return {{.name = "is_slippery", .kind = core::OptionSpec::Kind::kBool, .fallback = slippery ? 1.0 : 0.0}};
  }

 private:
  static constexpr int kRows = 4, kCols = 12, kStart = 3 * kCols;

  static std::shared_ptr<const TabularModel> build(bool slippery) {
    static constexpr int kDelta[4][2] = {{-1, 0}, {0, 1}, {1, 0}, {0, -1}};  // UP, RIGHT, DOWN, LEFT
    auto model = std::make_shared<TabularModel>(kRows * kCols, 4);
    for (int s = 0; s < kRows * kCols; ++s)
      for (int a = 0; a < 4; ++a) {
        const int n = slippery ? 3 : 1;
        for (int k = 0; k < n; ++k) {
          const int b = slippery ? (a + 3 + k) % 4 : a;  // (a - 1) % 4, a, (a + 1) % 4
          const int row = std::clamp(s / kCols + kDelta[b][0], 0, kRows - 1);
          const int col = std::clamp(s % kCols + kDelta[b][1], 0, kCols - 1);
          const double p = 1.0 / n;
          if (row == kRows - 1 && col >= 1 && col <= kCols - 2)  // the cliff
            model->add(s, a, {p, kStart, -100, false});
          else
            model->add(s, a, {p, row * kCols + col, -1, row == kRows - 1 && col == kCols - 1});
        }
      }
    std::vector<double> initial(kRows * kCols);
    initial[kStart] = 1.0;
    model->set_initial(initial);
    return model;
  }

  std::shared_ptr<const TabularModel> model_;
  std::vector<Obs> s_;
  std::vector<double> prob_;
  std::vector<int8_t> last_action_;
  std::vector<core::Pcg64*> rng_;
};

// CliffWalkingSlippery-v1: is_slippery by default.
class CliffWalkingSlippery : public CliffWalking {
 public:
  using CliffWalking::CliffWalking;
  static core::OptionTable options() { return table(true); }
};

}  // namespace fastvec::envs
