#pragma once
// Pixel observations of a dm_control task, as dm_control.suite.wrappers.pixels.Wrapper gives them with
// pixels_only=True: each observation is the frame Physics.render(**render_kwargs) draws after the step or reset
// (frames.hpp; the options height, width and camera_id are render_kwargs'), under the key "pixels" (a Dict of
// one field; flat_observation: the bare (height, width, 3) array). The frame is drawn where the observation is
// written: in the pool's worker thread that steps the env, in that thread's own EGL context (render.hpp).
// pixels_only=False (the state's keys beside "pixels") is refused: a pool's observations have one dtype.
// Reference: dm_control/suite/wrappers/pixels.py.

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/dm_control/dm_control_env.hpp"

namespace fastvec::envs::dm_control {

template <class T>
class DmControlPixels {
 public:
  using Obs = uint8_t;
  using Action = double;
  using Reward = double;

  // DmControlEnv<T>'s options, and from_pixels (which makes a pool of these: register_dm_control.cpp) and
  // pixels_only.
  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    core::OptionTable table = DmControlEnv<T>::options();
    table.push_back({.name = "from_pixels", .kind = K::kBool, .fallback = 0});
    table.push_back({.name = "pixels_only", .kind = K::kBool, .fallback = 1});
    return table;
  }

  static core::Spec spec(const core::Options& o) {
    if (!o.flag("pixels_only"))
      throw std::invalid_argument(
          "pixels_only: fastvec's pixel observations are the frames alone (pixels_only=True): the state's float64 "
          "arrays and the uint8 frame cannot share one observation; leave it True");
    core::Spec s = DmControlEnv<T>::spec(o);
    const std::vector<int64_t> shape = s.render_shape;
    const int64_t size = shape[0] * shape[1] * shape[2];
    s.obs_fields.clear();
    if (o.flag("flat_observation")) {
      s.obs_shape = shape;
    } else {
      s.obs_shape = {size};
      s.obs_fields.push_back({"pixels", shape});
    }
    s.obs_low.assign(size, 0);
    s.obs_high.assign(size, 255);
    // A frame takes about a millisecond on Mesa's CPU rasterizer (more than the physics): one env per block.
    s.step_cost_ns += 1e6;
    return s;
  }

  // (std::runtime_error saying what to install if this process cannot render)
  DmControlPixels(int n, const core::Options& o) : env_(n, o) {
    mujoco::check_can_render();
  }

  void reset(int i, core::Pcg64& rng) { env_.reset(i, rng); }
  core::BasicStepResult<double> step(int i, const double* action) { return env_.step(i, action); }

  // The frame, drawn on the calling thread (the worker that stepped or reset env i).
  void write_obs(int i, uint8_t* out) const { env_.render(i, out); }
  void render(int i, uint8_t* out) { env_.render(i, out); }

 private:
  // (mutable: writing an observation draws it, which changes the renderer's scene and buffers, not the env)
  mutable DmControlEnv<T> env_;
};

}  // namespace fastvec::envs::dm_control
