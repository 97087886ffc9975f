#pragma once
// Taxi-v3 and Taxi-v4, ports of gymnasium/envs/toy_text/taxi.py (Dietterich 2000): the same transition table (dry,
// or is_rainy's intended/lateral moves), the fickle passenger's draws, and info's prob and action_mask. Taxi<3> is
// gymnasium 1.2's Taxi-v3; Taxi<4> gymnasium 1.3's Taxi-v4, which fixes is_rainy's lateral moves (their directions,
// walls, and none where the intended move is blocked) and adds rainy_probability and fickle_probability.

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/toy_text/tabular.hpp"

namespace fastvec::envs {

template <int kVersion>
class Taxi : public TabularEnv {
  static_assert(kVersion == 3 || kVersion == 4);

 public:
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    core::OptionTable t = {{.name = "is_rainy", .kind = K::kBool, .fallback = 0},
                           {.name = "fickle_passenger", .kind = K::kBool, .fallback = 0}};
    if constexpr (kVersion == 4) {
      t.push_back({.name = "rainy_probability", .kind = K::kReal, .fallback = 0.8, .low = 0.0, .high = 1.0});
      t.push_back({.name = "fickle_probability", .kind = K::kReal, .fallback = 0.3, .low = 0.0, .high = 1.0});
    }
    return t;
  }

  static core::Spec spec(const core::Options&) {
    core::Spec s = tabular_spec(500, 6);
    s.info.push_back({.name = "action_mask", .type = core::InfoField::Type::kInt8, .size = 6});
    s.render_state_size = 3;
    return s;
  }

  Taxi(int n, const core::Options& o)
      : TabularEnv(n, build(o.flag("is_rainy"), kVersion == 4 ? o.get("rainy_probability") : 0.8)),
        fickle_passenger_(o.flag("fickle_passenger")),
        fickle_probability_(kVersion == 4 ? o.get("fickle_probability") : 0.3), fickle_step_(n), orientation_(n) {}

  void reset(int i, core::Pcg64& rng) {
    TabularEnv::reset(i, rng);
    orientation_[i] = 0;
    fickle_step_[i] = fickle_passenger_ && rng.next_double() < fickle_probability_;
  }

  core::BasicStepResult<double> step(int i, const Action* a) noexcept {
    const int64_t from = s_[i];
    const core::BasicStepResult<double> result = TabularEnv::step(i, a);
    orientation_[i] = *a < 4 ? static_cast<int8_t>(*a) : orientation_[i];  // (a select: actions are random)
    if (fickle_passenger_ && fickle_step_[i]) {
      // The passenger, in the taxi since the last step, changes destination once the taxi has moved.
      const State was = decode(from), now = decode(s_[i]);
      if (was.pass == 4 && (now.row != was.row || now.col != was.col)) {
        fickle_step_[i] = false;
        int64_t k = rng_[i]->integers(3);  // np_random.choice of the three other destinations
        const int dest = static_cast<int>(k >= was.dest ? k + 1 : k);
        s_[i] = encode(now.row, now.col, now.pass, dest);
      }
    }
    return result;
  }

  // For gymnasium's class to draw: its s, lastaction (-1: None) and taxi_orientation (which its render sets to a
  // move's direction: the last move's, when every step is drawn).
  void write_render_state(int i, int64_t* out) const {
    TabularEnv::write_render_state(i, out);
    out[2] = orientation_[i];
  }

  // prob, then the reference's action_mask(s).
  void write_info(int i, std::byte* out) const noexcept {
    TabularEnv::write_info(i, out);
    std::memcpy(out + sizeof(double), kActionMasks[s_[i]].data(), 6);
  }

 private:
  struct State {
    int row, col, pass, dest;
  };
  static constexpr int kLocs[4][2] = {{0, 0}, {0, 4}, {4, 0}, {4, 3}};
  static constexpr const char* kMap[7] = {"+---------+", "|R: | : :G|", "| : | : : |", "| : : : : |",
                                          "| | : | : |", "|Y| : |B: |", "+---------+"};

  static constexpr int64_t encode(int row, int col, int pass, int dest) {
    return ((row * 5 + col) * 5 + pass) * 4 + dest;
  }
  static constexpr State decode(int64_t s) {
    const int i = static_cast<int>(s);
    return {i / 100, i / 20 % 5, i / 4 % 5, i % 4};
  }
  // The stand at (row, col), or -1.
  static constexpr int at(int row, int col) {
    for (int k = 0; k < 4; ++k)
      if (kLocs[k][0] == row && kLocs[k][1] == col) return k;
    return -1;
  }

  // The reference's action_mask(s) of each state: the moves that leave the cell, pickup where the passenger
  // waits, dropoff at any stand with the passenger aboard (a table: write_info's per-state tests showed).
  static constexpr std::array<std::array<int8_t, 6>, 500> kActionMasks = [] {
    std::array<std::array<int8_t, 6>, 500> masks{};
    for (int s = 0; s < 500; ++s) {
      const State t = decode(s);
      masks[s] = {t.row < 4, t.row > 0, t.col < 4 && kMap[t.row + 1][2 * t.col + 2] == ':',
                  t.col > 0 && kMap[t.row + 1][2 * t.col] == ':', t.pass < 4 && at(t.row, t.col) == t.pass,
                  t.pass == 4 && at(t.row, t.col) >= 0};
    }
    return masks;
  }();

