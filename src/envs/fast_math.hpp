#pragma once
// sin, cos and x**2 for env physics, bitwise equal to the libm calls that
// gymnasium's reference makes (NumPy's float64 np.sin/np.cos and math.cos
// call libm's sin/cos; a float64 scalar's ** calls libm's pow), inline, and
// for a block's step loop vectorized (SinCosBlock).
//
// libm's sin and cos are not correctly rounded (glibc: up to ~0.516 ulp,
// see kSlack below). So libm's result is the correctly rounded one wherever
// the true value lies farther than (its error - 0.5) ulp from a rounding
// midpoint. We compute sin and cos to ~2^-64 relative (a double-double
// table method; near 0, Taylor series with exact leading terms), take our
// rounding where that holds with margin, and call libm for the rest (0.5-3%
// of a CartPole's angles, ~12% of arbitrary ones). A polynomial rounded once,
// as fastvec used before, differs from libm in the last bit for ~25% of cos
// values, and a balanced CartPole drifted off gymnasium's in ~150 steps.

#include <algorithm>
#include <bit>
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

namespace detail {

// sin(j/64) and cos(j/64), j = 0..51, as unevaluated sums hi + lo (106
// bits; mpmath).
struct alignas(32) SinCosEntry {
  double sin_hi, sin_lo, cos_hi, cos_lo;
};
inline constexpr SinCosEntry kSinCosTable[52] = {
    {0x0.0p+0, 0x0.0p+0, 0x1.0000000000000p+0, 0x0.0p+0},  // 0/64
    {0x1.fffaaaaeeeed5p-7, -0x1.2ab639a9f0776p-63, 0x1.fff000155549fp-1, 0x1.28a28a03a5ef3p-55},  // 1/64
    {0x1.ffeaaaeeee86fp-6, -0x1.cd406fb224ae2p-60, 0x1.ffc00155527d3p-1, -0x1.3b54492d89b5bp-55},  // 2/64
    {0x1.7fdc01032fba9p-5, -0x1.599bdf46e997ap-59, 0x1.ff7006bfdf99fp-1, -0x1.8b3b560648d5fp-56},  // 3/64
    {0x1.ffaaaeeed4edbp-5, -0x1.2d16d32684b69p-59, 0x1.ff0015549f4d3p-1, 0x1.328387b99426fp-55},  // 4/64
    {0x1.3facb12d1755bp-4, -0x1.921915299468bp-58, 0x1.fe7034129ef6fp-1, -0x1.cbf4337c96f97p-57},  // 5/64
    {0x1.7f701032550e4p-4, 0x1.afc2d1800501ap-60, 0x1.fdc06bf7e6b9bp-1, 0x1.31902b535f8dbp-55},  // 6/64
    {0x1.bf1b78568391dp-4, 0x1.e91841dea4cc8p-58, 0x1.fcf0c800e99b1p-1, 0x1.ea3d786d186acp-57},  // 7/64
    {0x1.feaaeee86ee36p-4, -0x1.afcb2bcc6f03bp-59, 0x1.fc015527d5bd3p-1, 0x1.b68f35094efb8p-55},  // 8/64
    {0x1.1f0d3d7afceafp-3, -0x1.6ef95099769a5p-57, 0x1.faf22263c4bd3p-1, -0x1.52ace133a2769p-58},  // 9/64
    {0x1.3eb312c5d66cbp-3, 0x1.47d666b66cb91p-57, 0x1.f9c340a7cc428p-1, 0x1.c5b6b063b7462p-55},  // 10/64
    {0x1.5e44fcfa126f3p-3, -0x1.6f443063f89b6p-57, 0x1.f874c2e1eecf6p-1, -0x1.c6514e1332b16p-55},  // 11/64
    {0x1.7dc102fbaf2b5p-3, 0x1.5ab50e23c97c3p-59, 0x1.f706bdf9ece1cp-1, -0x1.698c80c36dcb4p-55},  // 12/64
    {0x1.9d252d0cec312p-3, 0x1.9c43d80b1137dp-58, 0x1.f57948cff6797p-1, 0x1.e3a0d3e03b1d4p-57},  // 13/64
    {0x1.bc6f84edc6199p-3, 0x1.9c1a56a7b0cabp-57, 0x1.f3cc7c3b3d16ep-1, -0x1.21a3ad28a3494p-57},  // 14/64
    {0x1.db9e15fb5a5d0p-3, -0x1.32e20d6cc6fc2p-57, 0x1.f20073086649fp-1, 0x1.b940416c1984bp-56},  // 15/64
    {0x1.faaeed4f31577p-3, -0x1.15d88508e32b8p-57, 0x1.f01549f7deea1p-1, 0x1.d3c1e99e5cafdp-55},  // 16/64
    {0x1.0cd00cef36436p-2, -0x1.9fb0a0c93e2b4p-56, 0x1.ee0b1fbc0f11cp-1, -0x1.bfd2380bbc3b1p-59},  // 17/64
    {0x1.1c37d64c6b876p-2, 0x1.46076fe0dcff4p-56, 0x1.ebe214f76efa8p-1, -0x1.02f9f12ba543ep-55},  // 18/64
    {0x1.2b8ddc43eb49fp-2, 0x1.1553899f2d807p-57, 0x1.e99a4c3a7cd83p-1, -0x1.2264b1bc53ce8p-55},  // 19/64
    {0x1.3ad129769d3d8p-2, 0x1.03d550487839ap-63, 0x1.e733ea0193d40p-1, -0x1.6428b3546ce13p-55},  // 20/64
    {0x1.4a00c9b0f3d20p-2, 0x1.823ba6bb08eadp-56, 0x1.e4af14b2a449cp-1, -0x1.68ca02e8a6833p-55},  // 21/64
    {0x1.591bc9fa2f597p-2, 0x1.7c74bac3fe0cbp-57, 0x1.e20bf49acd6c1p-1, -0x1.660aec7ef636bp-58},  // 22/64
    {0x1.682138a38d7f7p-2, -0x1.d889202444aadp-56, 0x1.df4ab3ebd875ep-1, -0x1.e2d8a7e6736c4p-55},  // 23/64
    {0x1.7710255764214p-2, -0x1.6ead7314bb6cep-57, 0x1.dc6b7eb995912p-1, 0x1.4b364776dcd35p-58},  // 24/64
    {0x1.85e7a12826949p-2, 0x1.8a40e9b5face0p-56, 0x1.d96e82f71a9dcp-1, 0x1.ff61bd5d2039dp-55},  // 25/64
    {0x1.94a6be9f546c5p-2, -0x1.69ce13e683f58p-56, 0x1.d653f073e4040p-1, -0x1.76236434bec37p-55},  // 26/64
    {0x1.a34c91cc50ccap-2, -0x1.a310e3b50cecdp-58, 0x1.d31bf8d8d7c06p-1, 0x1.e60dd3089cbddp-56},  // 27/64
    {0x1.b1d8305321617p-2, -0x1.ae242cb99f519p-56, 0x1.cfc6cfa52ad9fp-1, 0x1.8b5b5508f2a0dp-55},  // 28/64
    {0x1.c048b17b140a3p-2, 0x1.19fe6757e9fa7p-57, 0x1.cc54aa2b2972ep-1, 0x1.4ee162ba83a98p-57},  // 29/64
    {0x1.ce9d2e3d4a51fp-2, -0x1.2fc8a12dae298p-57, 0x1.c8c5bf8ce1a84p-1, 0x1.ab3d1a1590123p-56},  // 30/64
    {0x1.dcd4c15329c9ap-2, 0x1.0d4c6e171fd9ap-56, 0x1.c51a48b8b175ep-1, -0x1.1bbb43b9aa880p-57},  // 31/64
    {0x1.eaee8744b05f0p-2, -0x1.789b43c9b027dp-58, 0x1.c1528065b7d50p-1, -0x1.892111312e828p-55},  // 32/64
    {0x1.f8e99e76abc97p-2, 0x1.9d950af2d00a3p-58, 0x1.bd6ea310294f5p-1, 0x1.31bbcc88c109dp-56},  // 33/64
    {0x1.0362939c69955p-1, -0x1.2d8cd78397b01p-55, 0x1.b96eeef58840ep-1, 0x1.45a3cc78fade0p-58},  // 34/64
    {0x1.0a4021e9e1001p-1, -0x1.6f643a13914f6p-55, 0x1.b553a410c104ep-1, 0x1.8ff7947027a15p-58},  // 35/64
    {0x1.110d0c4b69c3bp-1, 0x1.d918998809981p-55, 0x1.b11d04162a4c6p-1, 0x1.1dd561efbc0c2p-56},  // 36/64
    {0x1.17c8e5f2eedb0p-1, 0x1.35e57102e2488p-57, 0x1.accb526f69de5p-1, 0x1.8fb6a8dd6b6ccp-55},  // 37/64
    {0x1.1e7343236574cp-1, 0x1.22a3fa4f41d5ap-56, 0x1.a85ed4373e02dp-1, 0x1.9be06385ec792p-57},  // 38/64
    {0x1.250bb93788bbbp-1, 0x1.ea3d02457bccep-56, 0x1.a3d7d0352bdcfp-1, -0x1.68dbaeca19669p-55},  // 39/64
    {0x1.2b91dea88421ep-1, -0x1.fa371db216ab0p-55, 0x1.9f368ed912f85p-1, -0x1.1d200c5791606p-55},  // 40/64
    {0x1.32054b148bc4fp-1, 0x1.f6b42095a135bp-55, 0x1.9a7b5a36a6514p-1, 0x1.722cfcc9fa7a9p-55},  // 41/64
    {0x1.386597456282bp-1, -0x1.10fada93b07a8p-56, 0x1.95a67e00cb1fdp-1, -0x1.0befda21f862dp-55},  // 42/64
    {0x1.3eb25d36cd53ap-1, -0x1.be570e1570fc0p-58, 0x1.90b84784ddaf7p-1, -0x1.0feb10ab93b87p-56},  // 43/64
    {0x1.44eb381cf386bp-1, -0x1.3ed6c1e6a5505p-55, 0x1.8bb105a5dc900p-1, 0x1.863e03e9474c1p-55},  // 44/64
    {0x1.4b0fc46aab761p-1, 0x1.0da05738cc59cp-61, 0x1.869108d77a6c6p-1, 0x1.338ffe2bfe9ddp-56},  // 45/64
    {0x1.511f9fd7b351cp-1, -0x1.5c0e861c48831p-55, 0x1.8158a31916d5dp-1, -0x1.de8b90b8228dep-57},  // 46/64
    {0x1.571a6966d59b3p-1, 0x1.c843b4d0fb197p-58, 0x1.7c0827f09e54fp-1, -0x1.c73d6d72aee68p-57},  // 47/64
    {0x1.5cffc16bf8f0dp-1, 0x1.96cb370eb578ap-55, 0x1.769fec655211fp-1, -0x1.827d5cf8c68c5p-57},  // 48/64
    {0x1.62cf49921ac79p-1, -0x1.edd9855b6241ap-55, 0x1.712046fa77678p-1, 0x1.425b0a5029c81p-55},  // 49/64
    {0x1.6888a4e134b2fp-1, -0x1.6b7d37644d5e6p-55, 0x1.6b898fa9efb5dp-1, 0x1.15ac786ccf4b2p-56},  // 50/64
    {0x1.6e2b77c40bde1p-1, -0x1.0e729857fad53p-56, 0x1.65dc1fdeb8cbap-1, -0x1.97c1b47337c77p-58},  // 51/64
};

// How far (in ulps) libm's sin and cos may be from correctly rounded, with
// margin: our rounding is libm's when the true value is farther than this
// from a midpoint. glibc documents <= 0.548 ulp, and "0.501 ulp" for
// sin(|x| < 0.126), which it exceeds. Measured against sincos_small over
// 4e7 arguments in [0, 0.4] and 4e7 in [0, 4] (glibc 2.36, FMA variant), by
// glibc's code path: sin(|x| < 0.126) (a Taylor series) 0.5 + 0.4 x^2;
// sin(|x| < 0.855) (a table) 0.5155; cos(|x| < 0.855) 0.5 + 0.005 x^2 at
// most; both 0.5154 elsewhere. The slack is 1.6 to 2.4 times the excess.
inline constexpr double kSinTaylorArg = 0.126, kTableArg = 0.855469, kSinTableSlack = 0.025, kSlack = 0.031;

inline double sin_slack(double ax) {
  return ax < kSinTaylorArg ? 0.001 + 0.6 * (ax * ax) : ax < kTableArg ? kSinTableSlack : kSlack;
}
inline double cos_slack(double ax) { return ax < kTableArg ? 0.001 + 0.01 * (ax * ax) : kSlack; }

inline constexpr double kMaxArg = 0x1p18;  // Cody-Waite below is exact for |k| < 2^20

// Whether hi + lo (|lo| <= ulp(hi) / 2), within err + 2^-11 ulp of the true
// value, is far enough from a midpoint that libm, within slack ulp, returns
// hi.
inline bool rounds_like_libm(double hi, double lo, double err, double slack) {
  const uint64_t bits = std::bit_cast<uint64_t>(hi);
  const double ulp = std::bit_cast<double>(bits & 0x7ff0000000000000ULL) * 0x1p-52;
  // a power of two (or zero) has a closer neighbour below: leave it to libm
  const bool pow2 = (bits & 0x000fffffffffffffULL) == 0;
  return !pow2 & (std::abs(lo) + err < (0.5 - 0x1p-11 - slack) * ulp);
}

inline void two_sum(double a, double b, double* s, double* e) {
  *s = a + b;
  const double bb = *s - a;
  *e = (a - (*s - bb)) + (b - bb);
}

// x = k pi/2 + rh + rl, |rh| <= pi/4 + 2^-40, for |x| <= kMaxArg: pi/2 in
// four parts (fdlibm's pio2_1, _2, _3 and _3t); k * part1 and k * part2 are
// exact (33-bit parts), so is the first subtraction (Sterbenz).
inline void reduce(double x, double* k, double* rh, double* rl) {
  *k = round_to_int(x * 0.63661977236758134308);
  const double t1 = x - *k * 1.57079632673412561417e+00;
  two_sum(t1, -(*k * 6.07710050630396597660e-11), rh, rl);
  *rl = *rl - *k * 2.02226624871116645580e-21 - *k * 8.47842766036889956997e-32;
}

// The table row for r (|r| <= pi/4 + 2^-40): |r| = j/64 + b, |b| <= 1/128.
inline int table_index(double r) { return static_cast<int>(round_to_int(std::abs(r) * 64.0)); }

// sin r = s[0] + s[1] and cos r = c[0] + c[1] for r = rh + rl (|rh| <= pi/4
// + 2^-40, |rl| <= ulp(rh)), to ~2^-64 relative (every term computed in
// plain double is < 2^-14 of the result), given t = kSinCosTable[
// table_index(rh)]; s[0] and c[0] are the sums rounded. (Not the block
// path: GCC's generic tuning does not vectorize the table's gathers.)
inline void sincos_small(double rh, double rl, const SinCosEntry& t, double* s, double* c) {
  const double sign = std::copysign(1.0, rh);
  const double ar = rh * sign, arl = rl * sign;
  const double b = ar - round_to_int(ar * 64.0) * 0.015625, b2 = b * b;  // exact
  // sin b = b + sb, cos b = 1 + cb
  const double sb = arl + b * b2 * (-1.6666666666666666667e-01 + b2 * (8.3333333333333333333e-03 + b2 * -1.9841269841269841270e-04));
  const double cb = b2 * (-0.5 + b2 * (4.1666666666666666667e-02 + b2 * -1.3888888888888888889e-03)) - b * arl;
  // sin|r| = sin a + sin a cb + cos a sin b;  cos r = cos a + cos a cb - sin a sin b
  const double p = t.cos_hi * b, pe = std::fma(t.cos_hi, b, -p);
  const double q = t.sin_hi * b, qe = std::fma(t.sin_hi, b, -q);
  double sh, se, ch, ce;
  two_sum(t.sin_hi, p, &sh, &se);
  two_sum(t.cos_hi, -q, &ch, &ce);
  const double sl = se + pe + t.sin_lo + t.cos_lo * b + t.sin_hi * cb + t.cos_hi * sb;
  const double cl = ce - qe + t.cos_lo - t.sin_lo * b + t.cos_hi * cb - t.sin_hi * sb;
  const double s_hi = sh + sl, c_hi = ch + cl;
  s[0] = s_hi * sign;
  s[1] = (sl - (s_hi - sh)) * sign;
  c[0] = c_hi;
  c[1] = cl - (c_hi - ch);
}

// sin x ~ s[0] + s[1] and cos x ~ c[0] + c[1] for |x| <= kPolyMaxArg, with
// s[0], c[0] the sums rounded and error bounds e[0], e[1]: Taylor series
// whose leading terms are exact (x and 1 - x^2/2, x^2 as a double-double);
// the tails x^3 P and x^4 R (< 1% of the result) are plain doubles, within
// 5 rounding errors of theirs (e: 8).
inline constexpr double kPolyMaxArg = 0.4;

inline void sincos_poly(double x, double* s, double* c, double* e) {
  const double z = x * x, ze = std::fma(x, x, -z);  // x^2 = z + ze
  double p = -7.6471637318198164759e-13;             // -1/15!
  p = p * z + 1.6059043836821614599e-10;
  p = p * z - 2.5052108385441718775e-08;
  p = p * z + 2.7557319223985890653e-06;
  p = p * z - 1.9841269841269841270e-04;
  p = p * z + 8.3333333333333333333e-03;
  p = p * z - 1.6666666666666666667e-01;
  const double t = x * z * p;  // |t| <= |x| / 37
  const double sh = x + t;
  s[0] = sh;
  s[1] = t - (sh - x);
  e[0] = std::abs(t) * 0x1p-50;
  double r = 4.7794773323873852974e-14;  // 1/16!
  r = r * z - 1.1470745597729724714e-11;
  r = r * z + 2.0876756987868098979e-09;
  r = r * z - 2.7557319223985890653e-07;
  r = r * z + 2.4801587301587301587e-05;
  r = r * z - 1.3888888888888888889e-03;
  r = r * z + 4.1666666666666666667e-02;
  const double u = z * z * r;  // <= 1.1e-3
  const double ch = 1.0 - 0.5 * z;
  const double cl = ((1.0 - ch) - 0.5 * z) + (u - 0.5 * ze);
  c[0] = ch + cl;
  c[1] = cl - (c[0] - ch);
  e[1] = std::abs(u) * 0x1p-50 + 0x1p-106;
}

// x, or 0 where !keep: masked bits rather than a select, which the compiler
// would turn into a second copy of the kernel for the constant, and the
// loop would not vectorize.
inline double masked(double x, bool keep) {
  return std::bit_cast<double>(std::bit_cast<uint64_t>(x) & (uint64_t{0} - static_cast<uint64_t>(keep)));
}

}  // namespace detail

