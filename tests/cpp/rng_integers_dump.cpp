// Writes what fastvec's Generator.integers(low, high) draws (src/core/rng.hpp), as raw little-endian binary on
// stdout, for tests/core/test_rng_integers.py to compare with numpy itself (which builds this program and runs it):
//   rng_integers_dump SEED
//     stdin: records of 3 int64 (kind, low, high); per record, from single_rng(SEED): kind 0 integers(low, high)
//     (int64), kind 1 random() (double, a 64-bit draw between 32-bit ones), kind 2 integers(high) (int64; low
//     unused); then the next raw word.

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/rng.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SEED < records\n", argv[0]);
    return 2;
  }
  fastvec::core::Pcg64 rng = fastvec::core::single_rng(std::stoull(argv[1]));
  int64_t record[3];
  while (std::fread(record, sizeof(int64_t), 3, stdin) == 3) {
    if (record[0] == 0) {
      const int64_t v = rng.integers(record[1], record[2]);
      std::fwrite(&v, sizeof v, 1, stdout);
    } else if (record[0] == 2) {
      const int64_t v = rng.integers(record[2]);
      std::fwrite(&v, sizeof v, 1, stdout);
    } else {
      const double v = rng.next_double();
      std::fwrite(&v, sizeof v, 1, stdout);
    }
  }
  const uint64_t next = rng.next_u64();
  std::fwrite(&next, sizeof next, 1, stdout);
  return 0;
}
