#pragma once
// sin and cos for env physics, inlined so that a block's step loop stays
// tight: Cody-Waite reduction by pi/2 in three parts, then Taylor polynomials
// on [-pi/4, pi/4] (truncation error < 1e-19). Within 1 ulp of libm for
// |x| <= 1e5 (checked by tests/cpp/core_tests.cpp); libm beyond. glibc's
// sincos is a call per env and was 40% of a CartPole step.

#include <cmath>
#include <cstdint>

namespace fastvec::envs {

inline void sincos(double x, double* s, double* c) {
  if (!(std::fabs(x) <= 1e5)) {  // also NaN
    *s = std::sin(x);
    *c = std::cos(x);
    return;
  }
  const double k = std::nearbyint(x * 0.63661977236758134308);  // x * 2/pi
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
  // x = k pi/2 + r: rotate by the quadrant k mod 4.
  const int64_t q = static_cast<int64_t>(k) & 3;
  const double s1 = (q & 1) ? cos_r : sin_r;
  const double c1 = (q & 1) ? sin_r : cos_r;
  *s = (q & 2) ? -s1 : s1;
  *c = ((q + 1) & 2) ? -c1 : c1;
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
