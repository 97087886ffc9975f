#pragma once
// The dog's stand, walk, trot, run and fetch tasks: a port of dm_control/suite/dog.py (Stand, Move, Fetch), on
// the models its make_model(floor_size, remove_ball) builds (fastvec/dm_control_models.py makes the same files).

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "envs/dm_control/dm_control_env.hpp"
#include "envs/dm_control/rewards.hpp"

namespace fastvec::envs::dm_control::dog {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
// _MIN_UPRIGHT_COSINE: np.cos(np.deg2rad(30)), deg2rad as numpy computes it.
inline const double kMinUprightCosine = std::cos(30 * (std::numbers::pi / 180.0));

// Stand: what every task observes, rewards and draws at reset.
class Stand {
 public:
  static constexpr const char* kModel = "dog_walk.xml";  // stand's floor is walk's: _WALK_SPEED * 15
  static constexpr double kTimeLimit = 15;
  static constexpr double kControlTimestep = .015;

  explicit Stand(const mjModel& m)
      : torso_(object_id(m, mjOBJ_BODY, "torso")),
        pelvis_(object_id(m, mjOBJ_BODY, "pelvis")),
        skull_(object_id(m, mjOBJ_BODY, "skull")),
        root_qpos_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "root")]),
        torso_linvel_(m.sensor_adr[object_id(m, mjOBJ_SENSOR, "torso_linvel")]),
        nu_(static_cast<int>(m.nu)) {
    if (m.jnt_type[object_id(m, mjOBJ_JOINT, "root")] != mjJNT_FREE || m.jnt_dofadr[0] != 0)
      throw std::invalid_argument("xml_file: the dog's first joint must be its free root");
    if (m.nu != m.na) throw std::invalid_argument("xml_file: each of the dog's actuators must have one state");
    for (int j = 0; j < m.njnt; ++j) {
      if (m.jnt_type[j] != mjJNT_HINGE) continue;
      hinge_qpos_.push_back(m.jnt_qposadr[j]);
      hinge_qvel_.push_back(m.jnt_dofadr[j]);
    }
    for (const char* name : {"accelerometer", "velocimeter", "gyro"}) add_sensor(m, name, inertial_);
    for (const char* name : {"foot_L", "foot_R", "hand_L", "hand_R"}) add_sensor(m, name, foot_forces_);
    for (const char* name : {"palm_L", "palm_R", "sole_L", "sole_R"}) add_sensor(m, name, touch_);
    // initialize_episode's stand heights, of the default pose after physics.reset() (the same at every reset),
    // and the body's weight.
    mujoco::DataPtr d(mj_makeData(&m));
    mj_resetData(&m, d.get());
    mj_forward(&m, d.get());
    const double torso_height = d->xpos[3 * torso_ + 2] * kStandHeightFraction;
    const double pelvis_height = d->xpos[3 * pelvis_ + 2] * kStandHeightFraction;
    torso_height_ = Tolerance(torso_height, kInf, torso_height);
    pelvis_height_ = Tolerance(pelvis_height, kInf, pelvis_height);
    const double body_weight = -m.opt.gravity[2] * m.body_subtreemass[torso_];
    touch_weight_ = Tolerance(body_weight, kInf, body_weight, Sigmoid::kLinear, 0.9);
  }

  std::vector<core::ObsField> observation() const {
    const auto hinges = static_cast<int64_t>(hinge_qpos_.size());
    return {{"joint_angles", {hinges}},
            {"joint_velocites", {hinges}},  // sic, dm_control's key
            {"torso_pelvis_height", {2}},
            {"z_projection", {9}},
            {"torso_com_velocity", {3}},
            {"inertial_sensors", {static_cast<int64_t>(inertial_.size())}},
            {"foot_forces", {static_cast<int64_t>(foot_forces_.size())}},
            {"touch_sensors", {static_cast<int64_t>(touch_.size())}},
            {"actuator_state", {nu_}}};
  }

  // physics.reset() (again: reset_context did it), a random heading, random root velocities in the horizontal
  // plane and a random state of each actuator.
  void initialize_episode(Physics& p, int i, RandomState& random) const {
    p.reset(i);
    const mjModel& m = p.model();
    mjData& d = p.data(i);
    const double azimuth = random.uniform(0, 2 * std::numbers::pi);
    const double orientation[4] = {std::cos(azimuth / 2), 0, 0, std::sin(azimuth / 2)};
    std::copy(orientation, orientation + 4, d.qpos + root_qpos_ + 3);
    d.qvel[0] = 2 * random.standard_normal();
    d.qvel[1] = 2 * random.standard_normal();
    d.qvel[5] = 2 * random.standard_normal();
    for (int k = 0; k < nu_; ++k)
      d.act[k] = random.uniform(m.actuator_ctrlrange[2 * k], m.actuator_ctrlrange[2 * k + 1]);
  }

  // np.prod(get_reward_factors): numpy multiplies in order.
  double reward(const mjModel&, const mjData& d) const {
    double factors[6];
    reward_factors(d, factors);
    return product(factors, 6);
  }

  void write_obs(const mjModel&, const mjData& d, double* out) const { write_common_obs(d, out); }

 protected:
  static constexpr double kStandHeightFraction = 0.9;

  // get_reward_factors of Stand: torso and pelvis heights, the uprightness of skull, torso and pelvis, and the
  // touch sensors' sum against the body's weight.
  void reward_factors(const mjData& d, double* out) const {
    out[0] = torso_height_(d.xpos[3 * torso_ + 2], Arg::kScalar);
    out[1] = pelvis_height_(d.xpos[3 * pelvis_ + 2], Arg::kScalar);
    int k = 2;
    for (int body : {skull_, torso_, pelvis_}) out[k++] = upright_(d.xmat[9 * body + 8], Arg::kArray);
    const double touch = 0.0 + mujoco::pairwise_sum([&](int64_t s) { return d.sensordata[touch_[s]]; }, 0,
                                                    static_cast<int64_t>(touch_.size()));
    out[5] = touch_weight_(touch, Arg::kScalar);
  }

  // Physics.com_forward_velocity: the torso's centre-of-mass velocity in its frame, forward component.
  double com_forward_velocity(const mjData& d) const {
    double v[3];
    vec_dot_mat3(d.sensordata + torso_linvel_, d.xmat + 9 * torso_, v);
    return v[0];
  }

  static double product(const double* factors, int n) {
    double p = factors[0];
    for (int k = 1; k < n; ++k) p *= factors[k];
    return p;
  }

  double* write_common_obs(const mjData& d, double* out) const {
    for (int a : hinge_qpos_) *out++ = d.qpos[a];
    for (int a : hinge_qvel_) *out++ = d.qvel[a];
    *out++ = d.xpos[3 * torso_ + 2];
    *out++ = d.xpos[3 * pelvis_ + 2];
    for (int body : {skull_, torso_, pelvis_}) out = std::copy(d.xmat + 9 * body + 6, d.xmat + 9 * body + 9, out);
    vec_dot_mat3(d.sensordata + torso_linvel_, d.xmat + 9 * torso_, out);
    out += 3;
    for (int a : inertial_) *out++ = d.sensordata[a];
    for (int a : foot_forces_) *out++ = d.sensordata[a];
    for (int a : touch_) *out++ = d.sensordata[a];
    return std::copy(d.act, d.act + nu_, out);
  }

 private:
  // named.data.sensordata[name]: each of the sensor's values.
  static void add_sensor(const mjModel& m, const char* name, std::vector<int>& to) {
    const int s = object_id(m, mjOBJ_SENSOR, name);
    for (int k = 0; k < m.sensor_dim[s]; ++k) to.push_back(m.sensor_adr[s] + k);
  }

  int torso_, pelvis_, skull_, root_qpos_, torso_linvel_, nu_;
  std::vector<int> hinge_qpos_, hinge_qvel_, inertial_, foot_forces_, touch_;
  Tolerance torso_height_, pelvis_height_, touch_weight_;
  Tolerance upright_{kMinUprightCosine, kInf, kMinUprightCosine + 1, Sigmoid::kLinear, 0};
};

