#include "envs/atari/atari.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>

#include "ale/ale_interface.hpp"
#include "core/simd.hpp"
#include "envs/atari/divide.hpp"
#include "ale/common/Log.hpp"
#include "ale/emucore/MD5.hxx"
#include "ale/games/Roms.hpp"

namespace fastvec::envs {
namespace {

constexpr int kScreenH = 210, kScreenW = 160;
constexpr size_t kScreenSize = static_cast<size_t>(kScreenH) * kScreenW;

// ALE reports through a global logger; keep it quiet (errors only).
void quiet_ale() {
  static std::once_flag once;
  std::call_once(once, [] { ale::Logger::setMode(ale::Logger::Error); });
}

// FASTVEC_PORTABLE_KERNELS=1 takes the portable preprocessing kernels on a
// CPU with AVX-512, so that the tests check them against the AVX-512 ones.
bool portable_kernels() {
  static const bool portable = [] {
    const char* v = std::getenv("FASTVEC_PORTABLE_KERNELS");
    return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
  }();
  return portable;
}

// The AVX-512 kernels: the palette (VBMI byte permutes) and the resize.
bool use_avx512() {
  static const bool avx512 = !portable_kernels() && __builtin_cpu_supports("avx512f") &&
                             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                             __builtin_cpu_supports("avx512vbmi");
  return avx512;
}

// The ROM's supported-game settings, or EnvError: ALE itself would exit the
// process on a missing or unknown ROM.
std::unique_ptr<ale::RomSettings> rom_settings(const std::string& path) {
  if (path.empty()) throw core::EnvError("no ROM path given (the 'rom' option)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::EnvError("cannot read the ROM file '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string md5 = ale::stella::MD5(bytes.data(), static_cast<uint32_t>(bytes.size()));
  // As ALE's loadROM: the game is known by its MD5 or its file name (the
  // Python side checks the file against ale-py's MD5 list).
  std::unique_ptr<ale::RomSettings> settings(ale::buildRomRLWrapper(path, md5));
  if (!settings) throw core::EnvError("'" + path + "' is not a ROM ALE supports (unknown game, MD5 " + md5 + ")");
  return settings;
}

// Area interpolation along one axis as OpenCV's INTER_AREA defines it for a
// non-integer scale (computeResizeAreaTab): destination index d averages
// source indices start[d] .. start[d] + taps - 1, weighted by their overlap
// with the cell [d S/D, (d+1) S/D). In units of 1/D an overlap is an integer
// (k) and the k of a cell sum to S, so the exact result is an integer sum
// over Sx * Sy. OpenCV computes it in float (alpha = overlap / cell width),
// which matters only for an exact tie at .5: there we redo its float sums.
// Unused trailing taps have weight 0.
struct AreaAxis {
  int ssize, dsize, taps = 1;
  std::vector<int> start;
  std::vector<int32_t> k;     // dsize x taps, integer overlaps
  std::vector<float> alpha;   // dsize x taps, OpenCV's float weights

  AreaAxis(int s, int d) : ssize(s), dsize(d), start(d) {
    const double scale = 1.0 / (static_cast<double>(d) / s);
    std::vector<std::vector<std::pair<int, float>>> cells(d);
    for (int j = 0; j < d; ++j) {
      const double f1 = j * scale, f2 = f1 + scale;
      const double cell = std::min(scale, s - f1);
      int s1 = static_cast<int>(std::ceil(f1)), s2 = static_cast<int>(std::floor(f2));
      s2 = std::min(s2, s - 1);
      s1 = std::min(s1, s2);
      if (s1 - f1 > 1e-3) cells[j].emplace_back(s1 - 1, static_cast<float>((s1 - f1) / cell));
      for (int x = s1; x < s2; ++x) cells[j].emplace_back(x, static_cast<float>(1.0 / cell));
      if (f2 - s2 > 1e-3) cells[j].emplace_back(s2, static_cast<float>(std::min(std::min(f2 - s2, 1.0), cell) / cell));
      taps = std::max(taps, static_cast<int>(cells[j].size()));
    }
    k.assign(static_cast<size_t>(d) * taps, 0);
    alpha.assign(static_cast<size_t>(d) * taps, 0.f);
    for (int j = 0; j < d; ++j) {
      start[j] = std::min(cells[j].front().first, s - taps);
      for (auto [x, a] : cells[j]) {
        const int t = x - start[j];
        // Overlap of source pixel x with cell j, in units of 1/d.
        k[j * taps + t] = std::min((x + 1) * d, (j + 1) * s) - std::max(x * d, j * s);
        alpha[j * taps + t] = a;
      }
    }
    // Divide out the common factor: the sums stay small (16-bit).
    int g = 0;
    for (int32_t v : k) g = std::gcd(g, static_cast<int>(v));
    for (int32_t& v : k) v /= g;
    total = s / g;
  }
  int32_t total = 0;  // the k of every cell sum to this
};

// round(n / div) for the 16-bit sums of a resize (n <= 255 div, div <= 256):
// floor((n + floor(div / 2)) / div), which rounds half up; with check_ties
// (div even: else no tie is possible), tie[i] is set where n / div is exactly
// k + .5, for the caller to round as OpenCV does. Returns whether any tied.
FASTVEC_SIMD_CLONES_256 bool round_sums(const uint16_t* __restrict n, int count, DivU16 divide, uint16_t div,
                                        bool check_ties, uint8_t* __restrict out, uint8_t* __restrict tie) {
  const auto half = static_cast<uint16_t>(div / 2);
  const uint8_t check = check_ties;
  uint8_t any = 0;
  for (int i = 0; i < count; ++i) {
    const auto x = static_cast<uint16_t>(n[i] + half);
    const uint16_t q = divide(x);
    const uint8_t t = check & static_cast<uint8_t>(static_cast<uint16_t>(q * div) == x);
    out[i] = static_cast<uint8_t>(q);
    tie[i] = t;
    any |= t;
  }
  return any != 0;
}

// INTER_AREA resize of one 8-bit plane (kScreenH x kScreenW), exactly as
// cv2.resize computes it. One output row at a time, with its scratch on the
// stack: what an env keeps between steps is what limits how many envs share
// a core's cache. Per row: the vertical integer sums of its source rows
// (16-bit, contiguous: the compiler vectorizes them), the horizontal integer
// sums (AVX-512: 32 outputs from two registers of sources with three word
// permutes), then round(n / div) (round_sums); an exact tie at .5 is
// rounded as OpenCV rounds it (tie_pixel). No 512-bit multiplies or float
// math: see FASTVEC_SIMD_CLONES_256.
class AreaResize {
 public:
  AreaResize(int dh, int dw)
      : dh_(dh), dw_(dw), x_(kScreenW, dw), y_(kScreenH, dh), div_(x_.total * y_.total),
        fits_(div_ >= 2 && div_ <= 256), divide_(fits_ ? div_ : 2) {
    // Integer scales on both axes take OpenCV's resizeAreaFast, which rounds
    // ties its own way (tie_pixel).
    area_fast_ = kScreenH % dh == 0 && kScreenW % dw == 0;
    half_up_ = area_fast_ && kScreenH / dh == 2 && kScreenW / dw == 2;
    check_ties_ = div_ % 2 == 0 && !half_up_;
    // The AVX-512 path: 32 outputs need at most 64 consecutive sources.
    wide_ = fits_ && x_.taps <= kMaxTaps && use_avx512();
    for (int b = 0; wide_ && b * 32 < dw_; ++b) {
      const int last = std::min(dw_, b * 32 + 32) - 1;
      wide_ = x_.start[last] + x_.taps - x_.start[b * 32] <= 64;
    }
    if (wide_) {
      const int blocks = (dw_ + 31) / 32;
      perm_.assign(static_cast<size_t>(blocks) * kMaxTaps * 32, 0);
      mult_.assign(static_cast<size_t>(blocks) * kMaxTaps * 32, 0);
      for (int dx = 0; dx < dw_; ++dx) {
        const int b = dx / 32, lane = dx % 32;
        for (int t = 0; t < x_.taps; ++t) {
          perm_[(b * kMaxTaps + t) * 32 + lane] = static_cast<uint16_t>(x_.start[dx] + t - x_.start[b * 32]);
          mult_[(b * kMaxTaps + t) * 32 + lane] = static_cast<uint16_t>(x_.k[static_cast<size_t>(dx) * x_.taps + t]);
        }
      }
    }
  }

  // The sums fit 16 bits (div <= 256, and a resize): apply(); else apply_general().
  bool fits_16bit() const { return fits_; }

  void apply(const uint8_t* src, uint8_t* dst) const {
    alignas(64) uint16_t col[kColStride];  // one row of vertical sums; zeros past the screen's width
    std::fill(col + kScreenW, col + kColStride, uint16_t{0});
    for (int dy = 0; dy < dh_; ++dy) {
      vertical(src, dy, col);
      uint8_t* out = dst + static_cast<size_t>(dy) * dw_;
      if (wide_) {
        horizontal_wide(col, src, dy, out);
      } else {
        horizontal(col, src, dy, out);
      }
    }
  }

  // The general path, for sizes whose sums do not fit 16 bits.
  void apply_general(const uint8_t* src, uint8_t* dst) const {
    for (int dy = 0; dy < dh_; ++dy) {
      for (int dx = 0; dx < dw_; ++dx) {
        int64_t n = 0;
        for (int ty = 0; ty < y_.taps; ++ty) {
          const uint8_t* row = src + static_cast<size_t>(y_.start[dy] + ty) * kScreenW + x_.start[dx];
          int64_t h = 0;
          for (int tx = 0; tx < x_.taps; ++tx) h += int64_t{x_.k[static_cast<size_t>(dx) * x_.taps + tx]} * row[tx];
          n += int64_t{y_.k[static_cast<size_t>(dy) * y_.taps + ty]} * h;
        }
        const bool tie = check_ties_ && 2 * n % (2 * int64_t{div_}) == div_;
        dst[static_cast<size_t>(dy) * dw_ + dx] =
            tie ? tie_pixel(src, dy, dx) : static_cast<uint8_t>((2 * n + div_) / (2 * int64_t{div_}));
      }
    }
  }

 private:
  static constexpr int kMaxTaps = 3, kColStride = kScreenW + 64;  // room for a 64-wide load past the edge

  FASTVEC_SIMD_CLONES_256 void vertical(const uint8_t* src, int dy, uint16_t* __restrict out) const {
    const int taps = y_.taps;
    const int32_t* k = &y_.k[static_cast<size_t>(dy) * taps];
    const uint8_t* s0 = src + static_cast<size_t>(y_.start[dy]) * kScreenW;
    const uint16_t k0 = static_cast<uint16_t>(k[0]);
    for (int x = 0; x < kScreenW; ++x) out[x] = static_cast<uint16_t>(k0 * s0[x]);
    for (int t = 1; t < taps; ++t) {
      const uint16_t kt = static_cast<uint16_t>(k[t]);
      const uint8_t* st = s0 + static_cast<size_t>(t) * kScreenW;
      for (int x = 0; x < kScreenW; ++x) out[x] = static_cast<uint16_t>(out[x] + kt * st[x]);
    }
  }

  void horizontal(const uint16_t* col, const uint8_t* src, int dy, uint8_t* out) const {
    const int taps = x_.taps;
    uint16_t sums[kScreenW];
    uint8_t tie[kScreenW];
    for (int dx = 0; dx < dw_; ++dx) {
      const int32_t* k = &x_.k[static_cast<size_t>(dx) * taps];
      const uint16_t* s = col + x_.start[dx];
      int32_t n = 0;
      for (int t = 0; t < taps; ++t) n += k[t] * s[t];
      sums[dx] = static_cast<uint16_t>(n);
    }
    if (!round_sums(sums, dw_, divide_, static_cast<uint16_t>(div_), check_ties_, out, tie)) return;
    for (int dx = 0; dx < dw_; ++dx)
      if (tie[dx]) out[dx] = tie_pixel(src, dy, dx);
  }

  // GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
  // _mm512_undefined_* values (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
  // 512-bit permutes gather each tap's sources for 32 outputs; the multiplies
  // and the rounding run on 256-bit halves (see FASTVEC_SIMD_CLONES_256).
  __attribute__((target("avx512f,avx512bw,avx512vl"))) void horizontal_wide(const uint16_t* col, const uint8_t* src,
                                                                              int dy, uint8_t* out) const {
    const __m256i div = _mm256_set1_epi16(static_cast<int16_t>(div_));
    const __m256i half = _mm256_set1_epi16(static_cast<int16_t>(div_ / 2));
    const __m256i mult = _mm256_set1_epi16(static_cast<int16_t>(divide_.mult));
    const __m128i shift = _mm_cvtsi32_si128(divide_.shift);
    for (int b = 0; b * 32 < dw_; ++b) {
      const uint16_t* base = col + x_.start[b * 32];
      const __m512i lo = _mm512_loadu_si512(base), hi = _mm512_loadu_si512(base + 32);
      __m256i n[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};  // outputs 0-15, 16-31 of the block
      for (int t = 0; t < x_.taps; ++t) {
        const __m512i idx = _mm512_loadu_si512(&perm_[(b * kMaxTaps + t) * 32]);
        const __m512i v = _mm512_permutex2var_epi16(lo, idx, hi);
        const uint16_t* k = &mult_[(b * kMaxTaps + t) * 32];
        n[0] = _mm256_add_epi16(n[0], _mm256_mullo_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(k)),
                                                         _mm512_castsi512_si256(v)));
        n[1] = _mm256_add_epi16(n[1], _mm256_mullo_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + 16)),
                                                         _mm512_extracti64x4_epi64(v, 1)));
      }
      // round_sums, 16 outputs at a time.
      for (int h = 0; h < 2; ++h) {
        const int first = b * 32 + h * 16, lanes = std::min(16, dw_ - first);
        if (lanes <= 0) break;
        const __mmask16 valid = lanes == 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << lanes) - 1);
        const __m256i x = _mm256_add_epi16(n[h], half);
        const __m256i t = _mm256_mulhi_epu16(x, mult);
        const __m256i q = _mm256_srl_epi16(_mm256_add_epi16(t, _mm256_srli_epi16(_mm256_sub_epi16(x, t), 1)), shift);
        _mm256_mask_cvtepi16_storeu_epi8(out + first, valid, q);
        if (!check_ties_) continue;
        for (unsigned tie = _mm256_mask_cmpeq_epi16_mask(valid, _mm256_mullo_epi16(q, div), x); tie != 0; tie &= tie - 1)
          out[first + __builtin_ctz(tie)] = tie_pixel(src, dy, first + __builtin_ctz(tie));
      }
    }
  }
