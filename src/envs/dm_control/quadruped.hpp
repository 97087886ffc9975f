#pragma once
// Quadruped's walk, run, escape and fetch tasks: a port of dm_control/suite/quadruped.py (Move, Escape, Fetch), on
// the models its make_model(floor_size, terrain, rangefinders, walls_and_ball) builds
// (fastvec/dm_control_models.py makes the same files).

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <string_view>
#include <vector>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"
#include "envs/dm_control/zoom.hpp"
#include "envs/numpy_unary.hpp"

namespace fastvec::envs::dm_control::quadruped {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// What the tasks share: the model's parts they read, _common_observations and _find_non_contacting_height.
class Common {
 public:
  explicit Common(const mjModel& m)
      : torso_(object_id(m, mjOBJ_BODY, "torso")),
        root_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "root")]),
        velocimeter_(m.sensor_adr[object_id(m, mjOBJ_SENSOR, "velocimeter")]),
        na_(static_cast<int>(m.na)) {
    if (m.jnt_type[object_id(m, mjOBJ_JOINT, "root")] != mjJNT_FREE)
      throw std::invalid_argument("xml_file: the quadruped's root joint must be free");
    for (int j = 0; j < m.njnt; ++j) {
      if (m.jnt_type[j] != mjJNT_HINGE) continue;
      hinge_qpos_.push_back(m.jnt_qposadr[j]);
      hinge_qvel_.push_back(m.jnt_dofadr[j]);
    }
    // the sensors of these types, in the model's order (Physics._get_sensor_names)
    for (int s = 0; s < m.nsensor; ++s) {
      const int type = m.sensor_type[s];
      std::vector<int>* to = type == mjSENS_GYRO || type == mjSENS_ACCELEROMETER ? &imu_
                             : type == mjSENS_FORCE || type == mjSENS_TORQUE     ? &force_torque_
                                                                                 : nullptr;
      for (int k = 0; to != nullptr && k < m.sensor_dim[s]; ++k) to->push_back(m.sensor_adr[s] + k);
    }
  }

  std::vector<core::ObsField> observation() const {
    return {{"egocentric_state", {static_cast<int64_t>(2 * hinge_qpos_.size()) + na_}},
            {"torso_velocity", {3}},
            {"torso_upright", {}},
            {"imu", {static_cast<int64_t>(imu_.size())}},
            {"force_torque", {static_cast<int64_t>(force_torque_.size())}}};
  }

  double* write_obs(const mjData& d, double* out) const {
    for (int a : hinge_qpos_) *out++ = d.qpos[a];
    for (int a : hinge_qvel_) *out++ = d.qvel[a];
    out = std::copy(d.act, d.act + na_, out);
    out = std::copy(d.sensordata + velocimeter_, d.sensordata + velocimeter_ + 3, out);
    *out++ = torso_upright(d);
    for (int a : imu_) *out++ = d.sensordata[a];
    for (int a : force_torque_) *out++ = numpy_arcsinh(d.sensordata[a]);
    return out;
  }

  // _find_non_contacting_height: the root at (x, y, z) with `orientation`, z from 0 up by 0.01 until nothing
  // touches (each try in a reset_context, its PhysicsError ignored).
  void find_non_contacting_height(Physics& p, int i, const double* orientation, double x, double y) const {
    mjData& d = p.data(i);
    double z = 0.0;
    int num_contacts = 1, num_attempts = 0;
    while (num_contacts > 0) {
      p.reset(i);
      d.qpos[root_] = x;
      d.qpos[root_ + 1] = y;
      d.qpos[root_ + 2] = z;
      std::copy(orientation, orientation + 4, d.qpos + root_ + 3);
      try {
        p.after_reset(i);
      } catch (const core::EnvError& e) {
        if (std::string_view(e.what()).rfind("PhysicsError", 0) != 0) throw;
      }
      num_contacts = d.ncon;
      z += 0.01;
      if (++num_attempts > 10000)
        throw core::EnvError("Failed to find a non-contacting configuration of the quadruped.");
    }
  }

  double torso_upright(const mjData& d) const { return d.xmat[9 * torso_ + 8]; }
  double torso_velocity_x(const mjData& d) const { return d.sensordata[velocimeter_]; }
  int torso() const { return torso_; }

 private:
  int torso_, root_, velocimeter_, na_;
  std::vector<int> hinge_qpos_, hinge_qvel_, imu_, force_torque_;
};

