// Runs a script of RandomState calls (src/envs/dm_control/random_state.hpp) and writes each result as raw
// little-endian binary on stdout, for tests/core/test_random_state.py to compare with numpy's RandomState (which
// builds this program and runs it).
//   stdin: records of 3 x 8 bytes (op, a, b), a and b read as the op needs them: uint32 seed, int64 bounds,
//   doubles as their bit patterns. Per record, 8 bytes out: the draw (a double's bits, or the integer), 0 for
//   the seeding ops. The script starts from a default-constructed RandomState.
//     0 construct(a)   state = RandomState(a)      5 randint(a, b)
//     1 seed(a)        state.seed(a)               6 choice(a)
//     2 next_uint32    (its value)                 7 normal(a, b)
//     3 random_sample                              8 choice(p): a probabilities follow as a doubles on stdin
//     4 uniform(a, b)                              9 standard_normal
//                                                 10 randint(a)
//    11 set_state(key, a, b, gauss): pos a, has_gauss b; key (624 uint32) then gauss (a double) follow on stdin

#include <bit>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "envs/dm_control/random_state.hpp"

using fastvec::envs::dm_control::RandomState;

namespace {

void put(uint64_t value) { std::fwrite(&value, sizeof value, 1, stdout); }
void put_double(double value) { put(std::bit_cast<uint64_t>(value)); }

}  // namespace

int main() {
  RandomState rs;
  std::vector<double> p;
  uint64_t record[3];
  while (std::fread(record, sizeof(uint64_t), 3, stdin) == 3) {
    const uint64_t op = record[0];
    const uint64_t a = record[1], b = record[2];
    const auto da = std::bit_cast<double>(a), db = std::bit_cast<double>(b);
    const auto ia = static_cast<int64_t>(a), ib = static_cast<int64_t>(b);
    switch (op) {
      case 0:
        rs = RandomState(static_cast<uint32_t>(a));
        put(0);
        break;
      case 1:
        rs.seed(static_cast<uint32_t>(a));
        put(0);
        break;
      case 2:
        put(rs.next_uint32());
        break;
      case 3:
        put_double(rs.random_sample());
        break;
      case 4:
        put_double(rs.uniform(da, db));
        break;
      case 5:
        put(static_cast<uint64_t>(rs.randint(ia, ib)));
        break;
      case 6:
        put(static_cast<uint64_t>(rs.choice(ia)));
        break;
      case 7:
        put_double(rs.normal(da, db));
        break;
      case 8:
        p.resize(a);
        if (std::fread(p.data(), sizeof(double), p.size(), stdin) != p.size()) {
          std::fprintf(stderr, "choice(p): %zu probabilities expected on stdin\n", p.size());
          return 2;
        }
        put(static_cast<uint64_t>(rs.choice(std::span<const double>(p))));
        break;
      case 9:
        put_double(rs.standard_normal());
        break;
      case 10:
        put(static_cast<uint64_t>(rs.randint(ia)));
        break;
      case 11: {
        uint32_t key[RandomState::kStateWords];
        double gauss;
        if (std::fread(key, sizeof key, 1, stdin) != 1 || std::fread(&gauss, sizeof gauss, 1, stdin) != 1) {
          std::fprintf(stderr, "set_state: key and gauss expected on stdin\n");
          return 2;
        }
        rs.set_state(key, static_cast<uint32_t>(a), b != 0, gauss);
        put(0);
        break;
      }
      default:
        std::fprintf(stderr, "unknown op %llu\n", static_cast<unsigned long long>(op));
        return 2;
    }
  }
  return 0;
}