// *s, *c = sin(x), cos(x) rounded to nearest; returns whether both are
// certainly what libm's sin(x) and cos(x) return (false for |x| > 2^18, NaN,
// infinities and arguments whose rounding is too close to call).
inline bool sincos_rn(double x, double* s, double* c) {
  const double ax = std::abs(x);
  const bool in_range = ax <= detail::kMaxArg;  // false for NaN
  double k, rh, rl, sd[2], cd[2];
  detail::reduce(detail::masked(x, in_range), &k, &rh, &rl);
  detail::sincos_small(rh, rl, detail::kSinCosTable[detail::table_index(rh)], sd, cd);
  // rotate by the quadrant k mod 4 (in doubles)
  const double quad = k - 4.0 * round_to_int((k - 1.5) * 0.25);  // (k - 1.5) / 4 is never a tie
  const bool odd = quad == 1.0 || quad == 3.0;
  const double s_sign = quad >= 2.0 ? -1.0 : 1.0, c_sign = quad == 1.0 || quad == 2.0 ? -1.0 : 1.0;
  const double s_hi = (odd ? cd[0] : sd[0]) * s_sign, s_lo = (odd ? cd[1] : sd[1]) * s_sign;
  const double c_hi = (odd ? sd[0] : cd[0]) * c_sign, c_lo = (odd ? sd[1] : cd[1]) * c_sign;
  *s = s_hi;
  *c = c_hi;
  // error of pi/2's parts: k * 2^-120 absolute
  const double err = std::abs(k) * 0x1p-118;
  return in_range && detail::rounds_like_libm(s_hi, s_lo, err, detail::sin_slack(ax)) &&
         detail::rounds_like_libm(c_hi, c_lo, err, detail::cos_slack(ax));
}