#pragma GCC diagnostic pop

  // A pixel whose exact value is k + .5, as OpenCV rounds it: resizeAreaFast
  // (integer scales) takes the area's integer sum times float(1 / area),
  // rounded to nearest even, except that 2x2 rounds half up ((sum + 2) >> 2,
  // never a tie here); the general INTER_AREA path sums in float (float_pixel).
  uint8_t tie_pixel(const uint8_t* src, int dy, int dx) const {
    if (!area_fast_) return float_pixel(src, dy, dx);
    int32_t sum = 0;
    for (int ty = 0; ty < y_.taps; ++ty) {
      const uint8_t* row = src + static_cast<size_t>(y_.start[dy] + ty) * kScreenW + x_.start[dx];
      for (int tx = 0; tx < x_.taps; ++tx) sum += row[tx];
    }
    const float scale = 1.f / static_cast<float>(y_.taps * x_.taps);
    return static_cast<uint8_t>(std::clamp<long>(std::lrint(static_cast<float>(sum) * scale), 0, 255));
  }

  // cv::resize's float arithmetic for one pixel: per source row the
  // horizontal sum from 0 in tap order, then beta0 * row0 + beta1 * row1 ...
  uint8_t float_pixel(const uint8_t* src, int dy, int dx) const {
    float sum = 0.f;
    for (int ty = 0; ty < y_.taps; ++ty) {
      const float beta = y_.alpha[static_cast<size_t>(dy) * y_.taps + ty];
      if (beta == 0.f) continue;
      const uint8_t* row = src + static_cast<size_t>(y_.start[dy] + ty) * kScreenW + x_.start[dx];
      float buf = 0.f;
      for (int tx = 0; tx < x_.taps; ++tx) {
        const float a = x_.alpha[static_cast<size_t>(dx) * x_.taps + tx];
        if (a != 0.f) buf += static_cast<float>(row[tx]) * a;
      }
      sum = ty == 0 ? beta * buf : sum + beta * buf;
    }
    return static_cast<uint8_t>(std::clamp<long>(std::lrint(sum), 0, 255));
  }

  int dh_, dw_;
  AreaAxis x_, y_;
  int32_t div_;
  bool fits_, wide_ = false;
  DivU16 divide_;  // by div_
  bool area_fast_ = false, half_up_ = false;  // integer scales; 2x2
  bool check_ties_ = false;  // an exact .5 can occur (div_ even) and OpenCV may round it down
  std::vector<uint16_t> perm_, mult_;  // per 32-output block and tap: source lane and weight
};

