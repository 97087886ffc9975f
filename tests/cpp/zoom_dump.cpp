// Runs src/envs/dm_control/zoom.hpp's zoom on arrays from stdin and writes each result as raw little-endian
// float64 on stdout, for tests/core/test_zoom.py to compare with scipy.ndimage.zoom (which builds this program
// and runs it).
//   stdin: records of (rank: uint64, shape: rank uint64, zoom: float64, the array: float64 in C order).
//   stdout: per record, its zoom_shape as rank uint64, then the zoomed array.

#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

#include "envs/dm_control/zoom.hpp"

int main() {
  using fastvec::envs::dm_control::zoom;
  using fastvec::envs::dm_control::zoom_shape;
  std::vector<double> in, out, work;
  uint64_t rank;
  while (std::fread(&rank, sizeof rank, 1, stdin) == 1) {
    std::vector<int64_t> shape(rank);
    double factor;
    if (std::fread(shape.data(), sizeof(int64_t), rank, stdin) != rank ||
        std::fread(&factor, sizeof factor, 1, stdin) != 1) {
      std::fprintf(stderr, "a record's shape and zoom expected on stdin\n");
      return 2;
    }
    in.resize(std::accumulate(shape.begin(), shape.end(), size_t{1}, std::multiplies<>()));
    if (std::fread(in.data(), sizeof(double), in.size(), stdin) != in.size()) {
      std::fprintf(stderr, "a record's %zu values expected on stdin\n", in.size());
      return 2;
    }
    const std::vector<int64_t> out_shape = zoom_shape(shape, factor);
    out.resize(std::accumulate(out_shape.begin(), out_shape.end(), size_t{1}, std::multiplies<>()));
    zoom(in.data(), shape, factor, out.data(), work);
    std::fwrite(out_shape.data(), sizeof(int64_t), out_shape.size(), stdout);
    std::fwrite(out.data(), sizeof(double), out.size(), stdout);
  }
  return 0;
}
