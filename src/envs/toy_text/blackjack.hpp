#pragma once
// Blackjack-v1, a port of gymnasium/envs/toy_text/blackjack.py (Sutton & Barto, Example 5.1): cards drawn
// with replacement from one suit, as the reference draws them (np_random.choice(deck)), and its draws of the
// dealer's face-up card's suit and face, which only its frames show, kept for them.

#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"

namespace fastvec::envs {

class Blackjack {
 public:
  using Obs = int64_t;
  using Action = int32_t;
  using Reward = double;

  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return {{.name = "natural", .kind = K::kBool, .fallback = 0}, {.name = "sab", .kind = K::kBool, .fallback = 1}};
  }

  // Tuple(Discrete(32), Discrete(11), Discrete(2)): the player's sum, the dealer's card, a usable ace.
  static core::Spec spec(const core::Options&) {
    core::Spec s;
    s.obs_shape = {3};
    s.obs_fields = {{"player_sum", {}}, {"dealer_card", {}}, {"usable_ace", {}}};
    s.obs_discrete = {32, 11, 2};
    s.obs_tuple = true;
    s.obs_low = {0, 0, 0};
    s.obs_high = {31, 10, 1};
    s.num_actions = 2;
    s.step_cost_ns = 40;  // about twice CartPole's (its 20), measured: most steps deal a new hand
    s.render_state_size = 5;
    return s;
  }

  Blackjack(int n, const core::Options& o)
      : natural_(o.flag("natural")), sab_(o.flag("sab")), player_(n), dealer_(n), suit_(n), face_(n), rng_(n) {}

  void reset(int i, core::Pcg64& rng) {
    rng_[i] = &rng;  // the pool's generator of env i, at one address for the pool's life: steps draw from it too
    dealer_[i] = {};
    player_[i] = {};
    dealer_[i].draw(rng);
    dealer_[i].draw(rng);
    player_[i].draw(rng);
    player_[i].draw(rng);
    suit_[i] = static_cast<int8_t>(rng.integers(4));  // np_random.choice(["C", "D", "H", "S"])
    face_[i] = dealer_[i].first == 10 ? static_cast<int8_t>(rng.integers(3)) : -1;  // choice(["J", "Q", "K"])
  }

  core::BasicStepResult<double> step(int i, const Action* a) noexcept {
    core::Pcg64& rng = *rng_[i];
    Hand& player = player_[i];
    if (*a != 0) {  // hit
      player.draw(rng);
      return player.bust() ? core::BasicStepResult<double>{-1.0, true} : core::BasicStepResult<double>{0.0, false};
    }
    Hand& dealer = dealer_[i];  // stick: the dealer plays out its hand
    while (dealer.total() < 17) dealer.draw(rng);
    const int p = player.score(), d = dealer.score();
    double reward = static_cast<double>(p > d) - static_cast<double>(p < d);
    if (sab_ && player.natural() && !dealer.natural())
      reward = 1.0;
    else if (!sab_ && natural_ && player.natural() && reward == 1.0)
      reward = 1.5;
    return {reward, true};
  }

  void write_obs(int i, Obs* out) const {
    out[0] = player_[i].total();
    out[1] = dealer_[i].first;
    out[2] = player_[i].usable_ace();
  }

  // For gymnasium's class to draw: the observation, the dealer's face-up card's suit (0..3: C, D, H, S) and,
  // for a 10, its face (0..2: J, Q, K; else -1).
  void write_render_state(int i, int64_t* out) const {
    write_obs(i, out);
    out[3] = suit_[i];
    out[4] = face_[i];
  }

 private:
  // A hand as the reference's functions see its list of cards.
  struct Hand {
    int sum = 0, cards = 0, first = 0;
    bool ace = false;
    void draw(core::Pcg64& rng) {
      static constexpr int kDeck[13] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10};
      const int card = kDeck[rng.integers(13)];  // np_random.choice(deck)
      if (cards++ == 0) first = card;
      sum += card;
      ace |= card == 1;
    }
    int usable_ace() const { return ace && sum + 10 <= 21; }
    int total() const { return usable_ace() ? sum + 10 : sum; }
    bool bust() const { return total() > 21; }
    int score() const { return bust() ? 0 : total(); }
    bool natural() const { return cards == 2 && ace && sum == 11; }
  };

  bool natural_, sab_;
  std::vector<Hand> player_, dealer_;
  std::vector<int8_t> suit_, face_;
  std::vector<core::Pcg64*> rng_;
};

}  // namespace fastvec::envs
