#pragma once
// FrozenLake-v1 and FrozenLake8x8-v1, a port of gymnasium/envs/toy_text/frozen_lake.py: the same transition
// table (desc or map_name, is_slippery, success_rate), sampled with the same draws.

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/spec.hpp"
#include "envs/toy_text/tabular.hpp"

namespace fastvec::envs {

class FrozenLake : public TabularEnv {
 public:
  static core::OptionTable options() { return table("4x4"); }

  // The map's rows, from desc (its lines) or map_name; std::invalid_argument naming the option.
  static std::vector<std::string> map(const core::Options& o) {
    const std::string& desc = o.text("desc");
    std::vector<std::string> rows;
    if (!desc.empty()) {
      size_t at = 0;
      for (;;) {
        const size_t end = desc.find('\n', at);
        rows.push_back(desc.substr(at, end == std::string::npos ? std::string::npos : end - at));
        if (end == std::string::npos) break;
        at = end + 1;
      }
      bool start = false;
      for (const std::string& r : rows) {
        if (r.empty() || r.size() != rows[0].size())
          throw std::invalid_argument("desc must be rows of one length, got rows of " + std::to_string(r.size()) +
                                      " and " + std::to_string(rows[0].size()) + " tiles");
        if (r.find_first_not_of("SFHG") != std::string::npos)
          throw std::invalid_argument("desc must hold only the tiles S, F, H and G, got row '" + r + "'");
        start |= r.find('S') != std::string::npos;
      }
      if (!start) throw std::invalid_argument("desc must have a start tile 'S'");
      return rows;
    }
    const std::string& name = o.text("map_name");
    if (name == "4x4") return {"SFFF", "FHFH", "FFFH", "HFFG"};
    if (name == "8x8")
      return {"SFFFFFFF", "FFFFFFFF", "FFFHFFFF", "FFFFFHFF", "FFFHFFFF", "FHHFFFHF", "FHFFHFHF", "FFFHFFFG"};
    if (name.empty())
      throw std::invalid_argument(
          "map_name=None with desc=None (gymnasium's unseeded random map) is not supported natively: pass a desc "
          "(e.g. gymnasium.envs.toy_text.frozen_lake.generate_random_map(seed=...))");
    throw std::invalid_argument("map_name must be '4x4' or '8x8' (or give desc), got '" + name + "'");
  }

  // The rewards for reaching G, H and F (or S) tiles; "" is gymnasium's default (1, 0, 0).
  static std::array<double, 3> reward_schedule(const core::Options& o) {
    const std::string& text = o.text("reward_schedule");
    if (text.empty()) return {1, 0, 0};
    std::array<double, 3> out{};
    const char* at = text.c_str();
    for (size_t k = 0; k < out.size(); ++k) {
      char* end = nullptr;
      out[k] = std::strtod(at, &end);
      if (end == at || *end != (k + 1 < out.size() ? ',' : '\0'))
        throw std::invalid_argument("reward_schedule must be 3 numbers (for G, H and F tiles), got (" + text + ")");
      at = end + 1;
    }
    return out;
  }

  static core::Spec spec(const core::Options& o) {
    const std::vector<std::string> rows = map(o);
    (void)reward_schedule(o);  // checked when the pool is made
    return tabular_spec(static_cast<int64_t>(rows.size() * rows[0].size()), 4);
  }

  FrozenLake(int n, const core::Options& o) : TabularEnv(n, build(o)) {}

 protected:
  static core::OptionTable table(const char* map_name) {
    using K = core::OptionSpec::Kind;
    return {{.name = "desc", .kind = K::kText},
            {.name = "map_name", .kind = K::kText, .text_fallback = map_name},
            {.name = "is_slippery", .kind = K::kBool, .fallback = 1},
            {.name = "success_rate", .kind = K::kReal, .fallback = 1.0 / 3.0, .low = 0.0, .high = 1.0},
            {.name = "reward_schedule", .kind = K::kText}};
  }

 private:
  static std::shared_ptr<const TabularModel> build(const core::Options& o) {
    const std::vector<std::string> desc = map(o);
    const int nrow = static_cast<int>(desc.size()), ncol = static_cast<int>(desc[0].size());
    const bool slippery = o.flag("is_slippery");
    const double success_rate = o.get("success_rate"), fail_rate = (1.0 - success_rate) / 2.0;
    const std::array<double, 3> rewards = reward_schedule(o);
    auto model = std::make_shared<TabularModel>(nrow * ncol, 4);
    auto outcome = [&](int row, int col, int a, double p) {
      if (a == 0) col = std::max(col - 1, 0);  // LEFT, DOWN, RIGHT, UP
      else if (a == 1) row = std::min(row + 1, nrow - 1);
      else if (a == 2) col = std::min(col + 1, ncol - 1);
      else row = std::max(row - 1, 0);
      const char letter = desc[row][col];
      const int k = letter == 'G' ? 0 : letter == 'H' ? 1 : 2;
      return Outcome{p, row * ncol + col, rewards[k], letter == 'G' || letter == 'H'};
    };
    std::vector<double> initial(static_cast<size_t>(nrow * ncol));
    double starts = 0;
    for (int row = 0; row < nrow; ++row)
      for (int col = 0; col < ncol; ++col) {
        const int s = row * ncol + col;
        const char letter = desc[row][col];
        if (letter == 'S') initial[s] = 1, ++starts;
        for (int a = 0; a < 4; ++a) {
          if (letter == 'G' || letter == 'H') {
            model->add(s, a, {1.0, s, 0, true});
          } else if (slippery) {
            for (int b : {(a + 3) % 4, a, (a + 1) % 4}) model->add(s, a, outcome(row, col, b, b == a ? success_rate : fail_rate));
          } else {
            model->add(s, a, outcome(row, col, a, 1.0));
          }
        }
      }
    for (double& p : initial) p /= starts;
    model->set_initial(initial);
    return model;
  }
};

// FrozenLake8x8-v1: map_name "8x8" by default.
class FrozenLake8x8 : public FrozenLake {
 public:
  using FrozenLake::FrozenLake;
  static core::OptionTable options() { return table("8x8"); }
};

}  // namespace fastvec::envs
