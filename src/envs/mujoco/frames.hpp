#pragma once
// gymnasium's MuJoCo v5 envs' rgb_array frames: Rendered<E> is MuJoCo env E with gymnasium's MujocoEnv
// rendering options (width, height, max_geom, and, filled in by fastvec._render from gymnasium's keywords, the
// camera, its default_camera_config and the visual_options) and a render(i, out) that draws env i as
// gymnasium's MujocoRenderer and OffScreenViewer draw it.
// Reference: gymnasium/envs/mujoco/mujoco_env.py and mujoco_rendering.py.
//
// A Rendered<E> is a block of envs: rendered by one thread at a time (the pool's caller, between steps), as it
// is stepped.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "envs/mujoco/render.hpp"
#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::mujoco {

// How gymnasium's envs render, from the options: checked against the model when the pool is made.
struct FrameSettings {
  int width, height, max_geom;
  int camera_id;  // MujocoRenderer.camera_id: -1 the free camera, else a fixed camera of the model
  std::vector<std::pair<std::string, std::vector<double>>> camera_config;  // default_camera_config, in order
  mjvOption option;

  // The options' texts, as fastvec._render writes them: "camera" is "" (the camera named "track", or the free
  // camera if there is none, as gymnasium's default), "index:<camera_id>" or "name:<camera_name>";
  // "camera_config" is "key=v[,v...];..." (default_camera_config); "visual_options" is "flag=0|1;...".
  FrameSettings(const mjModel& m, const core::Options& o)
      : width(o.integer("width")), height(o.integer("height")), max_geom(o.integer("max_geom")) {
    camera_id = camera(m, o.text("camera"));
    for (const auto& [key, values] : entries(o.text("camera_config"))) {
      const size_t want = key == "lookat" ? 3 : 1;
      if (!is_camera_field(key))
        throw std::invalid_argument("default_camera_config: mujoco.MjvCamera has no attribute '" + key + "'");
      if (values.size() != want)
        throw std::invalid_argument("default_camera_config: '" + key + "' takes " + std::to_string(want) +
                                    " number(s)");
      camera_config.emplace_back(key, values);
    }
    mjv_defaultOption(&option);
    for (const auto& [key, values] : entries(o.text("visual_options"))) {
      char* end = nullptr;
      const long flag = std::strtol(key.c_str(), &end, 10);
      if (*end != '\0' || flag < 0 || flag >= mjNVISFLAG || values.size() != 1)
        throw std::invalid_argument("visual_options: flags are mujoco.mjtVisFlag values in [0, " +
                                    std::to_string(mjNVISFLAG - 1) + "], got " + key);
      option.flags[flag] = values[0] != 0;
    }
  }

  std::vector<int64_t> shape() const { return {height, width, 3}; }

  // gymnasium's OffScreenViewer._init_camera then MujocoRenderer._set_cam_config, at the env's first frame:
  // a free camera looking at the median of the geoms' positions from the model's extent, then the config.
  void first_camera(const mjModel& m, const mjData& d, mjvCamera& cam) const {
    mjv_defaultCamera(&cam);
    cam.type = mjCAMERA_FREE;
    cam.fixedcamid = -1;
    for (int k = 0; k < 3; ++k) cam.lookat[k] = median(d.geom_xpos + k, m.ngeom, 3);
    cam.distance = m.stat.extent;
    for (const auto& [key, v] : camera_config) {
      if (key == "lookat") std::copy(v.begin(), v.end(), cam.lookat);
      if (key == "distance") cam.distance = v[0];
      if (key == "azimuth") cam.azimuth = v[0];
      if (key == "elevation") cam.elevation = v[0];
      if (key == "type") cam.type = static_cast<int>(v[0]);
      if (key == "fixedcamid") cam.fixedcamid = static_cast<int>(v[0]);
      if (key == "trackbodyid") cam.trackbodyid = static_cast<int>(v[0]);
      if (key == "orthographic") cam.orthographic = static_cast<int>(v[0]);
    }
  }

 private:
  static bool is_camera_field(const std::string& key) {
    for (const char* f : {"type", "fixedcamid", "trackbodyid", "lookat", "distance", "azimuth", "elevation",
                          "orthographic"})
      if (key == f) return true;
    return false;
  }

  static int camera(const mjModel& m, const std::string& text) {
    if (text.empty()) return mj_name2id(&m, mjOBJ_CAMERA, "track");
    if (text.starts_with("index:")) {
      const long id = std::strtol(text.c_str() + 6, nullptr, 10);
      if (id < -1 || id >= m.ncam)
        throw std::invalid_argument("camera_id must be -1 (the free camera) or a camera of the model, in [0, " +
                                    std::to_string(m.ncam) + "), got " + text.substr(6));
      return static_cast<int>(id);
    }
    const std::string name = text.substr(text.find(':') + 1);
    const int id = mj_name2id(&m, mjOBJ_CAMERA, name.c_str());
    if (id < 0) {
      std::string names;
      for (int c = 0; c < m.ncam; ++c)
        if (const char* n = mj_id2name(&m, mjOBJ_CAMERA, c))
          names += (names.empty() ? "'" : ", '") + std::string(n) + "'";
      throw std::invalid_argument("camera_name: the model has no camera named '" + name + "' (its named cameras: " +
                                  (names.empty() ? "none" : names) + ")");
    }
    return id;
  }

