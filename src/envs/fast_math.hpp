#pragma once
// sin and cos for env physics, inlined so that a block's step loop stays
// tight: Cody-Waite reduction by pi/2 in three parts, then Taylor polynomials
// on [-pi/4, pi/4] (truncation error < 1e-19). Branch-free, so a block's
// step loop vectorizes. Within 2 ulps of libm for |x| <= 1e6 (checked by
// tests/cpp/core_tests.cpp); beyond, the reduction's error grows as
// |x| * 1e-16 (1e-7 at |x| = 1e9). glibc's sincos is a call per env and was
// 40% of a CartPole step.

#include <cmath>
#include <cstdint>

#include "core/simd.hpp"

namespace fastvec::envs {

// Rounds to the nearest integer (ties to even) for |x| < 2^51, inline and
// vectorizable where std::nearbyint is a libm call (no SSE4.1 at baseline).
inline double round_to_int(double x) {
  constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
  return (x + kMagic) - kMagic;
}

inline void sincos(double x, double* s, double* c) {
  const double k = round_to_int(x * 0.63661977236758134308);  // x * 2/pi
  double r = x - k * 1.57079632673412561417e+00;                 // pi/2, first 33 bits
  r = r - k * 6.07710050630396597660e-11;                        // next 33 bits
  r = r - k * 2.02226624871116645580e-21;                        // the rest
  const double r2 = r * r;
  double ps = -7.6471637318198164759e-13;  // -1/15!
  ps = ps * r2 + 1.6059043836821614599e-10;
  ps = ps * r2 - 2.5052108385441718775e-08;
  ps = ps * r2 + 2.7557319223985890653e-06;
  ps = ps * r2 - 1.9841269841269841270e-04;
  ps = ps * r2 + 8.3333333333333333333e-03;
  ps = ps * r2 - 1.6666666666666666667e-01;
  const double sin_r = r + r * r2 * ps;
  double pc = 4.7794773323873852974e-14;  // 1/16!
  pc = pc * r2 - 1.1470745597729724714e-11;
  pc = pc * r2 + 2.0876756987868098979e-09;
  pc = pc * r2 - 2.7557319223985890653e-07;
  pc = pc * r2 + 2.4801587301587301587e-05;
  pc = pc * r2 - 1.3888888888888888889e-03;
  pc = pc * r2 + 4.1666666666666666667e-02;
  const double cos_r = 1.0 - 0.5 * r2 + r2 * r2 * pc;
  // x = k pi/2 + r: rotate by the quadrant q = k mod 4 (in doubles: no
  // integer conversion, so huge and NaN inputs stay defined).
  const double q = k - 4.0 * round_to_int((k - 1.5) * 0.25);  // (k - 1.5) / 4 is never a tie
  const bool odd = q == 1.0 || q == 3.0;
  const double s1 = odd ? cos_r : sin_r;
  const double c1 = odd ? sin_r : cos_r;
  *s = q >= 2.0 ? -s1 : s1;
  *c = (q == 1.0 || q == 2.0) ? -c1 : c1;
}

inline double sin(double x) {
  double s, c;
  sincos(x, &s, &c);
  return s;
}

inline double cos(double x) {
  double s, c;
  sincos(x, &s, &c);
  return c;
}

}  // namespace fastvec::envs