// out[p] = max(lut[a[p]], lut[b[p]]): the palette of both screens and their
// max, 64 pixels an instruction with AVX-512 VBMI (ALE's palette indices are
// even: 128 entries, one two-register byte permute).
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void palette_max_vbmi(const uint8_t* a, const uint8_t* b,
                                                                               const uint8_t* lut, uint8_t* out,
                                                                               size_t n) {
  alignas(64) uint8_t half[128];
  for (int v = 0; v < 128; ++v) half[v] = lut[2 * v];
  const __m512i lo = _mm512_load_si512(half), hi = _mm512_load_si512(half + 64);
  size_t p = 0;
  for (; p + 64 <= n; p += 64) {
    const __m512i ia = _mm512_srli_epi16(_mm512_and_si512(_mm512_loadu_si512(a + p), _mm512_set1_epi8(char(0xFE))), 1);
    __m512i g = _mm512_permutex2var_epi8(lo, ia, hi);
    if (b) {
      const __m512i ib =
          _mm512_srli_epi16(_mm512_and_si512(_mm512_loadu_si512(b + p), _mm512_set1_epi8(char(0xFE))), 1);
      g = _mm512_max_epu8(g, _mm512_permutex2var_epi8(lo, ib, hi));
    }
    _mm512_storeu_si512(out + p, g);
  }
  for (; p < n; ++p) out[p] = b ? std::max(lut[a[p] & 0xFE], lut[b[p] & 0xFE]) : lut[a[p] & 0xFE];
}