// _upright_reward(physics, deviation_angle=0): cos(0) is 1.
inline const Tolerance kUpright{1, kInf, 2, Sigmoid::kLinear, 0};

// kSpeedTenths: the desired speed in tenths of m/s: 5 (walk, on a 10 m floor) or 50 (run, 100 m).
template <int kSpeedTenths>
class Move {
 public:
  static constexpr const char* kModel = kSpeedTenths == 5 ? "quadruped_walk.xml" : "quadruped_run.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;
  static constexpr double kSpeed = kSpeedTenths == 5 ? 0.5 : 5;

  explicit Move(const mjModel& m) : common_(m) {}

  std::vector<core::ObsField> observation() const { return common_.observation(); }

  void initialize_episode(Physics& p, int i, RandomState& random) const {
    double orientation[4];
    for (double& q : orientation) q = random.standard_normal();
    const double norm = mujoco::norm(orientation, 4);
    for (double& q : orientation) q /= norm;
    common_.find_non_contacting_height(p, i, orientation, 0.0, 0.0);
  }

  double reward(const mjModel&, const mjData& d) const {
    const double move_reward = move_(common_.torso_velocity_x(d), Arg::kScalar);
    return kUpright(common_.torso_upright(d), Arg::kArray) * move_reward;
  }

  void write_obs(const mjModel&, const mjData& d, double* out) const { common_.write_obs(d, out); }

 private:
  Common common_;
  Tolerance move_{kSpeed, kInf, kSpeed, Sigmoid::kLinear, 0.5};
};

// Escape: out of a bowl of random bumps, a heightfield each env redraws at reset into its own model (hfield_data:
// physics reads it, and the renderer uploads it again where its context holds another: render.hpp).
class Escape {
 public:
  static constexpr const char* kModel = "quadruped_escape.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;
  static constexpr bool kModelPerEnv = true;

  explicit Escape(const mjModel& m)
      : common_(m),
        workspace_(object_id(m, mjOBJ_SITE, "workspace")),
        upright_(upright_tolerance()),
        escape_(m.nhfield > 0 ? m.hfield_size[0] : 0, kInf, m.nhfield > 0 ? m.hfield_size[0] : 0, Sigmoid::kLinear,
                0) {
    if (m.nhfield < 1) throw std::invalid_argument("xml_file: the escape task's model needs its terrain heightfield");
    res_ = m.hfield_nrow[0];
    if (res_ != m.hfield_ncol[0]) throw std::invalid_argument("xml_file: the terrain heightfield must be square");
    hfield_adr_ = m.hfield_adr[0];
    // terrain_size / _TERRAIN_BUMP_SCALE (2 m) bumps along each side, zoomed to the heightfield's resolution
    bump_res_ = static_cast<int64_t>(2 * m.hfield_size[0] / 2);
    if (bump_res_ < 1 || zoom_shape(bump_shape(), res_ / static_cast<double>(bump_res_))[0] != res_)
      throw std::invalid_argument("xml_file: the terrain heightfield's size gives no whole bump grid for it");
    // The sinusoidal bowl: np.ogrid[-1:1:res*1j, -1:1:res*1j] (i * step + -1), radius clipped to [.04, 1].
    const double step = 2 / static_cast<double>(res_ - 1);
    std::vector<double> grid(res_), square(res_);
    for (int64_t k = 0; k < res_; ++k) {
      grid[k] = static_cast<double>(k) * step + -1.0;
      square[k] = grid[k] * grid[k];
    }
    bowl_.resize(res_ * res_);
    for (int64_t r = 0; r < res_; ++r) {
      for (int64_t c = 0; c < res_; ++c) {
        const double radius = std::min(std::max(std::sqrt(square[c] + square[r]), .04), 1.0);
        bowl_[r * res_ + c] = .5 - numpy_cos(2 * std::numbers::pi * radius) / 2;
      }
    }
    for (int s = 0; s < m.nsensor; ++s)
      for (int k = 0; m.sensor_type[s] == mjSENS_RANGEFINDER && k < m.sensor_dim[s]; ++k)
        rangefinders_.push_back(m.sensor_adr[s] + k);
  }

