#include "envs/mujoco/render.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::mujoco {
namespace {

// EGL's types and the constants used here (EGL/egl.h, EGL/eglext.h), declared here so that building fastvec
// needs no EGL headers.
using EGLBoolean = unsigned int;
using EGLenum = unsigned int;
using EGLint = int32_t;
using EGLDisplay = void*;
using EGLConfig = void*;
using EGLContext = void*;
using EGLSurface = void*;
using EGLDeviceEXT = void*;
constexpr EGLint kNone = 0x3038, kSuccess = 0x3000, kDraw = 0x3059, kRead = 0x305A;
constexpr EGLenum kOpenGLApi = 0x30A2, kPlatformDeviceExt = 0x313F;
constexpr EGLBoolean kTrue = 1;

// mujoco.egl's EGL_ATTRIBUTES.
constexpr EGLint kConfigAttributes[] = {
    0x3024, 8,       // EGL_RED_SIZE
    0x3023, 8,       // EGL_GREEN_SIZE
    0x3022, 8,       // EGL_BLUE_SIZE
    0x3021, 8,       // EGL_ALPHA_SIZE
    0x3025, 24,      // EGL_DEPTH_SIZE
    0x3026, 8,       // EGL_STENCIL_SIZE
    0x303F, 0x308E,  // EGL_COLOR_BUFFER_TYPE, EGL_RGB_BUFFER
    0x3033, 0x0001,  // EGL_SURFACE_TYPE, EGL_PBUFFER_BIT
    0x3040, 0x0008,  // EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT
    kNone,
};

constexpr const char* kInstall =
    "; rendering MuJoCo frames headless needs EGL and an OpenGL driver: on Debian or Ubuntu, apt-get install "
    "libegl1 libegl-mesa0 libgl1-mesa-dri (Mesa, which renders on the CPU without a GPU), or a GPU's driver "
    "with its EGL (NVIDIA's)";

std::string hex(EGLint code) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%04X", static_cast<unsigned>(code));
  return text;
}

// libEGL, opened once per process (never closed), and the display and config every thread's context is made
// on. Read-only once made (a function-local static: made by the first thread that renders).
struct Egl {
  EGLint (*GetError)() = nullptr;
  EGLBoolean (*Initialize)(EGLDisplay, EGLint*, EGLint*) = nullptr;
  EGLBoolean (*ChooseConfig)(EGLDisplay, const EGLint*, EGLConfig*, EGLint, EGLint*) = nullptr;
  EGLBoolean (*BindAPI)(EGLenum) = nullptr;
  EGLContext (*CreateContext)(EGLDisplay, EGLConfig, EGLContext, const EGLint*) = nullptr;
  EGLBoolean (*DestroyContext)(EGLDisplay, EGLContext) = nullptr;
  EGLBoolean (*MakeCurrent)(EGLDisplay, EGLSurface, EGLSurface, EGLContext) = nullptr;
  EGLBoolean (*ReleaseThread)() = nullptr;
  EGLContext (*GetCurrentContext)() = nullptr;
  EGLDisplay (*GetCurrentDisplay)() = nullptr;
  EGLSurface (*GetCurrentSurface)(EGLint) = nullptr;
  void* (*GetProcAddress)(const char*) = nullptr;
  EGLBoolean (*QueryDevicesEXT)(EGLint, EGLDeviceEXT*, EGLint*) = nullptr;
  EGLDisplay (*GetPlatformDisplayEXT)(EGLenum, void*, const EGLint*) = nullptr;
  EGLDisplay display = nullptr;
  EGLConfig config = nullptr;
  std::string error;  // why this process cannot render; empty: it can
  const pid_t pid = getpid();  // the process whose driver state this is (a fork's child has none of its threads)