void palette_max_scalar(const uint8_t* a, const uint8_t* b, const uint8_t* lut, uint8_t* out, size_t n) {
  if (!b) {
    for (size_t p = 0; p < n; ++p) out[p] = lut[a[p]];
  } else {
    for (size_t p = 0; p < n; ++p) out[p] = std::max(lut[a[p]], lut[b[p]]);
  }
}

// b may be null: lut[a] only.
void palette_max(const uint8_t* a, const uint8_t* b, const uint8_t* lut, uint8_t* out, size_t n) {
  if (use_avx512()) {
    palette_max_vbmi(a, b, lut, out, n);
  } else {
    palette_max_scalar(a, b, lut, out, n);
  }
}

// inout = max(inout, lut[a]): the last step of an episode (rare), not vectorized.
void palette_max_into(const uint8_t* a, const uint8_t* lut, uint8_t* inout, size_t n) {
  for (size_t p = 0; p < n; ++p) inout[p] = std::max(inout[p], lut[a[p]]);
}

// Where a step keeps the second-last frame's palette indices until it pools
// them: one buffer per thread, since it lives within one step. Per env it
// would add 33.6 KB to the working set that many envs on a core compete for.
uint8_t* second_last_screen() {
  thread_local std::unique_ptr<uint8_t[]> buffer;
  if (!buffer) buffer = std::make_unique<uint8_t[]>(kScreenSize);
  return buffer.get();
}

}  // namespace

