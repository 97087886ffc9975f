#pragma once
// The tables of numpy's normal ziggurat (Generator.standard_normal: 256 layers of equal area, after
// Marsaglia & Tsang, "The Ziggurat Method for Generating Random Variables", JSS 5(8), 2000), built here
// from their definition, not copied. Pcg64::standard_normal (rng.hpp) samples with them.
// Reference: random_standard_normal in numpy/random/src/distributions/distributions.c and the tables it
// includes (ki_double, wi_double, fi_double, ziggurat_nor_r, ziggurat_nor_inv_r in ziggurat_constants.h).
//
// Definition. With f(x) = exp(-x^2/2), the layer edges x_255 = r > x_254 > ... > x_1 > x_0 = 0 bound
// layers of equal area v: the base layer is the rectangle [0, r] x [0, f(r)] plus the tail beyond r, so
// v = r f(r) + integral_r^inf f, and each layer above it is x_i wide and f(x_{i-1}) - f(x_i) high:
//   x_{i-1} = sqrt(-2 log(f(x_i) + v / x_i)).
// r is the root for which these 255 steps close the top layer exactly at the apex x_0 = 0. Then
//   wi[i] = x_i / 2^52,  fi[i] = f(x_i),  ki[i] = round(2^52 x_{i-1} / x_i)  (i >= 1),
//   wi[0] = v / f(r) / 2^52,  ki[0] = round(2^52 r f(r) / v)  (the base layer, as a rectangle of area v).
//
// numpy's tables are not these values rounded, but the output of the program that generated them, and
// the recurrence magnifies a one-ulp difference at one step into tens of ulps at the top layers. So this
// replays that program: each +, *, /, sqrt in double, exp and log rounded to the nearest double (x87 long
// double results, 64-bit significand, rounded once: the closest call, exp at x_75, is 3 long-double ulps
// from a tie), ties to even in round(), starting from
//   - r: solved here, in long double, from the closure condition above; it rounds to numpy's
//     ZIGGURAT_NOR_R = 3.6541528853610088, and inv_r = 1 / r in double is numpy's ziggurat_nor_inv_r;
//   - v = 0.0049286732339746519: the area numpy's generator takes as input. It cannot be derived from r:
//     the exact v(r) rounds to a double 4 ulps higher, with which wi differs in some 130 layers.
// One step of numpy's generator was not correctly rounded: its exp(-x_38^2/2), whose exact value lies
// 0.498 ulp above a double, came out as the double above (a near tie its libm resolved upward). That
// value is fi[38] and it fed x_37, ..., x_1, so kNumpyRoundedUpLayer below takes it too.
// The result equals numpy's tables bit for bit; tests/core/test_rng_normal.py checks it against numpy itself.

#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace fastvec::core {

// Immutable after construction; shared by every generator in every thread.
struct NormalZiggurat {
  static constexpr int kLayers = 256;
  std::array<uint64_t, kLayers> ki{};  // a 52-bit draw rabs < ki[i] lies inside layer i's rectangle
  std::array<double, kLayers> wi{};    // x = rabs * wi[i]
  std::array<double, kLayers> fi{};    // f at the layer's outer edge, for the wedge test
  double r = 0;                        // where the tail starts
  double inv_r = 0;
};

namespace ziggurat_detail {

inline constexpr double kArea = 0.0049286732339746519;  // v, as numpy's generator has it (see above)
inline constexpr int kNumpyRoundedUpLayer = 38;
inline constexpr double kTwo52 = 4503599627370496.0;

// f(x) and log(p), rounded to the nearest double.
inline double density(double x) { return static_cast<double>(std::exp(static_cast<long double>(-0.5 * x * x))); }
inline double log_rn(double p) { return static_cast<double>(std::log(static_cast<long double>(p))); }

// > 0 when the layers of area v(r) reach the apex before the 256th layer's top (r too small), < 0 when
// they fall short of it (r too large).
inline long double closure_excess(long double r) {
  const long double v =
      r * std::exp(-r * r / 2) +
      std::sqrt(std::numbers::pi_v<long double> / 2) * std::erfc(r / std::numbers::sqrt2_v<long double>);
  long double x = r;
  for (int i = NormalZiggurat::kLayers - 1; i >= 2; --i) {
    const long double p = std::exp(-x * x / 2) + v / x;
    if (p >= 1) return 1;
    x = std::sqrt(-2 * std::log(p));
  }
  return std::exp(-x * x / 2) + v / x - 1;
}

// Bisection in long double down to adjacent values; the root lies 0.05 ulp (of double) from numpy's r.
inline double solve_tail_start() {
  long double lo = 3, hi = 4;
  for (;;) {
    const long double mid = (lo + hi) / 2;
    if (mid == lo || mid == hi) return static_cast<double>(mid);
    (closure_excess(mid) > 0 ? lo : hi) = mid;
  }
}

inline NormalZiggurat build_normal_ziggurat() {
  constexpr int n = NormalZiggurat::kLayers;
  NormalZiggurat z;
  z.r = solve_tail_start();
  z.inv_r = 1.0 / z.r;
  std::array<double, n> x{};  // x[0] = 0, the apex
  x[n - 1] = z.r;
  z.fi[n - 1] = density(z.r);
  for (int i = n - 1; i >= 2; --i) {
    x[i - 1] = std::sqrt(-2.0 * log_rn(z.fi[i] + kArea / x[i]));
    z.fi[i - 1] = density(x[i - 1]);
    if (i - 1 == kNumpyRoundedUpLayer) z.fi[i - 1] = std::nextafter(z.fi[i - 1], 1.0);
  }
  z.fi[0] = 1.0;
  for (int i = 1; i < n; ++i) {
    z.wi[i] = x[i] / kTwo52;
    z.ki[i] = static_cast<uint64_t>(std::nearbyint(x[i - 1] / x[i] * kTwo52));
  }
  z.wi[0] = kArea / z.fi[n - 1] / kTwo52;
  z.ki[0] = static_cast<uint64_t>(std::nearbyint(z.r * z.fi[n - 1] / kArea * kTwo52));
  return z;
}

}  // namespace ziggurat_detail

// The tables, built at the first call from any thread (a function-local static: thread-safe, once).
inline const NormalZiggurat& normal_ziggurat() {
  static const NormalZiggurat z = ziggurat_detail::build_normal_ziggurat();
  return z;
}

}  // namespace fastvec::core
