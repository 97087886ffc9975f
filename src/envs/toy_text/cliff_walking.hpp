#pragma once
// CliffWalking-v1 and CliffWalkingSlippery-v1, a port of gymnasium/envs/toy_text/cliffwalking.py (Sutton &
// Barto, Example 6.6): a 4x12 grid, the cliff sending the walker back to the start for -100.

#include <algorithm>
#include <memory>
#include <vector>

#include "core/options.hpp"
#include "core/spec.hpp"
#include "envs/toy_text/tabular.hpp"

namespace fastvec::envs {

class CliffWalking : public TabularEnv {
 public:
  static core::OptionTable options() { return table(false); }

  static core::Spec spec(const core::Options&) { return tabular_spec(kRows * kCols, 4); }

  CliffWalking(int n, const core::Options& o) : TabularEnv(n, build(o.flag("is_slippery"))) {}

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
};

// CliffWalkingSlippery-v1: is_slippery by default.
class CliffWalkingSlippery : public CliffWalking {
 public:
  using CliffWalking::CliffWalking;
  static core::OptionTable options() { return table(true); }
};

}  // namespace fastvec::envs