core::OptionTable Atari::options() {
  using K = core::OptionSpec::Kind;
  return {
      {"frame_skip", K::kInt, 4, 1, 64},
      {"img_height", K::kInt, 84, 1, kScreenH},
      {"img_width", K::kInt, 84, 1, kScreenW},
      {"gray_scale", K::kBool, 1},
      {"stack_num", K::kInt, 4, 1, 64},
      {"noop_max", K::kInt, 30, 0, 100000},
      {"use_fire_reset", K::kBool, 0},
      {"episodic_life", K::kBool, 0},
      {"reward_clip", K::kBool, 0},
      {"repeat_action_probability", K::kReal, 0.25, 0, 1},
      {"full_action_space", K::kBool, 0},
      {"channels_last", K::kBool, 0},
      {"envpool_info", K::kBool, 0},
      {"rom", K::kString},
  };
}

AtariOptions::AtariOptions(const core::Options& o)
    : rom(o.text("rom")),
      frame_skip(o.integer("frame_skip")),
      img_height(o.integer("img_height")),
      img_width(o.integer("img_width")),
      stack_num(o.integer("stack_num")),
      noop_max(o.integer("noop_max")),
      gray_scale(o.flag("gray_scale")),
      use_fire_reset(o.flag("use_fire_reset")),
      episodic_life(o.flag("episodic_life")),
      reward_clip(o.flag("reward_clip")),
      full_action_space(o.flag("full_action_space")),
      channels_last(o.flag("channels_last")),
      envpool_info(o.flag("envpool_info")),
      repeat_action_probability(static_cast<float>(o.get("repeat_action_probability"))) {}

