#pragma once
// dm_control's frames: what Physics.render(height, width, camera_id) draws, with MuJoCo's own renderer
// (envs/mujoco/render.hpp): a scene of _estimate_max_renderable_geoms geoms, dm_control's MjvOption (MuJoCo's
// defaults without rangefinders), the free camera (mjv_defaultFreeCamera) or a fixed one, in an offscreen buffer
// of the model's offwidth x offheight.
// Reference: dm_control/mujoco/engine.py (Physics.render, Camera) and mujoco/wrapper/core.py (MjvOption,
// MjvScene).
//
// A Frames belongs to a block of envs: it draws on the thread that runs the block (a pool worker, for pixel
// observations) or that peeks at it (render()), one at a time.

#include <mujoco/mujoco.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "envs/mujoco/render.hpp"

namespace fastvec::envs::dm_control {

// Physics.render's keywords, as options: height and width in pixels, camera_id -1 (the free camera) or a fixed
// camera of the model. dm_control's defaults.
inline core::OptionTable frame_options() {
  using K = core::OptionSpec::Kind;
  return {
      {.name = "height", .kind = K::kInt, .fallback = 240, .low = 1, .high = 16384},
      {.name = "width", .kind = K::kInt, .fallback = 320, .low = 1, .high = 16384},
      {.name = "camera_id", .kind = K::kInt, .fallback = -1, .low = -1, .high = 1 << 20},
  };
}

// The options, checked against the model as Camera.__init__ checks them (std::invalid_argument naming the
// option).
struct FrameSettings {
  int height, width, camera_id;

  FrameSettings(const mjModel& m, const core::Options& o)
      : height(o.integer("height")), width(o.integer("width")), camera_id(o.integer("camera_id")) {
    const int offwidth = m.vis.global.offwidth, offheight = m.vis.global.offheight;
    if (width > offwidth)
      throw std::invalid_argument("width: " + std::to_string(width) + " > the model's offscreen framebuffer width " +
                                  std::to_string(offwidth) + " (<visual><global offwidth=.../></visual>)");
    if (height > offheight)
      throw std::invalid_argument("height: " + std::to_string(height) +
                                  " > the model's offscreen framebuffer height " + std::to_string(offheight) +
                                  " (<visual><global offheight=.../></visual>)");
    if (camera_id >= m.ncam)
      throw std::invalid_argument("camera_id: the model has " + std::to_string(m.ncam) +
                                  " fixed camera(s), so camera_id must be -1 (the free camera) or in [0, " +
                                  std::to_string(m.ncam) + "), got " + std::to_string(camera_id));
  }

  std::vector<int64_t> shape() const { return {height, width, 3}; }
};

class Frames {
 public:
  Frames(std::shared_ptr<const mjModel> m, const FrameSettings& s)
      : renderer_(m, s.width, s.height, max_geom(*m), option(), m->vis.global.offwidth, m->vis.global.offheight) {
    mjv_defaultCamera(&camera_);  // (mujoco.MjvCamera())
    camera_.fixedcamid = s.camera_id;
    camera_.type = s.camera_id == -1 ? mjCAMERA_FREE : mjCAMERA_FIXED;
    if (s.camera_id == -1) mjv_defaultFreeCamera(m.get(), &camera_);
  }

  // The frame of d, drawn from m (the frames' model or an env's own copy of it), height x width x 3 RGB bytes.
  // Each of dm_control's frames has a camera of its own, made afresh: a copy of the first.
  void render(const mjModel& m, mjData& d, uint8_t* out) {
    mjvCamera cam = camera_;
    renderer_.render(m, d, cam, out);
  }

 private:
  // core.py's _estimate_max_renderable_geoms.
  static int max_geom(const mjModel& m) {
    const int frames = std::max({m.nbody, m.ngeom, m.nsite, m.ncam, m.nlight});
    return 3 * frames + 4 * m.ngeom + 3 * m.nbody + m.nsite + m.ntendon + m.njnt + m.nu + m.nskin + m.ncam +
           m.nlight;
  }

  // dm_control's MjvOption: MuJoCo's defaults, rangefinders off.
  static mjvOption option() {
    mjvOption o;
    mjv_defaultOption(&o);
    o.flags[mjVIS_RANGEFINDER] = 0;
    return o;
  }

  mujoco::Renderer renderer_;
  mjvCamera camera_;
};

}  // namespace fastvec::envs::dm_control
