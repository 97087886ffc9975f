#pragma once
// numpy.random.RandomState, bit for bit: MT19937 with numpy's legacy samplers (frozen since numpy 1.16), the
// generator every dm_control.suite task draws from (dm_control 1.0.52, task_kwargs={"random": seed}).
// Reference: numpy/random/mtrand.pyx (RandomState), _mt19937.pyx (_legacy_seeding), src/mt19937/mt19937.{c,h},
// src/legacy/legacy-distributions.c (legacy_gauss, legacy_normal), src/distributions/distributions.c
// (random_uniform, random_bounded_uint64_fill) and _bounded_integers.pyx.in (_rand_int64).
//
// Seeding: np.random.RandomState(seed) takes a Python int, a numpy integer or a 0-d/1-element array alike
// (operator.index after squeeze) and runs init_genrand(seed); it raises ValueError outside [0, 2**32 - 1].
// A list or a longer array of ints (even [seed]) goes through init_by_array instead and gives another stream;
// dm_control passes ints. So the seed here is a uint32_t: every value is one numpy accepts, and the Python layer
// rejects the rest before they get here.
//
// The draws dm_control.suite makes (grep "random\." over suite/**/*.py), and what each is here:
//   uniform(low, high)                   uniform(low, high). numpy computes high - low first, then
//                                        low + range * random_sample(); low == high still draws.
//   uniform(low_array, high_array)       one uniform(low[i], high[i]) per element, in C order
//     (manipulator, stacker, cheetah)
//   uniform(low, high, size=k or shape)  k successive uniform(low, high), in C order
//     (acrobot, cartpole, quadruped, swimmer)
//   randn(), randn(k)                    k successive standard_normal() (cartpole, dog, fish, point_mass,
//                                        quadruped, lqr; randomizers: randn(4) for ball joints, randn(3) in
//                                        random_limited_quaternion)
//   rand(), rand(k)                      k successive random_sample() (swimmer; randomizers: rand(4) for free
//                                        joints, rand() in random_limited_quaternion after its randn(3))
//   randint(n)              (stacker)    randint(0, n)
//   choice(list, p=p)       (manipulator: p = [.1, .1, 1 - .1 - .1] as Python evaluates it)   choice(p)
//   normal(scale=array)     (wrappers/action_noise)   one normal(0.0, scale[i]) per element
// None of these draws more or fewer words than the scalar calls in sequence; tests/core/test_random_state.py
// checks each vector form against its scalar sequence here.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace fastvec::envs::dm_control {

class RandomState {
 public:
  static constexpr size_t kStateWords = 624;

  // np.random.RandomState(seed): init_genrand(seed), no cached gauss.
  explicit RandomState(uint32_t seed = 0) { this->seed(seed); }

  // RandomState.seed(seed): as a new RandomState(seed), the cached gauss cleared too.
  void seed(uint32_t seed) {
    key_[0] = seed;
    for (uint32_t i = 1; i < kN; ++i) key_[i] = 1812433253U * (key_[i - 1] ^ (key_[i - 1] >> 30)) + i;
    pos_ = kN;
    has_gauss_ = false;
    gauss_ = 0.0;
  }

  // RandomState.set_state(("MT19937", key, pos, has_gauss, cached_gaussian)), which get_state() returns:
  // the next word comes from key[pos] (pos == 624: regenerate first). Requires pos <= 624 (numpy does not
  // check it; the caller does).
  void set_state(std::span<const uint32_t, kStateWords> key, uint32_t pos, bool has_gauss = false,
                 double gauss = 0.0) {
    for (size_t i = 0; i < kN; ++i) key_[i] = key[i];
    pos_ = pos;
    has_gauss_ = has_gauss;
    gauss_ = gauss;
  }