class AtariGame {
 public:
  AtariGame(const AtariOptions& opt, std::vector<ale::Action> actions)
      : opt_(opt),
        actions_(std::move(actions)),
        resize_(opt.img_height, opt.img_width),
        direct_(opt.img_height == kScreenH && opt.img_width == kScreenW),
        pooled_(static_cast<size_t>(opt.channels()) * kScreenSize),
        stack_(static_cast<size_t>(opt.stack_num) * opt.frame_size()) {
    ale_.setInt("random_seed", 0);  // reseeded at every reset from the pool's generator
    ale_.setFloat("repeat_action_probability", opt.repeat_action_probability);
    ale_.setInt("frame_skip", 1);
    ale_.setInt("max_num_frames_per_episode", 0);  // the pool truncates
    ale_.setBool("color_averaging", false);         // not built in: ale_phosphor_blend.cpp
    ale_.loadROM(opt.rom);
    const ale::ColourPalette& palette = ale_.theOSystem->colourPalette();
    for (int v = 0; v < 256; ++v) {
      // Screens hold even palette indices; ALE keeps an index's gray at the
      // odd entry after it (ColourPalette::applyPaletteGrayscale).
      const int even = v & 0xFE;
      gray_[v] = static_cast<uint8_t>(palette.getRGB(even + 1) & 0xFF);
      int r, g, b;
      palette.getRGB(even, r, g, b);
      rgb_[0][v] = static_cast<uint8_t>(r);
      rgb_[1][v] = static_cast<uint8_t>(g);
      rgb_[2][v] = static_cast<uint8_t>(b);
    }
    for (ale::Action a : actions_) has_fire_ |= a == ale::PLAYER_A_FIRE;
  }

  void reset(core::Pcg64& rng) {
    ale_.environment->getEnvironmentRNG().seed(static_cast<uint32_t>(rng.next_u64()));
    if (opt_.episodic_life && life_lost_ && !ale_.game_over(false)) {
      // Lost a life, game not over: the episode (one life) ends but the game
      // goes on with a no-op step, as SB3's EpisodicLifeEnv does it.
      life_lost_ = false;
      step_frames(ale::PLAYER_A_NOOP);
    } else {
      life_lost_ = false;
      ale_.reset_game();
      const int noops = opt_.noop_max > 0 ? 1 + static_cast<int>(rng.next_u64() % opt_.noop_max) : 0;
      for (int k = 0; k < noops; ++k) {
        ale_.act(ale::PLAYER_A_NOOP);
        if (ale_.game_over(false)) ale_.reset_game();
      }
      pool(nullptr);  // as AtariPreprocessing: the screen, max-pooled with a blank one
    }
    // Games that wait for FIRE to start (or to serve again after a lost
    // life) get one step of it, as SB3's FireResetEnv does.
    if (opt_.use_fire_reset && has_fire_) {
      step_frames(ale::PLAYER_A_FIRE);
      if (ale_.game_over(false)) {
        ale_.reset_game();
        pool(nullptr);
      }
    }
    lives_ = ale_.lives();
    last_reward_ = 0;
    head_ = 0;
    preprocess(frame(0));
    for (int k = 1; k < opt_.stack_num; ++k) std::memcpy(frame(k), frame(0), opt_.frame_size());
  }

  core::StepResult step(int32_t action) {
    const float reward = step_frames(actions_[action]);
    last_reward_ = static_cast<int32_t>(reward);  // ALE's rewards are integers
    const bool over = ale_.game_over(false);
    const int lives = ale_.lives();
    life_lost_ = lives < lives_;
    lives_ = lives;
    head_ = (head_ + 1) % opt_.stack_num;
    preprocess(frame(0));
    const bool terminated = over || (opt_.episodic_life && life_lost_);
    return {opt_.reward_clip ? static_cast<float>((reward > 0) - (reward < 0)) : reward, terminated};
  }

