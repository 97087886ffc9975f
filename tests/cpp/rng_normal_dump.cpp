// Writes what fastvec's numpy-compatible normal draws produce, as raw little-endian binary on stdout, for
// tests/core/test_rng_normal.py to compare with numpy itself (which builds this program and runs it):
//   rng_normal_dump tables
//     ki[256] (uint64), wi[256], fi[256], r, inv_r (double): the ziggurat of src/core/ziggurat.hpp.
//   rng_normal_dump states
//     stdin: records of 4 uint64 (state high, state low, inc high, inc low), a PCG64 state as numpy's
//     bit_generator.state holds it; per record: standard_normal() (double), then the next raw word.
//   rng_normal_dump stream SEED ENV_INDEX ROUNDS K M LOW HIGH
//     the generator env ENV_INDEX of a pool seeded with SEED (ENV_INDEX -1: single_rng(SEED)); per round
//     K draws uniform(LOW, HIGH) then M draws standard_normal() (double); then the next raw word.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/rng.hpp"

using fastvec::core::Pcg64;

namespace {

template <class T>
void put(const T& value) {
  std::fwrite(&value, sizeof(T), 1, stdout);
}

int dump_tables() {
  const fastvec::core::NormalZiggurat& z = fastvec::core::normal_ziggurat();
  for (uint64_t k : z.ki) put(k);
  for (double w : z.wi) put(w);
  for (double f : z.fi) put(f);
  put(z.r);
  put(z.inv_r);
  return 0;
}

int dump_states() {
  uint64_t words[4];
  while (std::fread(words, sizeof(uint64_t), 4, stdin) == 4) {
    const auto join = [](uint64_t high, uint64_t low) { return (static_cast<unsigned __int128>(high) << 64) | low; };
    Pcg64 rng = Pcg64::from_state(join(words[0], words[1]), join(words[2], words[3]));
    put(rng.standard_normal());
    put(rng.next_u64());
  }
  return 0;
}

int dump_stream(char** arg) {
  const uint64_t seed = std::stoull(arg[0]);
  const long env_index = std::stol(arg[1]);
  const long rounds = std::stol(arg[2]), k = std::stol(arg[3]), m = std::stol(arg[4]);
  const double low = std::stod(arg[5]), high = std::stod(arg[6]);
  Pcg64 rng = env_index < 0 ? fastvec::core::single_rng(seed)
                            : fastvec::core::env_rng(seed, static_cast<uint32_t>(env_index));
  std::vector<double> out;
  out.reserve(static_cast<size_t>(rounds * (k + m)));
  for (long round = 0; round < rounds; ++round) {
    for (long j = 0; j < k; ++j) out.push_back(rng.uniform(low, high));
    for (long j = 0; j < m; ++j) out.push_back(rng.standard_normal());
  }
  std::fwrite(out.data(), sizeof(double), out.size(), stdout);
  put(rng.next_u64());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "tables" && argc == 2) return dump_tables();
  if (mode == "states" && argc == 2) return dump_states();
  if (mode == "stream" && argc == 9) return dump_stream(argv + 2);
  std::fprintf(stderr, "usage: %s tables | states | stream SEED ENV_INDEX ROUNDS K M LOW HIGH\n", argv[0]);
  return 2;
}