  // MT19937 genrand_int32 (the bit generator's next_uint32 and random_raw).
  uint32_t next_uint32() {
    if (pos_ == kN) regenerate();
    uint32_t y = key_[pos_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= y >> 18;
    return y;
  }

  // The bit generator's next_uint64: the first 32-bit word is the high half.
  uint64_t next_uint64() {
    const uint64_t high = next_uint32();
    return (high << 32) | next_uint32();
  }

  // random_sample() / rand(): 27 + 26 bits of two words, a double in [0, 1). Leaves the cached gauss alone.
  double random_sample() {
    const int32_t a = static_cast<int32_t>(next_uint32() >> 5);
    const int32_t b = static_cast<int32_t>(next_uint32() >> 6);
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  // uniform(low, high), one draw; low > high and low == high are allowed, as in numpy. The range must be
  // finite (numpy raises OverflowError otherwise; the caller checks).
  double uniform(double low, double high) {
    const double range = high - low;
    return low + range * random_sample();
  }

  // standard_normal() / randn(): the polar method, two values per accepted pair; the second is kept for the
  // next call (numpy's has_gauss/gauss), which only seed() clears.
  double standard_normal() {
    if (has_gauss_) {
      has_gauss_ = false;
      const double cached = gauss_;
      gauss_ = 0.0;
      return cached;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * random_sample() - 1.0;
      x2 = 2.0 * random_sample() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    gauss_ = f * x1;
    has_gauss_ = true;
    return f * x2;
  }

  // normal(loc, scale): loc + scale * standard_normal(); scale == 0 still draws. scale >= 0 (numpy raises
  // ValueError otherwise; the caller checks).
  double normal(double loc, double scale) { return loc + scale * standard_normal(); }

  // randint(low, high), high exclusive, numpy's default dtype (int64 on Linux): masked rejection on
  // rng = high - 1 - low with the smallest all-ones mask covering rng, on 32-bit words when rng fits in 32
  // bits and 64-bit words otherwise; rng == 0 draws nothing. Requires low < high (numpy raises ValueError
  // otherwise; the caller checks).
  int64_t randint(int64_t low, int64_t high) {
    const uint64_t off = static_cast<uint64_t>(low);
    const uint64_t rng = static_cast<uint64_t>(high) - off - 1;
    if (rng == 0) return low;
    uint64_t value;
    if (rng <= 0xffffffffULL) {
      const uint32_t rng32 = static_cast<uint32_t>(rng);
      const uint32_t mask = static_cast<uint32_t>(mask_covering(rng));
      uint32_t v;
      while ((v = next_uint32() & mask) > rng32) {
      }
      value = v;
    } else {
      const uint64_t mask = mask_covering(rng);
      while ((value = next_uint64() & mask) > rng) {
      }
    }
    return static_cast<int64_t>(off + value);
  }

  // randint(n), the one-argument form.
  int64_t randint(int64_t high) { return randint(0, high); }

  // choice(n) (or choice of a length-n sequence), no p, replace=True: randint(0, n). Requires n >= 1.
  int64_t choice(int64_t n) { return randint(0, n); }

  // choice(a, p=p), replace=True, one index: cdf = cumsum(p) / cdf[-1] (summed in order, as numpy's cumsum),
  // then the first index whose cdf exceeds one random_sample() (searchsorted side="right"). Requires p
  // non-empty, non-negative and summing to 1 within numpy's tolerance (the caller checks).
  int64_t choice(std::span<const double> p) {
    double total = 0.0;
    for (double pi : p) total += pi;
    const double u = random_sample();
    double cumulative = 0.0;
    for (size_t i = 0; i < p.size(); ++i) {
      cumulative += p[i];
      if (cumulative / total > u) return static_cast<int64_t>(i);
    }
    return static_cast<int64_t>(p.size());  // unreachable for valid p: cdf[-1] == 1 > u
  }

 private:
  static constexpr uint32_t kN = kStateWords, kM = 397;
  static constexpr uint32_t kMatrixA = 0x9908b0dfU, kUpperMask = 0x80000000U, kLowerMask = 0x7fffffffU;

  static uint64_t mask_covering(uint64_t max) {
    uint64_t mask = max;
    for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
    return mask;
  }

  // All 624 words at once, as numpy's mt19937_gen (same words as the reference's one at a time).
  void regenerate() {
    const auto twist = [](uint32_t a, uint32_t b, uint32_t m) {
      const uint32_t y = (a & kUpperMask) | (b & kLowerMask);
      return m ^ (y >> 1) ^ ((0U - (y & 1U)) & kMatrixA);
    };
    uint32_t i = 0;
    for (; i < kN - kM; ++i) key_[i] = twist(key_[i], key_[i + 1], key_[i + kM]);
    for (; i < kN - 1; ++i) key_[i] = twist(key_[i], key_[i + 1], key_[i + kM - kN]);
    key_[kN - 1] = twist(key_[kN - 1], key_[0], key_[kM - 1]);
    pos_ = 0;
  }

  uint32_t key_[kN];
  uint32_t pos_;
  bool has_gauss_;
  double gauss_;
};

}  // namespace fastvec::envs::dm_control