// sin and cos exactly as libm's (see above): one inline evaluation, and a
// libm call for the rare arguments it cannot settle.
inline void sincos(double x, double* s, double* c) {
  if (!sincos_rn(x, s, c)) {
    *s = std::sin(x);
    *c = std::cos(x);
  }
}

// sin and cos of n values, exactly as libm's, in a loop that vectorizes
// (then libm for the few it cannot settle): for a block's step loop.
// Arguments beyond kPolyMaxArg (never a CartPole's angle) all go to libm.
struct SinCosBlock {
  static constexpr int kTile = 256;

  FASTVEC_SIMD_CLONES static void run(int n, const double* __restrict x, double* __restrict s,
                                      double* __restrict c) noexcept {
    // doubles: bools would widen the vectorization factor 8-fold
    alignas(64) double sin_settled[kTile], cos_settled[kTile];
    for (int base = 0; base < n; base += kTile) {
      const int m = std::min(kTile, n - base);
      const double* __restrict xb = x + base;
      for (int i = 0; i < m; ++i) {
        const double ax = std::abs(xb[i]);
        const bool in_range = ax <= detail::kPolyMaxArg;  // false for NaN
        double sd[2], cd[2], err[2];
        detail::sincos_poly(detail::masked(xb[i], in_range), sd, cd, err);
        s[base + i] = sd[0];
        c[base + i] = cd[0];
        sin_settled[i] = in_range & detail::rounds_like_libm(sd[0], sd[1], err[0], detail::sin_slack(ax)) ? 1.0 : 0.0;
        cos_settled[i] = in_range & detail::rounds_like_libm(cd[0], cd[1], err[1], detail::cos_slack(ax)) ? 1.0 : 0.0;
      }
      for (int i = 0; i < m; ++i) {
        if (sin_settled[i] == 0.0) s[base + i] = std::sin(xb[i]);
        if (cos_settled[i] == 0.0) c[base + i] = std::cos(xb[i]);
      }
    }
  }
};

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

// x**2 as a float64 scalar's ** computes it: libm's pow(x, 2.0), which is
// within 0.54 ulp (glibc's e_pow.c) but not always x * x (~0.1% differ).
// x * x is exact as p + e; where that settles the rounding, it is pow's.
inline double square(double x) {
  constexpr double kPowSlack = 0.05;
  const double p = x * x, e = std::fma(x, x, -p);
  if (detail::rounds_like_libm(p, e, 0.0, kPowSlack) && p < 0x1p1000 && p > 0x1p-960) return p;
  volatile double two = 2.0;  // keeps the compiler from folding pow(x, 2.0) into x * x
  return std::pow(x, two);
}

}  // namespace fastvec::envs