  // "key=v,v;key=v" as (key, numbers) pairs.
  static std::vector<std::pair<std::string, std::vector<double>>> entries(const std::string& text) {
    std::vector<std::pair<std::string, std::vector<double>>> out;
    std::string_view rest(text);
    while (!rest.empty()) {
      const size_t end = std::min(rest.find(';'), rest.size());
      const std::string_view item = rest.substr(0, end);
      rest.remove_prefix(std::min(end + 1, rest.size()));
      const size_t eq = item.find('=');
      if (eq == std::string_view::npos)
        throw std::invalid_argument("malformed rendering option '" + std::string(item) + "'");
      std::vector<double> values;
      std::string numbers(item.substr(eq + 1));
      for (const char* p = numbers.c_str(); *p != '\0';) {
        char* next = nullptr;
        values.push_back(std::strtod(p, &next));
        if (next == p) throw std::invalid_argument("malformed rendering option '" + std::string(item) + "'");
        p = *next == ',' ? next + 1 : next;
      }
      out.emplace_back(std::string(item.substr(0, eq)), std::move(values));
    }
    return out;
  }

  // np.median of n values `stride` apart: NaN if any is NaN (or there are none); of an even count, the mean of
  // the middle two.
  static double median(const double* x, int n, int stride) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) v[k] = x[static_cast<size_t>(k) * stride];
    if (n == 0 || std::any_of(v.begin(), v.end(), [](double a) { return std::isnan(a); }))
      return std::numeric_limits<double>::quiet_NaN();
    std::sort(v.begin(), v.end());
    if (n % 2) return v[n / 2];
    return ((0.0 + v[n / 2 - 1]) + v[n / 2]) / 2.0;  // np.mean: a sum from 0, divided by the count
  }
};

// The rendering options of gymnasium's MujocoEnv that a pool's envs take: width, height, max_geom as keywords;
// camera, camera_config and visual_options as texts fastvec._render writes from camera_id, camera_name,
// default_camera_config and visual_options.
inline core::OptionTable frame_options() {
  using K = core::OptionSpec::Kind;
  return {
      {.name = "width", .kind = K::kInt, .fallback = 480, .low = 1, .high = 16384},
      {.name = "height", .kind = K::kInt, .fallback = 480, .low = 1, .high = 16384},
      {.name = "max_geom", .kind = K::kInt, .fallback = 1000, .low = 0, .high = 1e7},
      {.name = "camera", .kind = K::kString},
      {.name = "camera_config", .kind = K::kString},
      {.name = "visual_options", .kind = K::kString},
  };
}

template <class E>
class Rendered : public E {
 public:
  static core::OptionTable options() {
    core::OptionTable table = E::options();
    for (core::OptionSpec& o : frame_options()) table.push_back(std::move(o));
    return table;
  }
  static core::Spec spec(const core::Options& o) {
    core::Spec s = E::spec(o);
    s.render_shape = FrameSettings(*model_of(o), o).shape();  // (checks the camera against the model)
    return s;
  }

  Rendered(int n, const core::Options& o)
      : E(n, o),
        settings_(this->sim_.model(), o),
        renderer_(this->sim_.shared_model(), settings_.width, settings_.height, settings_.max_geom,
                  settings_.option),
        cameras_(static_cast<size_t>(n)),
        camera_made_(static_cast<size_t>(n), false) {}

  // The frame of env i (spec().render_shape), as gymnasium's env.render() in rgb_array mode draws it; each env
  // keeps its camera from its first frame on, as each gymnasium env keeps its viewer's.
  void render(int i, uint8_t* out) {
    mjData& d = this->sim_.data(i);
    mjvCamera& cam = cameras_[i];
    if (!camera_made_[i]) {
      settings_.first_camera(this->sim_.model(), d, cam);
      camera_made_[i] = true;
    }
    // OffScreenViewer.render(camera_id=...): -1 the free camera, else that fixed camera
    cam.type = settings_.camera_id == -1 ? mjCAMERA_FREE : mjCAMERA_FIXED;
    cam.fixedcamid = settings_.camera_id;
    renderer_.render(d, cam, out);
  }

 private:
  const FrameSettings settings_;
  Renderer renderer_;
  std::vector<mjvCamera> cameras_;
  std::vector<bool> camera_made_;
};

}  // namespace fastvec::envs::mujoco
