#pragma once
// scipy.ndimage.zoom(input, zoom) with the defaults dm_control's quadruped Escape calls it with (order=3,
// mode='constant', cval=0, prefilter=True, grid_mode=False), on a C-ordered float64 array of any rank: the cubic
// B-spline prefilter along each axis in turn, then each output point interpolated from its 4**rank coefficients,
// with scipy 1.17's float64 operations in scipy's order (no contraction into fused multiply-adds: cmake/flags.cmake),
// so that the results are scipy's bit for bit (tests/core/test_zoom.py).
// Reference: scipy/ndimage/_interpolation.py (zoom, spline_filter), src/ni_splines.c (apply_filter, the mirror
// boundary's initial coefficients, get_spline_interpolation_weights), src/ni_interpolation.c (NI_ZoomShift,
// map_coordinate).

#include <cmath>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

namespace fastvec::envs::dm_control {

// zoom's output shape: int(round(n * zoom)) along each axis (Python's round: half to even).
inline std::vector<int64_t> zoom_shape(std::span<const int64_t> shape, double zoom) {
  std::vector<int64_t> out;
  for (int64_t n : shape) out.push_back(static_cast<int64_t>(std::nearbyint(static_cast<double>(n) * zoom)));
  return out;
}

namespace zoom_detail {

// get_filter_poles(3): sqrt(3) - 2, as scipy writes it.
inline constexpr double kPole = -0.267949192431122706472553658494127633;

// apply_filter(c, n, [kPole], 1, NI_EXTEND_CONSTANT): the gain, then the causal and anticausal passes, each
// started as the mirror boundary starts it (scipy filters 'constant' as 'mirror').
inline void filter_line(double* c, int64_t n) {
  const double z = kPole;
  double gain = 1.0;
  gain *= (1.0 - z) * (1.0 - 1.0 / z);
  for (int64_t i = 0; i < n; ++i) c[i] *= gain;
  // _init_causal_mirror (libm's pow, as scipy's)
  double z_i = z;
  const double z_n_1 = std::pow(z, static_cast<double>(n - 1));
  c[0] = c[0] + z_n_1 * c[n - 1];
  for (int64_t i = 1; i < n - 1; ++i) {
    c[0] += z_i * (c[i] + z_n_1 * c[n - 1 - i]);
    z_i *= z;
  }
  c[0] /= 1 - z_n_1 * z_n_1;
  for (int64_t i = 1; i < n; ++i) c[i] += z * c[i - 1];
  // _init_anticausal_mirror
  c[n - 1] = (z * c[n - 2] + c[n - 1]) * z / (z * z - 1);
  for (int64_t i = n - 2; i >= 0; --i) c[i] = z * (c[i + 1] - c[i]);
}

// map_coordinate(idx, len, NI_EXTEND_MIRROR) of a tap's integer index (the spline's boundary for 'constant').
inline int64_t mirror(int64_t idx, int64_t len) {
  if (len <= 1) return 0;
  double in = static_cast<double>(idx);
  const auto sz2 = 2 * len - 2;
  if (in < 0) {
    in = static_cast<double>(sz2 * static_cast<int64_t>(-in / static_cast<double>(sz2))) + in;
    in = in <= static_cast<double>(1 - len) ? in + static_cast<double>(sz2) : -in;
  } else if (in > static_cast<double>(len - 1)) {
    in -= static_cast<double>(sz2 * static_cast<int64_t>(in / static_cast<double>(sz2)));
    if (in >= static_cast<double>(len)) in = static_cast<double>(sz2) - in;
  }
  return static_cast<int64_t>(in);
}

// get_spline_interpolation_weights(x, 3, w).
inline void weights(double x, double* w) {
  x -= std::floor(x);
  const double y = x, z = 1.0 - x;
  w[1] = (y * y * (y - 2.0) * 3.0 + 4.0) / 6.0;
  w[2] = (z * z * (z - 2.0) * 3.0 + 4.0) / 6.0;
  w[0] = z * z * z / 6.0;
  w[3] = 1.0;
  for (int k = 0; k < 3; ++k) w[3] -= w[k];
}

// One output index along one axis: outside the input (mode 'constant': cval), or its 4 taps' input indices and
// weights.
struct Point {
  bool outside = false;
  int64_t tap[4] = {};
  double w[4] = {};
};

}  // namespace zoom_detail

// out (zoom_shape(shape, zoom) elements) = scipy.ndimage.zoom(in, zoom); `work` is scratch, kept by the caller
// to reuse its allocation.
inline void zoom(const double* in, std::span<const int64_t> shape, double zoom, double* out,
                 std::vector<double>& work) {
  using namespace zoom_detail;
  const auto rank = static_cast<int64_t>(shape.size());
  if (rank == 0) throw std::invalid_argument("zoom: input and output rank must be > 0");
  for (int64_t n : shape)
    if (n < 1) throw std::invalid_argument("zoom: every input dimension must be >= 1");
  const std::vector<int64_t> out_shape = zoom_shape(shape, zoom);
  const int64_t size = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  const int64_t out_size = std::accumulate(out_shape.begin(), out_shape.end(), int64_t{1}, std::multiplies<>());
  if (zoom == 1) {  // scipy's early exit: the input itself
    std::copy(in, in + size, out);
    return;
  }
  // spline_filter: each axis in turn, each line along it (len 1: left alone)
  work.assign(in, in + size);
  std::vector<double> line;
  std::vector<int64_t> stride(rank, 1);
  for (int64_t a = rank - 2; a >= 0; --a) stride[a] = stride[a + 1] * shape[a + 1];
  for (int64_t a = 0; a < rank; ++a) {
    const int64_t n = shape[a], s = stride[a];
    if (n <= 1) continue;
    line.resize(n);
    for (int64_t first = 0; first < size; ++first) {
      if ((first / s) % n != 0) continue;  // the start of a line along axis a
      for (int64_t k = 0; k < n; ++k) line[k] = work[first + k * s];
      filter_line(line.data(), n);
      for (int64_t k = 0; k < n; ++k) work[first + k * s] = line[k];
    }
  }
  // NI_ZoomShift: each axis's points, then each output point from its taps
  std::vector<std::vector<Point>> points(rank);
  for (int64_t a = 0; a < rank; ++a) {
    const int64_t len = shape[a], out_len = out_shape[a];
    const double axis_zoom = out_len - 1 != 0 ? static_cast<double>(len - 1) / static_cast<double>(out_len - 1) : 1.0;
    points[a].resize(out_len);
    for (int64_t k = 0; k < out_len; ++k) {
      Point& p = points[a][k];
      double cc = static_cast<double>(k);
      cc *= axis_zoom;
      cc += 0.0;  // nprepad
      if (cc < 0 || cc > static_cast<double>(len - 1)) {  // map_coordinate, NI_EXTEND_CONSTANT: -1
        p.outside = true;
        continue;
      }
      const int64_t start = static_cast<int64_t>(std::floor(cc)) - 1;
      const bool edge = start < 0 || start + 3 >= len;
      for (int h = 0; h < 4; ++h) p.tap[h] = edge ? mirror(start + h, len) : start + h;
      weights(cc, p.w);
    }
  }
  const int64_t filter_size = int64_t{1} << (2 * rank);
  std::vector<int64_t> at(rank, 0);  // the output point's index along each axis
  for (int64_t o = 0; o < out_size; ++o) {
    bool outside = false;
    for (int64_t a = 0; a < rank; ++a) outside = outside || points[a][at[a]].outside;
    double t = 0.0;  // cval
    if (!outside) {
      for (int64_t f = 0; f < filter_size; ++f) {  // the taps in C order: the last axis's fastest
        int64_t idx = 0;
        for (int64_t a = 0; a < rank; ++a) idx += points[a][at[a]].tap[(f >> (2 * (rank - 1 - a))) & 3] * stride[a];
        double coeff = work[idx];
        for (int64_t a = 0; a < rank; ++a) coeff *= points[a][at[a]].w[(f >> (2 * (rank - 1 - a))) & 3];
        t += coeff;
      }
    }
    out[o] = t;
    for (int64_t a = rank - 1; a >= 0; --a) {
      if (++at[a] < out_shape[a]) break;
      at[a] = 0;
    }
  }
}

}  // namespace fastvec::envs::dm_control