  Egl() {
    // (RTLD_LOCAL: MuJoCo finds libEGL among the loaded libraries when it loads OpenGL: render/glad/glad.c)
    void* lib = dlopen("libEGL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      error = std::string("libEGL.so.1 cannot be loaded (") + (why ? why : "not found") + ")" + kInstall;
      return;
    }
    const bool found = load(lib, GetError, "eglGetError") && load(lib, Initialize, "eglInitialize") &&
                       load(lib, ChooseConfig, "eglChooseConfig") && load(lib, BindAPI, "eglBindAPI") &&
                       load(lib, CreateContext, "eglCreateContext") && load(lib, DestroyContext, "eglDestroyContext") &&
                       load(lib, MakeCurrent, "eglMakeCurrent") && load(lib, ReleaseThread, "eglReleaseThread") &&
                       load(lib, GetCurrentContext, "eglGetCurrentContext") &&
                       load(lib, GetCurrentDisplay, "eglGetCurrentDisplay") &&
                       load(lib, GetCurrentSurface, "eglGetCurrentSurface") &&
                       load(lib, GetProcAddress, "eglGetProcAddress");
    if (!found) {
      error = "libEGL.so.1 lacks EGL 1.4's functions" + std::string(kInstall);
      return;
    }
    // Extensions (EGL_EXT_device_enumeration, EGL_EXT_platform_device), as mujoco.egl reaches them.
    QueryDevicesEXT = reinterpret_cast<decltype(QueryDevicesEXT)>(GetProcAddress("eglQueryDevicesEXT"));
    GetPlatformDisplayEXT =
        reinterpret_cast<decltype(GetPlatformDisplayEXT)>(GetProcAddress("eglGetPlatformDisplayEXT"));
    if (QueryDevicesEXT == nullptr || GetPlatformDisplayEXT == nullptr) {
      error = "EGL has no eglQueryDevicesEXT or eglGetPlatformDisplayEXT (EGL_EXT_device_enumeration, "
              "EGL_EXT_platform_device), which headless rendering needs" +
              std::string(kInstall);
      return;
    }
    if (!open_display()) return;
    EGLint count = 0;
    if (ChooseConfig(display, kConfigAttributes, &config, 1, &count) != kTrue || count < 1) {
      error = "EGL has no framebuffer configuration with 8-bit RGBA, 24-bit depth and 8-bit stencil for OpenGL "
              "(eglChooseConfig: " + hex(GetError()) + ")" + kInstall;
    }
  }

  template <class Fn>
  static bool load(void* lib, Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(dlsym(lib, name));
    return fn != nullptr;
  }

  // mujoco.egl's create_initialized_egl_device_display: the device MUJOCO_EGL_DEVICE_ID names (an index into
  // EGL's list of devices), or else the first device whose display initializes. (mujoco.egl also orders
  // devices by CUDA_VISIBLE_DEVICES when the driver tells which CUDA device backs each: not done here.)
  bool open_display() {
    EGLDeviceEXT devices[10];
    EGLint count = 0;
    if (QueryDevicesEXT(10, devices, &count) != kTrue) {
      error = "eglQueryDevicesEXT failed (" + hex(GetError()) + ")" + kInstall;
      return false;
    }
    int first = 0, last = count;
    if (const char* chosen = std::getenv("MUJOCO_EGL_DEVICE_ID")) {
      char* end = nullptr;
      const long id = std::strtol(chosen, &end, 10);
      if (end == chosen || *end != '\0' || id < 0 || id >= count) {
        error = "The MUJOCO_EGL_DEVICE_ID environment variable must be an integer between 0 and " +
                std::to_string(count - 1) + " (inclusive), got '" + chosen + "'";
        return false;
      }
      first = static_cast<int>(id);
      last = first + 1;
    }
    for (int k = first; k < last; ++k) {
      GetError();  // (clears an error left by someone else's call on this thread)
      EGLDisplay d = GetPlatformDisplayEXT(kPlatformDeviceExt, devices[k], nullptr);
      if (d == nullptr || GetError() != kSuccess) continue;
      if (Initialize(d, nullptr, nullptr) == kTrue && GetError() == kSuccess) {
        display = d;
        return true;
      }
    }
    error = "Cannot initialize an EGL device display (" + std::to_string(count) +
            " EGL device(s)): the EGL driver must support EGL_EXT_platform_device for a headless context" + kInstall;
    return false;
  }
};

const Egl& egl() {
  static const Egl e;  // (never destroyed before the threads that use it: it holds no resource to free)
  return e;
}

// What one thread renders with: its EGL context and its mjrContexts, one per model and buffer size. Owned by
// the thread (thread_local), made at its first frame, freed at its exit; an mjrContext whose model no one holds
// any more is freed at the thread's next frame.
class ThreadGl {
 public:
  // This thread's, its context made (not current yet); std::runtime_error if EGL cannot make one.
  static ThreadGl& get() {
    thread_local ThreadGl gl;
    if (gl.context_ == nullptr) gl.make();
    check_process(egl());
    return gl;
  }

  // The driver's state (its display's threads: Mesa's rasterizer's) is its process's: a child forked after
  // rendering would wait on threads it does not have. Refused instead.
  static void check_process(const Egl& e) {
    if (getpid() != e.pid)
      throw std::runtime_error("MuJoCo rendering: this process was forked from process " + std::to_string(e.pid) +
                               " after it had rendered, and EGL's state cannot be used across fork; render in the "
                               "parent, or start child processes with 'spawn' or 'forkserver'");
  }