// Move: kSpeed 1 (walk, on a 15 m floor), 3 (trot, 45 m) or 9 (run, 135 m), m/s.
template <int kSpeed>
class Move : public Stand {
 public:
  static constexpr const char* kModel = kSpeed == 1 ? "dog_walk.xml" : kSpeed == 3 ? "dog_trot.xml" : "dog_run.xml";

  explicit Move(const mjModel& m) : Stand(m) {}

  double reward(const mjModel&, const mjData& d) const {
    double factors[7];
    reward_factors(d, factors);
    factors[6] = (4 * forward_(com_forward_velocity(d), Arg::kScalar) + 1) / 5;
    return product(factors, 7);
  }

 private:
  Tolerance forward_{kSpeed, 2.0 * kSpeed, std::max(1.0, 1.0 * kSpeed), Sigmoid::kLinear, 0};
};

class Fetch : public Stand {
 public:
  static constexpr const char* kModel = "dog_fetch.xml";

  explicit Fetch(const mjModel& m)
      : Stand(m),
        ball_(object_id(m, mjOBJ_GEOM, "ball")),
        target_(object_id(m, mjOBJ_GEOM, "target")),
        head_(object_id(m, mjOBJ_SITE, "head")),
        upper_bite_(object_id(m, mjOBJ_SITE, "upper_bite")),
        lower_bite_(object_id(m, mjOBJ_SITE, "lower_bite")),
        ball_qpos_(m.jnt_qposadr[object_id(m, mjOBJ_JOINT, "ball_root")]),
        ball_qvel_(m.jnt_dofadr[object_id(m, mjOBJ_JOINT, "ball_root")]),
        floor_size_(m.geom_size[3 * object_id(m, mjOBJ_GEOM, "floor")]),
        target_radius_(m.geom_size[3 * target_]),
        reach_ball_(0, m.site_size[3 * upper_bite_], 2, Sigmoid::kReciprocal),
        ball_near_target_(0, target_radius_, floor_size_, Sigmoid::kReciprocal) {
    if (m.jnt_type[object_id(m, mjOBJ_JOINT, "ball_root")] != mjJNT_FREE)
      throw std::invalid_argument("xml_file: the ball's joint must be free");
  }

