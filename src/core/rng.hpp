#pragma once
// Random numbers bit-compatible with numpy: SeedSequence, PCG64 and
// Generator.uniform and Generator.standard_normal. An env seeded here draws
// exactly what a gymnasium env seeded with the same SeedSequence draws, so
// reset distributions can be tested for equality, not just in distribution.
// Reference: numpy/random/bit_generator.pyx, numpy/random/src/pcg64/pcg64.h,
// numpy/random/src/distributions/distributions.c.

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ziggurat.hpp"

namespace fastvec::core {

// numpy.random.SeedSequence(entropy, spawn_key) reduced to what fastvec uses:
// integer entropy and an integer spawn key path.
class SeedSequence {
 public:
  SeedSequence(uint64_t entropy, const std::vector<uint32_t>& spawn_key) {
    std::vector<uint32_t> words = to_words(entropy);
    if (!spawn_key.empty() && words.size() < kPoolSize) words.resize(kPoolSize, 0);
    words.insert(words.end(), spawn_key.begin(), spawn_key.end());
    mix_entropy(words);
  }

  // generate_state(n_words, np.uint64)
  template <size_t N>
  std::array<uint64_t, N> generate_state_u64() const {
    std::array<uint64_t, N> out{};
    uint32_t hash_const = kInitB;
    for (size_t i = 0; i < 2 * N; ++i) {
      uint32_t v = pool_[i % kPoolSize];
      v ^= hash_const;
      hash_const *= kMultB;
      v *= hash_const;
      v ^= v >> kXShift;
      out[i / 2] |= static_cast<uint64_t>(v) << (32 * (i % 2));
    }
    return out;
  }

 private:
  static constexpr size_t kPoolSize = 4;
  static constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875;
  static constexpr uint32_t kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
  static constexpr uint32_t kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
  static constexpr int kXShift = 16;

  static std::vector<uint32_t> to_words(uint64_t x) {
    std::vector<uint32_t> w{static_cast<uint32_t>(x)};
    if (x >> 32) w.push_back(static_cast<uint32_t>(x >> 32));
    return w;
  }
  static uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
    value ^= hash_const;
    hash_const *= kMultA;
    value *= hash_const;
    value ^= value >> kXShift;
    return value;
  }
  static uint32_t mix(uint32_t x, uint32_t y) {
    uint32_t r = kMixMultL * x - kMixMultR * y;
    return r ^ (r >> kXShift);
  }
  void mix_entropy(const std::vector<uint32_t>& e) {
    uint32_t hash_const = kInitA;
    for (size_t i = 0; i < kPoolSize; ++i) pool_[i] = hashmix(i < e.size() ? e[i] : 0, hash_const);
    for (size_t s = 0; s < kPoolSize; ++s)
      for (size_t d = 0; d < kPoolSize; ++d)
        if (s != d) pool_[d] = mix(pool_[d], hashmix(pool_[s], hash_const));
    for (size_t s = kPoolSize; s < e.size(); ++s)
      for (size_t d = 0; d < kPoolSize; ++d) pool_[d] = mix(pool_[d], hashmix(e[s], hash_const));
  }

  std::array<uint32_t, kPoolSize> pool_{};
};

// numpy.random.PCG64 (XSL-RR 128/64) with numpy's seeding from a SeedSequence.
class Pcg64 {
 public:
  Pcg64() : Pcg64(SeedSequence(0, {})) {}
  explicit Pcg64(const SeedSequence& seq) {
    auto v = seq.generate_state_u64<4>();
    const unsigned __int128 init_state = (static_cast<unsigned __int128>(v[0]) << 64) | v[1];
    const unsigned __int128 init_seq = (static_cast<unsigned __int128>(v[2]) << 64) | v[3];
    state_ = 0;
    inc_ = (init_seq << 1) | 1;
    advance();
    state_ += init_state;
    advance();
  }
  // The generator numpy's PCG64 is after `bit_generator.state = {"state": {"state": state, "inc": inc}}`:
  // its next draw is the output of state * multiplier + inc.
  static Pcg64 from_state(unsigned __int128 state, unsigned __int128 inc) { return Pcg64(state, inc); }