  ThreadGl() = default;
  ThreadGl(const ThreadGl&) = delete;
  ThreadGl& operator=(const ThreadGl&) = delete;

  ~ThreadGl() {
    if (context_ == nullptr || getpid() != egl().pid) return;  // (a fork's copy of the parent's: not this one's)
    const Egl& e = egl();
    // Frees what MuJoCo made in the context if it can still be made current (at the process's exit, EGL's
    // display may have been terminated first: then the driver frees it all).
    const bool current = e.GetCurrentContext() == context_ ||
                         e.MakeCurrent(e.display, nullptr, nullptr, context_) == kTrue;
    if (current) {
      for (const std::unique_ptr<Entry>& entry : entries_) free_context(entry->con);
      e.MakeCurrent(e.display, nullptr, nullptr, nullptr);
    }
    e.DestroyContext(e.display, context_);
    e.ReleaseThread();
  }

  EGLContext handle() const { return context_; }

  // The mjrContext of model m with a buffer of width x height in this thread's context, which is current, its
  // heightfields those of `drawn` (m, or a copy of m whose task rewrote them, as dm_control's escape redraws its
  // terrain at every reset and uploads it again): a heightfield whose data differs from what this context last
  // uploaded is uploaded again (mjr_uploadHField). The context draws whichever env its thread renders, so what
  // it holds is compared at each frame rather than uploaded at the env's reset, which may run on another thread.
  mjrContext& context(const std::shared_ptr<const mjModel>& m, int width, int height, const mjModel& drawn) {
    Entry& entry = find(m, width, height);
    if (drawn.nhfielddata != static_cast<mjtSize>(entry.hfield.size()))
      throw std::logic_error("MuJoCo rendering: a model drawn with another's context has other heightfields");
    for (int h = 0; h < drawn.nhfield; ++h) {
      const size_t begin = static_cast<size_t>(drawn.hfield_adr[h]);
      const size_t size = static_cast<size_t>(drawn.hfield_nrow[h]) * static_cast<size_t>(drawn.hfield_ncol[h]);
      float* uploaded = entry.hfield.data() + begin;
      if (std::memcmp(uploaded, drawn.hfield_data + begin, size * sizeof(float)) == 0) continue;
      catching_errors([&] { mjr_uploadHField(&drawn, &entry.con, h); });
      std::copy_n(drawn.hfield_data + begin, size, uploaded);
    }
    return entry.con;
  }

 private:
  struct Entry {
    Entry(const std::shared_ptr<const mjModel>& m, int w, int h)
        : model(m), width(w), height(h), hfield(m->hfield_data, m->hfield_data + m->nhfielddata) {
      mjr_defaultContext(&con);
    }
    std::weak_ptr<const mjModel> model;
    int width, height;
    mjrContext con;
    std::vector<float> hfield;  // the heightfields' data con holds: all of them, as in mjModel's hfield_data
  };

  Entry& find(const std::shared_ptr<const mjModel>& m, int width, int height) {
    std::erase_if(entries_, [](const std::unique_ptr<Entry>& entry) {
      if (!entry->model.expired()) return false;
      free_context(entry->con);
      return true;
    });
    for (const std::unique_ptr<Entry>& entry : entries_) {
      if (!entry->model.owner_before(m) && !m.owner_before(entry->model) && entry->width == width &&
          entry->height == height)
        return *entry;
    }
    Entry& entry = *entries_.emplace_back(std::make_unique<Entry>(m, width, height));
    try {
      catching_errors([&] {
        // As gymnasium's MujocoEnv (model.vis.global_.offwidth = width, ...), but on a model shared read-only:
        // the buffer of the model's size, then resized.
        mjr_makeContext(m.get(), &entry.con, mjFONTSCALE_150);
        if (entry.con.offWidth != width || entry.con.offHeight != height)
          mjr_resizeOffscreen(width, height, &entry.con);
      });
    } catch (...) {
      free_context(entry.con);
      entries_.pop_back();
      throw;
    }
    return entry;
  }

  void make() {
    const Egl& e = egl();
    if (!e.error.empty()) throw std::runtime_error("MuJoCo rendering: " + e.error);
    check_process(e);
    if (e.BindAPI(kOpenGLApi) != kTrue)
      throw std::runtime_error("MuJoCo rendering: eglBindAPI(EGL_OPENGL_API) failed (" + hex(e.GetError()) + ")" +
                               kInstall);
    context_ = e.CreateContext(e.display, e.config, nullptr, nullptr);
    if (context_ == nullptr)
      throw std::runtime_error("MuJoCo rendering: cannot create an EGL context (" + hex(e.GetError()) + ")");
  }