  std::vector<core::ObsField> observation() const {
    std::vector<core::ObsField> fields = common_.observation();
    fields.push_back({"origin", {3}});
    fields.push_back({"rangefinder", {static_cast<int64_t>(rangefinders_.size())}});
    return fields;
  }

  // The terrain: the bowl times bumps uniform in [_TERRAIN_SMOOTHNESS, 1) zoomed by scipy's cubic spline, as
  // float32 into env i's heightfield; then the quadruped dropped at the origin in a random orientation.
  void initialize_episode(Physics& p, int i, RandomState& random) {
    bumps_.resize(bump_res_ * bump_res_);
    for (double& b : bumps_) b = random.uniform(kSmoothness, 1);
    smooth_.resize(res_ * res_);
    zoom(bumps_.data(), bump_shape(), res_ / static_cast<double>(bump_res_), smooth_.data(), zoom_work_);
    float* hfield = p.own_model(i).hfield_data + hfield_adr_;
    for (int64_t k = 0; k < res_ * res_; ++k) hfield[k] = static_cast<float>(bowl_[k] * smooth_[k]);
    double orientation[4];
    for (double& q : orientation) q = random.standard_normal();
    const double norm = mujoco::norm(orientation, 4);
    for (double& q : orientation) q /= norm;
    common_.find_non_contacting_height(p, i, orientation, 0.0, 0.0);
  }

  double reward(const mjModel&, const mjData& d) const {
    const double escape = escape_(mujoco::norm(d.site_xpos + 3 * workspace_, 3), Arg::kArray);
    return upright_(common_.torso_upright(d), Arg::kArray) * escape;
  }

  // origin: -torso_pos.dot(torso_frame); rangefinder: tanh of each reading, 1 where it found nothing (-1).
  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out = common_.write_obs(d, out);
    const int torso = common_.torso();
    vec_dot_mat3(d.xpos + 3 * torso, d.xmat + 9 * torso, out);
    for (int k = 0; k < 3; ++k) out[k] = -out[k];
    out += 3;
    for (int a : rangefinders_) *out++ = d.sensordata[a] == -1.0 ? 1.0 : numpy_tanh(d.sensordata[a]);
  }

 private:
  static constexpr double kSmoothness = 0.15;  // _TERRAIN_SMOOTHNESS

  // _upright_reward(physics, deviation_angle=20): np.cos(np.deg2rad(20)), numpy's deg2rad being x * (pi / 180).
  static Tolerance upright_tolerance() {
    const double deviation = numpy_cos(20 * (std::numbers::pi / 180.0));
    return Tolerance(deviation, kInf, 1 + deviation, Sigmoid::kLinear, 0);
  }

  std::vector<int64_t> bump_shape() const { return {bump_res_, bump_res_}; }

  Common common_;
  int workspace_;
  Tolerance upright_, escape_;
  int64_t res_ = 0, bump_res_ = 0, hfield_adr_ = 0;
  std::vector<double> bowl_;
  std::vector<int> rangefinders_;
  // initialize_episode's scratch (a block's task is called from one thread at a time)
  std::vector<double> bumps_, smooth_, zoom_work_;
};

class Fetch {
 public:
  static constexpr const char* kModel = "quadruped_fetch.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;