  uint64_t next_u64() {
    advance();
    const uint64_t x = static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
    const unsigned rot = static_cast<unsigned>(state_ >> 122);
    return (x >> rot) | (x << ((64 - rot) & 63));
  }
  // numpy's next_uint32: half of a 64-bit draw, the other half kept for the next call (a 64-bit draw in
  // between does not use or clear it).
  uint32_t next_u32() {
    if (has_u32_) {
      has_u32_ = false;
      return u32_;
    }
    const uint64_t next = next_u64();
    has_u32_ = true;
    u32_ = static_cast<uint32_t>(next >> 32);
    return static_cast<uint32_t>(next);
  }
  // Generator.integers(high), one int64 draw in [0, high) for 1 <= high <= 2^32: Lemire's method on 32-bit
  // draws (numpy's buffered_bounded_lemire_uint32); 2^32 is one whole 32-bit draw, as numpy's (Lemire's method
  // would take it as a range of 0).
  int64_t integers(int64_t high) {
    if (high == 1) return 0;
    if (high == (int64_t{1} << 32)) return next_u32();
    const uint32_t rng_excl = static_cast<uint32_t>(high);
    uint64_t m = static_cast<uint64_t>(next_u32()) * rng_excl;
    uint32_t leftover = static_cast<uint32_t>(m);
    if (leftover < rng_excl) {
      const uint32_t threshold = (UINT32_MAX - (rng_excl - 1)) % rng_excl;
      while (leftover < threshold) {
        m = static_cast<uint64_t>(next_u32()) * rng_excl;
        leftover = static_cast<uint32_t>(m);
      }
    }
    return static_cast<int64_t>(m >> 32);
  }
  // Generator.integers(low, high), one int64 draw in [low, high) for 1 <= high - low <= 2^32: low + an
  // integers(high - low) draw (numpy's offset and range; a range of one value draws nothing). gymnasium's Box2D
  // envs draw these (LunarLander's wind phases, BipedalWalker's terrain).
  int64_t integers(int64_t low, int64_t high) { return low + integers(high - low); }
  // The seed of a generator made by single_rng (a reset with a seed of its own), once: an env whose reference
  // seeds a generator of its own with it (dm_control's task RandomState) takes it at that reset; nullopt for
  // any other generator, and after the first call.
  std::optional<uint64_t> take_seed() { return std::exchange(seed_, std::nullopt); }
  void set_seed(uint64_t seed) { seed_ = seed; }
  // Generator.random(): 53-bit double in [0, 1).
  double next_double() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  // Generator.uniform(low, high), one draw.
  double uniform(double low, double high) { return low + (high - low) * next_double(); }
  // Generator.standard_normal(), one draw: numpy's random_standard_normal, the 256-layer ziggurat with
  // the tables of ziggurat.hpp (shared, read-only, built once at the first draw in the process). One
  // 64-bit word gives the layer (8 bits), the sign (1) and the abscissa (52); 99% of draws end there.
  // The base layer's tail (Marsaglia's method, two uniforms per try) and the wedges (one uniform) draw
  // more, in numpy's order.
  double standard_normal() {
    const NormalZiggurat& z = normal_ziggurat();
    for (;;) {
      uint64_t r = next_u64();
      const int idx = static_cast<int>(r & 0xff);
      r >>= 8;
      const bool negative = r & 0x1;
      const uint64_t rabs = (r >> 1) & 0x000fffffffffffffULL;
      double x = static_cast<double>(rabs) * z.wi[idx];
      if (negative) x = -x;
      if (rabs < z.ki[idx]) return x;
      if (idx == 0) {
        for (;;) {
          const double xx = -z.inv_r * std::log1p(-next_double());
          const double yy = -std::log1p(-next_double());
          if (yy + yy > xx * xx) return ((rabs >> 8) & 0x1) ? -(z.r + xx) : z.r + xx;
        }
      }
      if ((z.fi[idx - 1] - z.fi[idx]) * next_double() + z.fi[idx] < std::exp(-0.5 * x * x)) return x;
    }
  }

 private:
  static constexpr unsigned __int128 kMult =
      (static_cast<unsigned __int128>(2549297995355413924ULL) << 64) | 4865540595714422341ULL;
  Pcg64(unsigned __int128 state, unsigned __int128 inc) : state_(state), inc_(inc) {}
  void advance() { state_ = state_ * kMult + inc_; }

  unsigned __int128 state_;
  unsigned __int128 inc_;
  bool has_u32_ = false;  // numpy's has_uint32 and uinteger (next_u32)
  uint32_t u32_ = 0;
  std::optional<uint64_t> seed_;  // take_seed's
};

// The generator env `env_index` of a pool seeded with `seed` uses:
// numpy's SeedSequence(seed).spawn(num_envs)[env_index].
inline Pcg64 env_rng(uint64_t seed, uint32_t env_index) { return Pcg64(SeedSequence(seed, {env_index})); }
// The generator of an env reset with its own seed, as gymnasium's env.reset(seed=seed).
inline Pcg64 single_rng(uint64_t seed) {
  Pcg64 rng(SeedSequence(seed, {}));
  rng.set_seed(seed);
  return rng;
}

}  // namespace fastvec::core
