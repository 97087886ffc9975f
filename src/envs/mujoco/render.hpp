#pragma once
// MuJoCo's own renderer (mjv_updateScene, mjr_render, mjr_readPixels) drawing offscreen, headless, in an OpenGL
// context made with EGL. libEGL is loaded at run time (dlopen), when a thread first renders: fastvec builds and
// imports without it, and only rendering fails, saying what to install. The display is the one mujoco.egl picks
// (mujoco/egl/__init__.py: the first EGL device that initializes, or MUJOCO_EGL_DEVICE_ID's; its config
// attributes; a surfaceless EGL_OPENGL_API context), so that frames are the ones MuJoCo's Python bindings draw
// with MUJOCO_GL=egl.
//
// Who owns what: an OpenGL context is current on one thread at a time, so each thread that renders owns one
// EGL context of its own (made at its first frame) and, in that context, one mjrContext per model and buffer
// size (MuJoCo's copy of the model's meshes and textures, and the offscreen framebuffer). Both live in a
// thread_local object, freed by the thread itself: when it exits (a pool's workers, when the pool closes), and,
// for the mjrContexts of models that no one holds any more, at its next frame (a long-lived thread, such as the
// Python thread that calls render()). Beside each mjrContext, the thread keeps the heightfields' data it last
// uploaded there, to upload again the ones an env has rewritten since (render()). A Renderer (its scene) belongs
// to whoever renders with it, one thread at a time, as a block of envs does.

#include <mujoco/mujoco.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fastvec::envs::mujoco {

// Throws the std::runtime_error a first frame would (saying what to install) if this process cannot render:
// for envs that draw their observations, to fail when they are made.
void check_can_render();

class Renderer {
 public:
  // Frames of `model`, width x height pixels, drawn with a scene of at most max_geom geoms and the visual
  // options `option`, into an offscreen buffer of buffer_width x buffer_height (at least the frame's size;
  // 0: the frame's size, as gymnasium's MujocoEnv sets the model's offwidth and offheight; dm_control draws
  // into the model's own offwidth x offheight). std::invalid_argument if a size is out of range.
  Renderer(std::shared_ptr<const mjModel> model, int width, int height, int max_geom, const mjvOption& option,
           int buffer_width = 0, int buffer_height = 0);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Draws d as cam sees it (a fixed camera: type mjCAMERA_FIXED and fixedcamid; a free one: lookat, distance,
  // azimuth and elevation; a tracking one: trackbodyid too, which mjv_updateScene moves, as MuJoCo does) into
  // out, height x width x 3 RGB bytes, rows top to bottom. On the calling thread, in its own context (made
  // here at its first frame; a context of someone else's current on the thread is made current again after).
  // std::runtime_error saying what to install when EGL is missing or unusable; core::EnvError for MuJoCo's errors.
  void render(mjData& d, mjvCamera& cam, uint8_t* out) { render(*model_, d, cam, out); }
  // The same, with the scene drawn from m: the renderer's model or a copy of it that differs only in what the
  // scene reads (a dm_control env's own model, whose task moved a target) or in its heightfields' data (escape's
  // terrain, redrawn at reset), not in meshes or textures, which the renderer's model has uploaded. A heightfield
  // whose data differs from what this thread's context holds is uploaded again first (mjr_uploadHField, as
  // dm_control's escape does after it redraws its terrain), so a thread drawing several envs draws each one's.
  void render(const mjModel& m, mjData& d, mjvCamera& cam, uint8_t* out);

  int width() const { return width_; }
  int height() const { return height_; }

 private:
  std::shared_ptr<const mjModel> model_;
  const int width_, height_, max_geom_, buffer_width_, buffer_height_;
  mjvOption option_;
  mjvPerturb perturb_;
  mjvScene scene_;  // made at the first frame
  bool scene_made_ = false;
  std::vector<uint8_t> upside_down_;  // mjr_readPixels' rows, bottom to top
};

}  // namespace fastvec::envs::mujoco