  static void free_context(mjrContext& con) noexcept {
    try {
      catching_errors([&] { mjr_freeContext(&con); });
    } catch (...) {  // (MuJoCo reports no error when it frees; if it did, the context's memory is lost)
    }
  }

  EGLContext context_ = nullptr;
  std::vector<std::unique_ptr<Entry>> entries_;
};

// While it lives, this thread's context is current; the context that was current before (someone else's: the
// thread may draw with mujoco.egl too) is made current again when it ends. Nothing was current: this thread's
// stays current, for its next frame.
class CurrentContext {
 public:
  explicit CurrentContext(const ThreadGl& gl) {
    const Egl& e = egl();
    e.BindAPI(kOpenGLApi);  // (eglGetCurrentContext answers for the thread's bound API)
    previous_ = e.GetCurrentContext();
    if (previous_ == gl.handle()) return;
    if (previous_ != nullptr) {
      display_ = e.GetCurrentDisplay();
      draw_ = e.GetCurrentSurface(kDraw);
      read_ = e.GetCurrentSurface(kRead);
    }
    if (e.MakeCurrent(e.display, nullptr, nullptr, gl.handle()) != kTrue)
      throw std::runtime_error("MuJoCo rendering: eglMakeCurrent failed (" + hex(e.GetError()) +
                               "): is another kind of OpenGL context (GLX, OSMesa) current on this thread?");
    restore_ = previous_ != nullptr;
  }
  ~CurrentContext() {
    if (restore_) egl().MakeCurrent(display_, draw_, read_, previous_);
  }
  CurrentContext(const CurrentContext&) = delete;
  CurrentContext& operator=(const CurrentContext&) = delete;

 private:
  EGLContext previous_ = nullptr;
  EGLDisplay display_ = nullptr;
  EGLSurface draw_ = nullptr, read_ = nullptr;
  bool restore_ = false;
};

}  // namespace

void check_can_render() {
  const Egl& e = egl();
  if (!e.error.empty()) throw std::runtime_error("MuJoCo rendering: " + e.error);
  ThreadGl::check_process(e);
}

Renderer::Renderer(std::shared_ptr<const mjModel> model, int width, int height, int max_geom,
                   const mjvOption& option, int buffer_width, int buffer_height)
    : model_(std::move(model)),
      width_(width),
      height_(height),
      max_geom_(max_geom),
      buffer_width_(buffer_width > 0 ? buffer_width : width),
      buffer_height_(buffer_height > 0 ? buffer_height : height),
      option_(option) {
  if (width < 1 || height < 1 || buffer_width_ < width || buffer_height_ < height || max_geom < 0)
    throw std::invalid_argument("a frame of " + std::to_string(width) + "x" + std::to_string(height) +
                                " pixels in a buffer of " + std::to_string(buffer_width_) + "x" +
                                std::to_string(buffer_height_) + " with " + std::to_string(max_geom) +
                                " geoms cannot be drawn");
  mjv_defaultPerturb(&perturb_);
  mjv_defaultScene(&scene_);
}

Renderer::~Renderer() {
  if (scene_made_) mjv_freeScene(&scene_);
}

void Renderer::render(const mjModel& m, mjData& d, mjvCamera& cam, uint8_t* out) {
  ThreadGl& gl = ThreadGl::get();
  const CurrentContext current(gl);
  mjrContext& con = gl.context(model_, buffer_width_, buffer_height_, m);
  if (!scene_made_) {
    catching_errors([&] { mjv_makeScene(model_.get(), &scene_, max_geom_); });
    scene_made_ = true;
  }
  const size_t row = static_cast<size_t>(width_) * 3;
  upside_down_.resize(row * static_cast<size_t>(height_));
  const mjrRect viewport = {0, 0, width_, height_};
  catching_errors([&] {
    mjr_setBuffer(mjFB_OFFSCREEN, &con);
    mjv_updateScene(&m, &d, &option_, &perturb_, &cam, mjCAT_ALL, &scene_);
    mjr_render(viewport, &scene_, &con);
    mjr_readPixels(upside_down_.data(), nullptr, viewport, &con);
  });
  // OpenGL's rows go bottom to top; a frame's top to bottom (gymnasium's rgb_img[::-1, :]).
  for (int y = 0; y < height_; ++y)
    std::memcpy(out + static_cast<size_t>(y) * row, upside_down_.data() + static_cast<size_t>(height_ - 1 - y) * row,
                row);
}

}  // namespace fastvec::envs::mujoco