  void write_obs(uint8_t* out) const {
    const size_t fs = opt_.frame_size();
    if (!opt_.channels_last) {
      for (int k = opt_.stack_num - 1; k >= 0; --k, out += fs) std::memcpy(out, frame(k), fs);
      return;
    }
    // (H, W, stack * C): pixel-major, then frame (oldest first), then channel.
    const int c = opt_.channels(), depth = opt_.stack_num * c;
    const size_t plane = static_cast<size_t>(opt_.img_height) * opt_.img_width;
    for (int k = 0; k < opt_.stack_num; ++k) {
      const uint8_t* f = frame(opt_.stack_num - 1 - k);
      for (int ch = 0; ch < c; ++ch) {
        const uint8_t* src = f + ch * plane;
        uint8_t* dst = out + k * c + ch;
        for (size_t p = 0; p < plane; ++p) dst[p * depth] = src[p];
      }
    }
  }

  int lives() const { return lives_; }
  // ALE's screen (the last emulated frame) in RGB, as ALE's getScreenRGB.
  void render(uint8_t* out) {
    const uint8_t* s = screen();
    for (size_t p = 0; p < kScreenSize; ++p, out += 3) {
      out[0] = rgb_[0][s[p]];
      out[1] = rgb_[1][s[p]];
      out[2] = rgb_[2][s[p]];
    }
  }
  int32_t last_reward() const { return last_reward_; }  // the last step's, unclipped (0 after a reset)
  bool game_over() const { return ale_.game_over(false); }

  // Emulation only, for the benchmark's baseline.
  float emulate(int32_t action) { return step_frames(actions_[action], false); }

 private:
  // frame_skip frames of `a`, the last two max-pooled into pooled_. As
  // AtariPreprocessing: an episode that ends mid-step stops there, before
  // taking that frame's screen, and pools what it took with the last pooled
  // screens (AtariPreprocessing keeps its max in its frame buffer 0).
  // (take_screens = false: emulation only, for the benchmark's baseline.)
  float step_frames(ale::Action a, bool take_screens = true) {
    float reward = 0.f;
    const int fs = opt_.frame_skip;
    uint8_t* second = second_last_screen();
    int k = 0;
    for (; k < fs; ++k) {
      reward += static_cast<float>(ale_.act(a));
      if (ale_.game_over(false)) break;
      if (k == fs - 2 && take_screens) std::memcpy(second, screen(), kScreenSize);
    }
    if (!take_screens) return reward;
    if (k == fs) {
      pool(fs > 1 ? second : nullptr);
    } else if (k == fs - 1 && fs > 1) {
      for (int c = 0; c < opt_.channels(); ++c) palette_max_into(second, lut(c), pooled(c), kScreenSize);
    }
    return reward;
  }

  // ALE's screen: the last frame's palette indices.
  const uint8_t* screen() { return ale_.getScreen().getArray(); }
  const uint8_t* lut(int c) const { return opt_.gray_scale ? gray_.data() : rgb_[c].data(); }
  uint8_t* pooled(int c) { return pooled_.data() + static_cast<size_t>(c) * kScreenSize; }

  // pooled_ = the palette values of max(ALE's screen, second) (second may be null).
  void pool(const uint8_t* second) {
    for (int c = 0; c < opt_.channels(); ++c) palette_max(screen(), second, lut(c), pooled(c), kScreenSize);
  }

  // Frame k of the stack: 0 the newest.
  uint8_t* frame(int k) {
    return stack_.data() + static_cast<size_t>((head_ - k + opt_.stack_num) % opt_.stack_num) * opt_.frame_size();
  }
  const uint8_t* frame(int k) const { return const_cast<AtariGame*>(this)->frame(k); }

  // The resize of the pooled screen into a stack frame, one plane at a time.
  void preprocess(uint8_t* out) {
    const size_t plane = static_cast<size_t>(opt_.img_height) * opt_.img_width;
    for (int c = 0; c < opt_.channels(); ++c) {
      uint8_t* dst = out + c * plane;
      if (direct_) {
        std::memcpy(dst, pooled(c), kScreenSize);
      } else if (resize_.fits_16bit()) {
        resize_.apply(pooled(c), dst);
      } else {
        resize_.apply_general(pooled(c), dst);
      }
    }
  }