  static std::shared_ptr<const TabularModel> build(bool rainy, double rainy_probability) {
    auto model = std::make_shared<TabularModel>(500, 6);
    std::vector<double> initial(500);
    for (int row = 0; row < 5; ++row)
      for (int col = 0; col < 5; ++col)
        for (int pass = 0; pass < 5; ++pass)
          for (int dest = 0; dest < 4; ++dest) {
            const int64_t s = encode(row, col, pass, dest);
            if (pass < 4 && pass != dest) initial[s] += 1;
            for (int a = 0; a < 6; ++a) {
              if (rainy) rainy_outcomes(*model, row, col, pass, dest, a, rainy_probability);
              else dry_outcomes(*model, row, col, pass, dest, a);
            }
          }
    for (double& p : initial) p /= 300.0;
    model->set_initial(initial);
    return model;
  }

  // The reference's _pickup and _dropoff: (new passenger index, reward, terminated).
  struct Exchange {
    int pass;
    double reward;
    bool terminated;
  };
  static Exchange pickup(int row, int col, int pass) {
    if (pass < 4 && at(row, col) == pass) return {4, -1, false};
    return {pass, -10, false};
  }
  static Exchange dropoff(int row, int col, int pass, int dest) {
    if (at(row, col) == dest && pass == 4) return {dest, 20, true};
    if (at(row, col) >= 0 && pass == 4) return {at(row, col), -1, false};
    return {pass, -10, false};
  }

  static void dry_outcomes(TabularModel& m, int row, int col, int pass, int dest, int a) {
    int new_row = row, new_col = col;
    Exchange x{pass, -1, false};
    if (a == 0) new_row = std::min(row + 1, 4);
    else if (a == 1) new_row = std::max(row - 1, 0);
    if (a == 2 && kMap[1 + row][2 * col + 2] == ':') new_col = std::min(col + 1, 4);
    else if (a == 3 && kMap[1 + row][2 * col] == ':') new_col = std::max(col - 1, 0);
    else if (a == 4) x = pickup(row, col, pass);
    else if (a == 5) x = dropoff(row, col, pass, dest);
    m.add(encode(row, col, pass, dest), a, {1.0, encode(new_row, new_col, x.pass, dest), x.reward, x.terminated});
  }

  // Where a rainy move of heading (dr, dc) lands the taxi. Taxi-v3's _calc_new_position checks the map's character
  // at `offset` (2 for the left turn, 0 for the right, as it is); Taxi-v4's stops east and west moves at the map's
  // walls, north and south only at its edge.
  static std::array<int, 2> moved(int row, int col, int dr, int dc, int offset) {
    const int r = std::max(0, std::min(row + dr, 4)), c = std::max(0, std::min(col + dc, 4));
    if constexpr (kVersion == 3) {
      if (kMap[1 + r][2 * c + offset] == ':') return {r, c};
      return {row, col};
    } else {
      if (dc == 1 && kMap[1 + r][2 * c] != ':') return {row, col};
      if (dc == -1 && kMap[1 + r][2 * c + 2] != ':') return {row, col};
      return {r, c};
    }
  }

  // The reference's _build_rainy_transitions: the intended move with probability p, each lateral one with the rest
  // halved (Taxi-v3: 0.8, 0.1, 0.1 as written; Taxi-v4: (1 - p) / 2, rounding and all). Its (forward, left, right)
  // of each heading: Taxi-v4 fixed v3's turns, and lets nothing drift where the intended move is blocked (a wall,
  // the edge: all three outcomes stay), where v3 let north and south moves at the edge drift.
  static void rainy_outcomes(TabularModel& m, int row, int col, int pass, int dest, int a, double p) {
    static constexpr int kMovesV3[4][3][2] = {{{1, 0}, {0, -1}, {0, 1}},
                                              {{-1, 0}, {0, -1}, {0, 1}},
                                              {{0, 1}, {1, 0}, {-1, 0}},
                                              {{0, -1}, {1, 0}, {-1, 0}}};
    static constexpr int kMovesV4[4][3][2] = {{{1, 0}, {0, 1}, {0, -1}},
                                              {{-1, 0}, {0, -1}, {0, 1}},
                                              {{0, 1}, {-1, 0}, {1, 0}},
                                              {{0, -1}, {1, 0}, {-1, 0}}};
    const auto& moves = kVersion == 3 ? kMovesV3 : kMovesV4;
    const bool vertical = kVersion == 3 ? (a == 0 || a == 1) : ((a == 0 && row < 4) || (a == 1 && row > 0));
    int new_row = row, new_col = col;
    std::array<int, 2> left{row, col}, right{row, col};
    Exchange x{pass, -1, false};
    if (vertical || (a == 2 && kMap[1 + row][2 * col + 2] == ':') || (a == 3 && kMap[1 + row][2 * col] == ':')) {
      new_row = std::max(0, std::min(row + moves[a][0][0], 4));
      new_col = std::max(0, std::min(col + moves[a][0][1], 4));
      left = moved(row, col, moves[a][1][0], moves[a][1][1], 2);
      right = moved(row, col, moves[a][2][0], moves[a][2][1], 0);
    } else if (a == 4) {
      x = pickup(row, col, pass);
    } else if (a == 5) {
      x = dropoff(row, col, pass, dest);
    }
    const int64_t s = encode(row, col, pass, dest), intended = encode(new_row, new_col, x.pass, dest);
    if (a <= 3) {
      const double lateral = kVersion == 3 ? 0.1 : (1.0 - p) / 2.0;
      m.add(s, a, {p, intended, -1, x.terminated});
      m.add(s, a, {lateral, encode(left[0], left[1], x.pass, dest), -1, x.terminated});
      m.add(s, a, {lateral, encode(right[0], right[1], x.pass, dest), -1, x.terminated});
    } else {
      m.add(s, a, {1.0, intended, x.reward, x.terminated});
    }
  }

  bool fickle_passenger_;
  double fickle_probability_;
  std::vector<uint8_t> fickle_step_;
  std::vector<int8_t> orientation_;
};

}  // namespace fastvec::envs
