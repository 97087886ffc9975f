#pragma once
// Atari 2600 games on the Arcade Learning Environment's emulator, with the
// standard preprocessing done here in C++ (gymnasium's AtariPreprocessing +
// FrameStackObservation, EnvPool's option names):
//   frame_skip frames per step, max over the last two; grayscale or RGB
//   through the palette; area resize 210x160 -> img_height x img_width as
//   OpenCV's INTER_AREA computes it; the last stack_num frames, oldest first,
//   channel-first (or channel-last on request); noop starts, sticky actions (inside ALE), fire reset,
//   episodic life, reward clipping as options.
//
// The ALE headers stay in atari.cpp: this header is what the pool sees.
// Each env owns its emulator; a block is one env (the pool calls one env
// from one thread at a time).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"

namespace fastvec::envs {

struct AtariOptions {
  std::string rom;
  int frame_skip = 4, img_height = 84, img_width = 84, stack_num = 4, noop_max = 30;
  bool gray_scale = true, use_fire_reset = false, episodic_life = false, reward_clip = false;
  bool full_action_space = false;
  bool channels_last = false;  // (H, W, stack * C) instead of (stack * C, H, W): RLlib's CNNs want it
  bool envpool_info = false;   // info also has EnvPool's "reward" (unclipped) and "terminated" (game over)
  float repeat_action_probability = 0.25f;

  // Reads the options (core::Options checked them against Atari::options()).
  explicit AtariOptions(const core::Options& o);
  int channels() const { return gray_scale ? 1 : 3; }
  size_t frame_size() const { return static_cast<size_t>(channels()) * img_height * img_width; }
};

class AtariGame;  // one emulator and its frame buffers (atari.cpp)

class Atari {
 public:
  using Obs = uint8_t;
  using Action = int32_t;

  // EnvPool's option names, gymnasium v5's defaults (ALE/<Game>-v5 with
  // AtariPreprocessing and FrameStackObservation(4)); "rom" is the game's
  // ROM file, filled in by fastvec's registry.
  static core::OptionTable options();
  static core::Spec spec(const core::Options& options);

  Atari(int n, const core::Options& options);
  ~Atari();
  Atari(const Atari&) = delete;
  Atari& operator=(const Atari&) = delete;

  void reset(int i, core::Pcg64& rng);
  core::StepResult step(int i, const Action* action);
  void write_obs(int i, uint8_t* out) const;
  void write_info(int i, std::byte* out) const noexcept;  // spec's info: lives (, reward, terminated), int32
  void render(int i, uint8_t* out);                     // the screen, (210, 160, 3) RGB

 private:
  AtariOptions opt_;
  std::vector<std::unique_ptr<AtariGame>> games_;
};

// One emulator stepped in a single-thread loop, for the benchmark's baseline
// (raw emulation rate, with and without the preprocessing). Returns steps/s.
double atari_loop_rate(const core::Options& options, int steps, bool preprocess);

// The preprocessing kernels this process runs: "avx512" (a CPU with AVX-512
// BW and VBMI) or "portable" (the compiler's vectorization of plain loops).
const char* atari_kernels();

}  // namespace fastvec::envs