  std::vector<core::ObsField> observation() const {
    std::vector<core::ObsField> fields = Stand::observation();
    fields.push_back({"ball_state", {6}});
    fields.push_back({"target_position", {3}});
    return fields;
  }

  // Stand's, then the ball thrown from 3/4 of the floor's half-width towards the centre, upwards.
  void initialize_episode(Physics& p, int i, RandomState& random) const {
    Stand::initialize_episode(p, i, random);
    mjData& d = p.data(i);
    const double radius = 0.75 * floor_size_;
    const double azimuth = random.uniform(0, 2 * std::numbers::pi);
    d.qpos[ball_qpos_] = radius * std::sin(azimuth);
    d.qpos[ball_qpos_ + 1] = radius * std::cos(azimuth);
    d.qpos[ball_qpos_ + 2] = 0.05;
    const double vertical_height = random.uniform(0, 3);
    const double gravity = -p.model().opt.gravity[2];
    const double vertical_velocity = std::sqrt(2 * gravity * vertical_height);
    const double horizontal_speed = random.uniform(0, 5);
    const double direction_x = -std::sin(azimuth) + 0.05 * random.standard_normal();
    const double direction_y = -std::cos(azimuth) + 0.05 * random.standard_normal();
    d.qvel[ball_qvel_] = horizontal_speed * direction_x;
    d.qvel[ball_qvel_ + 1] = horizontal_speed * direction_y;
    d.qvel[ball_qvel_ + 2] = vertical_velocity;
  }

  double reward(const mjModel&, const mjData& d) const {
    double factors[8];
    reward_factors(d, factors);
    const double* ball = d.geom_xpos + 3 * ball_;
    const double mouth =
        0.5 * (distance(ball, d.site_xpos + 3 * upper_bite_) + distance(ball, d.site_xpos + 3 * lower_bite_));
    const double to_target = distance(ball, d.geom_xpos + 3 * target_);
    // let go of the ball once it is at the target
    factors[6] = to_target < 2 * target_radius_ ? 1.0 : (6 * reach_ball_(mouth, Arg::kScalar) + 1) / 7;
    factors[7] = (ball_near_target_(to_target, Arg::kScalar) + 1) / 2;
    return product(factors, 8);
  }

  // ball_state: the ball's position and linear velocity relative to the head's site, in its frame;
  // target_position: the target's, likewise.
  void write_obs(const mjModel& m, const mjData& d, double* out) const {
    out = write_common_obs(d, out);
    const double* head_pos = d.site_xpos + 3 * head_;
    const double* head_frame = d.site_xmat + 9 * head_;
    double v[3];
    for (int k = 0; k < 3; ++k) v[k] = d.geom_xpos[3 * ball_ + k] - head_pos[k];
    vec_dot_mat3(v, head_frame, out);
    double head_vel[6], ball_vel[6];  // (angular, linear), as MuJoCo gives them
    mj_objectVelocity(&m, &d, mjOBJ_SITE, head_, head_vel, 0);
    mj_objectVelocity(&m, &d, mjOBJ_GEOM, ball_, ball_vel, 0);
    for (int k = 0; k < 3; ++k) v[k] = ball_vel[3 + k] - head_vel[3 + k];
    vec_dot_mat3(v, head_frame, out + 3);
    for (int k = 0; k < 3; ++k) v[k] = d.geom_xpos[3 * target_ + k] - head_pos[k];
    vec_dot_mat3(v, head_frame, out + 6);
  }

 private:
  // np.linalg.norm(a - b) of two 3-vectors.
  static double distance(const double* a, const double* b) {
    const double v[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
    return mujoco::norm(v, 3);
  }

  int ball_, target_, head_, upper_bite_, lower_bite_, ball_qpos_, ball_qvel_;
  double floor_size_, target_radius_;
  Tolerance reach_ball_, ball_near_target_;
};

}  // namespace fastvec::envs::dm_control::dog