  const AtariOptions& opt_;
  const std::vector<ale::Action> actions_;
  ale::ALEInterface ale_;
  AreaResize resize_;
  bool direct_;
  std::vector<uint8_t> pooled_;                     // per channel: the palette values of the max-pooled screens
  std::array<uint8_t, 256> gray_{};
  std::array<std::array<uint8_t, 256>, 3> rgb_{};
  std::vector<uint8_t> stack_;
  int head_ = 0, lives_ = 0;
  int32_t last_reward_ = 0;
  bool life_lost_ = false, has_fire_ = false;
};

namespace {

std::vector<ale::Action> action_set(const AtariOptions& opt) {
  std::unique_ptr<ale::RomSettings> settings = rom_settings(opt.rom);
  return opt.full_action_space ? settings->getAllActions() : settings->getMinimalActionSet();
}

}  // namespace

core::Spec Atari::spec(const core::Options& options) {
  quiet_ale();
  const AtariOptions opt(options);
  core::Spec s;
  const int64_t channels = opt.channels();
  s.obs_shape = {opt.stack_num * channels, opt.img_height, opt.img_width};
  if (opt.channels_last) s.obs_shape = {opt.img_height, opt.img_width, opt.stack_num * channels};
  const size_t n = static_cast<size_t>(opt.stack_num) * opt.frame_size();
  s.obs_low.assign(n, 0.0);
  s.obs_high.assign(n, 255.0);
  s.num_actions = static_cast<int64_t>(action_set(opt).size());
  s.step_cost_ns = 250e3;  // about 4 emulated frames: one env per block
  // Measured with ale-py 0.12.1's emulator (Pong, 512-2048 envs): ~760 KiB of
  // address space per emulator, ~270 KiB of it resident; plus this env's
  // frame stack and max-pooled screen.
  const double frames = static_cast<double>(n) + static_cast<double>(opt.channels()) * kScreenSize;
  s.env_address_bytes = 760.0 * 1024 + frames;
  s.env_resident_bytes = 270.0 * 1024 + frames;
  s.info = {{.name = "lives"}};
  if (opt.envpool_info) s.info = {{.name = "lives"}, {.name = "reward"}, {.name = "terminated"}};
  s.render_shape = {kScreenH, kScreenW, 3};
  return s;
}

Atari::Atari(int n, const core::Options& options) : opt_(options) {
  quiet_ale();
  const std::vector<ale::Action> actions = action_set(opt_);
  games_.reserve(n);
  for (int i = 0; i < n; ++i) games_.push_back(std::make_unique<AtariGame>(opt_, actions));
}

Atari::~Atari() = default;

void Atari::reset(int i, core::Pcg64& rng) { games_[i]->reset(rng); }

core::StepResult Atari::step(int i, const Action* action) { return games_[i]->step(*action); }

void Atari::write_obs(int i, uint8_t* out) const { games_[i]->write_obs(out); }

void Atari::render(int i, uint8_t* out) { games_[i]->render(out); }

void Atari::write_info(int i, std::byte* out) const noexcept {
  const AtariGame& game = *games_[i];
  // int32 fields, one after the other (core::info_offsets).
  int32_t values[3] = {game.lives(), 0, 0};
  if (opt_.envpool_info) {
    values[1] = game.last_reward();
    values[2] = game.game_over();
  }
  std::memcpy(out, values, (opt_.envpool_info ? 3 : 1) * sizeof(int32_t));
}

double atari_loop_rate(const core::Options& options, int steps, bool preprocess) {
  quiet_ale();
  const AtariOptions opt(options);
  const std::vector<ale::Action> actions = action_set(opt);
  AtariGame game(opt, actions);
  core::Pcg64 rng;
  game.reset(rng);
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < steps; ++k) {
    const auto a = static_cast<int32_t>(rng.next_u64() % actions.size());
    if (preprocess) {
      game.step(a);
    } else {
      game.emulate(a);
    }
    if (game.game_over()) game.reset(rng);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return steps / s;
}

const char* atari_kernels() { return use_avx512() ? "avx512" : "portable"; }

}  // namespace fastvec::envs