  explicit Fetch(const mjModel& m)
      : common_(m),
        ball_(object_id(m, mjOBJ_BODY, "ball")),
        ball_qpos_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "ball_root")]),
        ball_qvel_(m.jnt_dofadr[object_id(m, mjOBJ_JOINT, "ball_root")]),
        root_qvel_(m.jnt_dofadr[object_id(m, mjOBJ_JOINT, "root")]),
        target_(object_id(m, mjOBJ_SITE, "target")),
        workspace_(object_id(m, mjOBJ_SITE, "workspace")),
        floor_size_(m.geom_size[3 * object_id(m, mjOBJ_GEOM, "floor")]),
        reach_(0, m.site_size[3 * workspace_] + m.geom_size[3 * object_id(m, mjOBJ_GEOM, "ball")], arena_radius(),
               Sigmoid::kLinear, 0),
        fetch_(0, m.site_size[3 * target_], arena_radius(), Sigmoid::kLinear, 0) {
    if (m.jnt_type[object_id(m, mjOBJ_JOINT, "ball_root")] != mjJNT_FREE)
      throw std::invalid_argument("xml_file: the ball's joint must be free");
  }

  std::vector<core::ObsField> observation() const {
    std::vector<core::ObsField> fields = common_.observation();
    fields.push_back({"ball_state", {9}});
    fields.push_back({"target_position", {3}});
    return fields;
  }

  void initialize_episode(Physics& p, int i, RandomState& random) const {
    const double azimuth = random.uniform(0, 2 * std::numbers::pi);
    const double orientation[4] = {std::cos(azimuth / 2), 0, 0, std::sin(azimuth / 2)};
    const double spawn_radius = 0.9 * floor_size_;
    const double x = random.uniform(-spawn_radius, spawn_radius);
    const double y = random.uniform(-spawn_radius, spawn_radius);
    common_.find_non_contacting_height(p, i, orientation, x, y);
    mjData& d = p.data(i);
    d.qpos[ball_qpos_] = random.uniform(-spawn_radius, spawn_radius);
    d.qpos[ball_qpos_ + 1] = random.uniform(-spawn_radius, spawn_radius);
    d.qpos[ball_qpos_ + 2] = 2;
    d.qvel[ball_qvel_] = 5 * random.standard_normal();
    d.qvel[ball_qvel_ + 1] = 5 * random.standard_normal();
  }

  double reward(const mjModel&, const mjData& d) const {
    const double reach = reach_(horizontal_distance(d.site_xpos + 3 * workspace_, d.xpos + 3 * ball_), Arg::kScalar);
    const double fetch = fetch_(horizontal_distance(d.site_xpos + 3 * target_, d.xpos + 3 * ball_), Arg::kScalar);
    const double reach_then_fetch = reach * (0.5 + 0.5 * fetch);
    return kUpright(common_.torso_upright(d), Arg::kArray) * reach_then_fetch;
  }

  // ball_state: the ball's position and velocity from the torso's and its angular velocity, rows of a 3x3 matrix
  // times the torso's frame; target_position: the target from the torso, in its frame.
  void write_obs(const mjModel&, const mjData& d, double* out) const {
    out = common_.write_obs(d, out);
    const int torso = common_.torso();
    const double* torso_pos = d.xpos + 3 * torso;
    const double* frame = d.xmat + 9 * torso;
    double row[3];
    for (int k = 0; k < 3; ++k) row[k] = d.xpos[3 * ball_ + k] - torso_pos[k];
    vec_dot_mat3(row, frame, out);
    for (int k = 0; k < 3; ++k) row[k] = d.qvel[ball_qvel_ + k] - d.qvel[root_qvel_ + k];
    vec_dot_mat3(row, frame, out + 3);
    vec_dot_mat3(d.qvel + ball_qvel_ + 3, frame, out + 6);
    for (int k = 0; k < 3; ++k) row[k] = d.site_xpos[3 * target_ + k] - torso_pos[k];
    vec_dot_mat3(row, frame, out + 9);
  }

 private:
  double arena_radius() const { return floor_size_ * std::sqrt(2.0); }

  // np.linalg.norm((a - b)[:2])
  static double horizontal_distance(const double* a, const double* b) {
    const double v[2] = {a[0] - b[0], a[1] - b[1]};
    return mujoco::norm(v, 2);
  }

  Common common_;
  int ball_, ball_qpos_, ball_qvel_, root_qvel_, target_, workspace_;
  double floor_size_;
  Tolerance reach_, fetch_;
};

}  // namespace fastvec::envs::dm_control::quadruped
