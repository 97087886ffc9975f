#pragma once
// Exact division of unsigned 16-bit values by a constant d >= 2 with one
// multiply-high, a subtract, an add and shifts (Granlund and Montgomery,
// "Division by invariant integers using multiplication", 1994, figure 4.1),
// written so that the compiler vectorizes it and an AVX2 kernel can repeat
// it lane for lane. The Atari resize rounds its sums with it: a table would
// be 100 KB per image size, and float math in 512-bit registers slows the
// emulator that runs next (core/simd.hpp).

#include <cstdint>
#include <stdexcept>

namespace fastvec::envs {

struct DivU16 {
  uint16_t mult = 0;  // 2^16 (2^l - d) / d + 1, with l = ceil(log2 d)
  int shift = 0;      // l - 1

  explicit DivU16(uint32_t d) {
    if (d < 2 || d > 65535) throw std::invalid_argument("DivU16 needs a divisor in [2, 65535]");
    int l = 0;
    while ((uint32_t{1} << l) < d) ++l;
    mult = static_cast<uint16_t>((uint64_t{1} << 16) * ((uint64_t{1} << l) - d) / d + 1);
    shift = l - 1;
  }

  // x / d, rounded down, for every x in [0, 65535].
  uint16_t operator()(uint16_t x) const {
    const auto t = static_cast<uint16_t>((uint32_t{x} * mult) >> 16);
    return static_cast<uint16_t>((t + ((x - t) >> 1)) >> shift);
  }
};

}  // namespace fastvec::envs
