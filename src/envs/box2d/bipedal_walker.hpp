#pragma once
// BipedalWalker-v3 (and hardcore=True), a port of gymnasium/envs/box2d/bipedal_walker.py on the Box2D that
// pybox2d compiles (cmake/box2d.cmake), in the reference's order of operations. Unlike LunarLander, the reference
// keeps one b2World for the env's life and destroys the episode's bodies at the next reset: the world's
// allocators and broad-phase tree carry over (proxy ids, hence contact order), so each env here keeps its world
// too and destroys the same bodies in the same order.
//
// Actions are float32, as the action space's: with them, NumPy 2 computes the reference's control cost in
// float32 (a Python float times a float32 scalar is float32 under NEP 50), and so does this port.
//
// Frames: the reference's render() draws from what write_render_state exports (render_state.hpp).

#include <Box2D/Box2D.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/box2d/render_state.hpp"
#include "envs/box2d/world.hpp"

namespace fastvec::envs::box2d {

namespace walker {
inline constexpr double kFps = 50, kScale = 30.0;
inline constexpr int kMotorsTorque = 80, kSpeedHip = 4, kSpeedKnee = 6;
inline constexpr double kLidarRange = 160 / kScale;
inline constexpr int kInitialRandom = 5;
inline constexpr double kLegDown = -8 / kScale, kLegW = 8 / kScale, kLegH = 34 / kScale;
inline constexpr int kViewportW = 600, kViewportH = 400;
inline constexpr double kTerrainStep = 14 / kScale;
inline constexpr int kTerrainLength = 200, kTerrainGrass = 10, kTerrainStartpad = 20;
inline constexpr double kTerrainHeight = kViewportH / kScale / 4;
inline constexpr double kFriction = 2.5;
inline constexpr int kCloudDraws = (kTerrainLength / 20) * 11;  // 10 clouds of 1 + 5 * 2 uniforms
// Hardcore's obstacles: at most 4 polygons (stairs) a cycle of at least 17 terrain steps, 2 (a pit) of 10, 1 (a
// stump) of 6; ample room beside the edges.
inline constexpr int kMaxTerrainBodies = kTerrainLength - 1 + 100;
inline constexpr int64_t kRenderStateSize = 1 + 10 * 3 + kTerrainLength + kCloudDraws +
                                            5 * body_record_size(b2_maxPolygonVertices) + 1 +
                                            kMaxTerrainBodies * body_record_size(4);
}  // namespace walker

// The lidar's LidarCallback: the closest ground fixture (category bit 1) along the ray, and where the ray hits it
// (its p2, which frames draw).
struct LidarCallback final : b2RayCastCallback {
  float32 fraction = 1.0f;
  bool hit = false;
  b2Vec2 point{0.0f, 0.0f};
  float32 ReportFixture(b2Fixture* fixture, const b2Vec2& p, const b2Vec2&, float32 f) override {
    if ((fixture->GetFilterData().categoryBits & 1) == 0) return -1;
    hit = true;
    point = p;
    fraction = f;
    return f;
  }
};

// One env: its world (for the env's life), the episode's bodies and contact flags (ContactDetector).
struct WalkerEpisode final : b2ContactListener {
  std::unique_ptr<b2World> world;
  std::vector<b2Body*> terrain;  // in the reference's order (reversed creation), which _destroy follows
  b2Body* hull = nullptr;
  std::array<b2Body*, 4> legs{};
  std::array<b2RevoluteJoint*, 4> joints{};
  std::array<bool, 4> ground_contact{};
  bool game_over = false;
  double prev_shaping = 0;
  bool has_prev_shaping = false;
  std::array<float, 24> state{};
  // What only frames show: the terrain's heights, the draws of the clouds (_generate_clouds) and the count of
  // renders that picks the lidar ray drawn (lidar_render).
  std::array<double, walker::kTerrainLength> terrain_y{};
  std::array<double, walker::kCloudDraws> cloud_draws{};
  int64_t lidar_render = 0;
  std::array<LidarCallback, 10> lidar;  // the last step's rays

  void BeginContact(b2Contact* contact) override {
    b2Body* a = contact->GetFixtureA()->GetBody();
    b2Body* b = contact->GetFixtureB()->GetBody();
    if (hull == a || hull == b) game_over = true;
    for (int i : {1, 3})
      if (legs[i] == a || legs[i] == b) ground_contact[i] = true;
  }
  void EndContact(b2Contact* contact) override {
    b2Body* a = contact->GetFixtureA()->GetBody();
    b2Body* b = contact->GetFixtureB()->GetBody();
    for (int i : {1, 3})
      if (legs[i] == a || legs[i] == b) ground_contact[i] = false;
  }
};

class BipedalWalker {
 public:
  using Obs = float;
  using Action = float;
  using Reward = double;  // the reference's float32 (or -100), as gymnasium's vector envs store it

  static core::OptionTable options() {
    return {{"hardcore", core::OptionSpec::Kind::kBool, 0}, {"render_mode", core::OptionSpec::Kind::kString}};
  }

  static core::Spec spec(const core::Options& o) {
    core::Spec s;
    if (!o.text("render_mode").empty()) s.render_state_size = walker::kRenderStateSize;
    s.obs_shape = {24};
    const double pi = static_cast<float>(M_PI);
    s.obs_low = {-pi, -5.0, -5.0, -5.0, -pi, -5.0, -pi, -5.0, -0.0, -pi, -5.0, -pi, -5.0, -0.0};
    s.obs_high = {pi, 5.0, 5.0, 5.0, pi, 5.0, pi, 5.0, 5.0, pi, 5.0, pi, 5.0, 5.0};
    s.obs_low.resize(24, -1.0);
    s.obs_high.resize(24, 1.0);
    s.action_shape = {4};
    s.action_low = {-1.0, -1.0, -1.0, -1.0};
    s.action_high = {1.0, 1.0, 1.0, 1.0};
    s.step_cost_ns = 40e3;
    s.env_address_bytes = s.env_resident_bytes = 512e3;
    return s;
  }

  BipedalWalker(int n, const core::Options& o) : hardcore_(o.flag("hardcore")), episodes_(n), rng_(n, nullptr) {
    for (WalkerEpisode& ep : episodes_) ep.world = std::make_unique<b2World>(b2Vec2(0.0f, -10.0f));
  }

  void reset(int i, core::Pcg64& rng) {
    rng_[i] = &rng;
    guarded([&] { reset_episode(episodes_[i], rng); });
    static constexpr std::array<float, 4> kStill{};
    step(i, kStill.data());
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    core::BasicStepResult<double> r{};
    guarded([&] { r = step_episode(episodes_[i], action); });
    return r;
  }

  void write_obs(int i, float* out) const { std::copy(episodes_[i].state.begin(), episodes_[i].state.end(), out); }

  // What the reference's render() reads (render_state.hpp): lidar_render, the rays' hits, terrain_y, the clouds' draws, the legs
  // and hull, then the terrain's bodies (their count, each body); then what that render() does to the env: it
  // counts itself in lidar_render.
  void write_render_state(int i, int64_t* out) {
    WalkerEpisode& ep = episodes_[i];
    if (ep.terrain.size() > static_cast<size_t>(walker::kMaxTerrainBodies))
      throw core::EnvError("BipedalWalker's render state holds " + std::to_string(walker::kMaxTerrainBodies) +
                           " terrain bodies, and this terrain has " + std::to_string(ep.terrain.size()));
    RenderWriter w(out);
    w.integer(ep.lidar_render);
    for (const LidarCallback& ray : ep.lidar) {  // where a ray hit the ground (else its p2 is the step's end point)
      w.integer(ray.hit);
      w.real(ray.point.x);
      w.real(ray.point.y);
    }
    for (double y : ep.terrain_y) w.real(y);
    for (double u : ep.cloud_draws) w.real(u);
    for (const b2Body* leg : ep.legs) w.body(*leg);
    w.body(*ep.hull);
    w.integer(static_cast<int64_t>(ep.terrain.size()));
    for (const b2Body* t : ep.terrain) w.body(*t);
    ep.lidar_render = (ep.lidar_render + 1) % 100;
  }

 private:
  static b2Body* static_body(b2World& world, b2FixtureDef& fixture) {
    b2BodyDef def;
    b2Body* body = world.CreateBody(&def);
    body->CreateFixture(&fixture);
    return body;
  }
  static b2Body* polygon_body(b2World& world, const std::array<b2Vec2, 4>& poly) {
    b2PolygonShape shape;
    shape.Set(poly.data(), 4);
    b2FixtureDef f;  // the reference's fd_polygon
    f.shape = &shape;
    f.friction = static_cast<float32>(walker::kFriction);
    return static_body(world, f);
  }

  // _destroy: the terrain in its list's order, the hull, the legs.
  static void destroy(WalkerEpisode& ep) {
    if (ep.terrain.empty()) return;
    ep.world->SetContactListener(nullptr);
    for (b2Body* t : ep.terrain) ep.world->DestroyBody(t);
    ep.terrain.clear();
    ep.world->DestroyBody(ep.hull);
    ep.hull = nullptr;
    for (b2Body*& leg : ep.legs) {
      ep.world->DestroyBody(leg);
      leg = nullptr;
    }
    ep.joints = {};
  }

  void generate_terrain(WalkerEpisode& ep, core::Pcg64& rng) const {
    using namespace walker;
    enum { kGrass, kStump, kStairs, kPit, kStates };
    constexpr double TS = kTerrainStep;
    int64_t state = kGrass;
    double velocity = 0.0;
    double y = kTerrainHeight;
    int64_t counter = kTerrainStartpad;
    bool oneshot = false;
    std::array<double, kTerrainLength> terrain_x{}, terrain_y{};
    int64_t stair_steps = 0, stair_width = 0, stair_height = 0;
    double original_y = 0;
    b2World& world = *ep.world;
    for (int i = 0; i < kTerrainLength; ++i) {
      const double x = i * TS;
      terrain_x[i] = x;
      if (state == kGrass && !oneshot) {
        const double d = kTerrainHeight - y;
        velocity = 0.8 * velocity + 0.01 * (d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0);
        if (i > kTerrainStartpad) velocity += rng.uniform(-1, 1) / kScale;
        y += velocity;
      } else if (state == kPit && oneshot) {
        counter = rng.integers(3, 5);
        const std::array<double, 8> poly = {x, y, x + TS, y, x + TS, y - 4 * TS, x, y - 4 * TS};
        ep.terrain.push_back(polygon_body(world, {vec(poly[0], poly[1]), vec(poly[2], poly[3]),
                                                  vec(poly[4], poly[5]), vec(poly[6], poly[7])}));
        const double dx = TS * static_cast<double>(counter);
        ep.terrain.push_back(polygon_body(world, {vec(poly[0] + dx, poly[1]), vec(poly[2] + dx, poly[3]),
                                                  vec(poly[4] + dx, poly[5]), vec(poly[6] + dx, poly[7])}));
        counter += 2;
        original_y = y;
      } else if (state == kPit && !oneshot) {
        y = original_y;
        if (counter > 1) y -= 4 * TS;
      } else if (state == kStump && oneshot) {
        counter = rng.integers(1, 3);
        const double c = static_cast<double>(counter) * TS;
        ep.terrain.push_back(polygon_body(world, {vec(x, y), vec(x + c, y), vec(x + c, y + c), vec(x, y + c)}));
      } else if (state == kStairs && oneshot) {
        stair_height = rng.next_double() > 0.5 ? +1 : -1;
        stair_width = rng.integers(4, 5);  // (always 4: numpy draws nothing for a range of one value)
        stair_steps = rng.integers(3, 5);
        original_y = y;
        for (int64_t s = 0; s < stair_steps; ++s) {
          const double x0 = x + static_cast<double>(s * stair_width) * TS;
          const double x1 = x + static_cast<double>((1 + s) * stair_width) * TS;
          const double y0 = y + static_cast<double>(s * stair_height) * TS;
          const double y1 = y + static_cast<double>(-1 + s * stair_height) * TS;
          ep.terrain.push_back(polygon_body(world, {vec(x0, y0), vec(x1, y0), vec(x1, y1), vec(x0, y1)}));
        }
        counter = stair_steps * stair_width;
      } else if (state == kStairs && !oneshot) {
        const int64_t s = stair_steps * stair_width - counter - stair_height;
        const double n = static_cast<double>(s) / static_cast<double>(stair_width);
        y = original_y + (n * static_cast<double>(stair_height)) * TS;
      }
      oneshot = false;
      terrain_y[i] = y;
      ep.terrain_y[i] = y;
      counter -= 1;
      if (counter == 0) {
        counter = rng.integers(kTerrainGrass / 2, kTerrainGrass);
        if (state == kGrass && hardcore_) {
          state = rng.integers(1, kStates);
        } else {
          state = kGrass;
        }
        oneshot = true;
      }
    }
    for (int i = 0; i < kTerrainLength - 1; ++i) {
      b2EdgeShape edge;
      edge.Set(vec(terrain_x[i], terrain_y[i]), vec(terrain_x[i + 1], terrain_y[i + 1]));
      b2FixtureDef f;  // the reference's fd_edge
      f.shape = &edge;
      f.friction = static_cast<float32>(kFriction);
      f.filter.categoryBits = 0x0001;
      ep.terrain.push_back(static_body(world, f));
    }
    std::reverse(ep.terrain.begin(), ep.terrain.end());
  }

  void reset_episode(WalkerEpisode& ep, core::Pcg64& rng) const {
    using namespace walker;
    destroy(ep);
    ep.world->SetContactListener(&ep);
    ep.game_over = false;
    ep.has_prev_shaping = false;
    ep.lidar_render = 0;
    generate_terrain(ep, rng);
    // _generate_clouds: decoration, but its draws advance np_random; kept for frames, which draw the clouds
    for (double& u : ep.cloud_draws) u = rng.next_double();

    const double init_x = kTerrainStep * kTerrainStartpad / 2;
    const double init_y = kTerrainHeight + 2 * kLegH;
    b2World& world = *ep.world;

    b2BodyDef hull_def;
    hull_def.type = b2_dynamicBody;
    hull_def.position = vec(init_x, init_y);
    ep.hull = world.CreateBody(&hull_def);
    static constexpr std::array<std::array<int, 2>, 5> kHullPoly = {
        {{-30, +9}, {+6, +9}, {+34, +1}, {+34, -8}, {-30, -8}}};
    std::array<b2Vec2, 5> hull_poly;
    for (size_t k = 0; k < hull_poly.size(); ++k)
      hull_poly[k] = vec(kHullPoly[k][0] / kScale, kHullPoly[k][1] / kScale);
    b2PolygonShape hull_shape;
    hull_shape.Set(hull_poly.data(), static_cast<int32>(hull_poly.size()));
    b2FixtureDef hull_fd;
    hull_fd.shape = &hull_shape;
    hull_fd.density = 5.0f;
    hull_fd.friction = 0.1f;
    hull_fd.filter.categoryBits = 0x0020;
    hull_fd.filter.maskBits = 0x001;
    hull_fd.restitution = 0.0f;
    ep.hull->CreateFixture(&hull_fd);
    ep.hull->ApplyForceToCenter(vec(rng.uniform(-kInitialRandom, kInitialRandom), 0), true);

    b2PolygonShape leg_shape, lower_shape;
    leg_shape.SetAsBox(static_cast<float32>(kLegW / 2), static_cast<float32>(kLegH / 2));
    lower_shape.SetAsBox(static_cast<float32>(0.8 * kLegW / 2), static_cast<float32>(kLegH / 2));
    for (int k = 0; k < 2; ++k) {
      const int i = k == 0 ? -1 : +1;
      b2Body* leg = limb(world, vec(init_x, init_y - kLegH / 2 - kLegDown), i, leg_shape);
      ep.legs[2 * k] = leg;
      ep.joints[2 * k] = joint(world, ep.hull, leg, vec(0, kLegDown), i, -0.8, 1.1);
      b2Body* lower = limb(world, vec(init_x, init_y - kLegH * 3 / 2 - kLegDown), i, lower_shape);
      ep.ground_contact[2 * k + 1] = false;
      ep.legs[2 * k + 1] = lower;
      ep.joints[2 * k + 1] = joint(world, leg, lower, vec(0, -kLegH / 2), 1, -1.6, -0.1);
    }
  }

  static b2Body* limb(b2World& world, b2Vec2 position, int i, const b2PolygonShape& shape) {
    b2BodyDef def;
    def.type = b2_dynamicBody;
    def.position = position;
    def.angle = static_cast<float32>(i * 0.05);
    b2Body* body = world.CreateBody(&def);
    b2FixtureDef f;  // LEG_FD, LOWER_FD
    f.shape = &shape;
    f.density = 1.0f;
    f.restitution = 0.0f;
    f.filter.categoryBits = 0x0020;
    f.filter.maskBits = 0x001;
    body->CreateFixture(&f);
    return body;
  }

  static b2RevoluteJoint* joint(b2World& world, b2Body* a, b2Body* b, b2Vec2 anchor_a, int motor_speed, double lower,
                                double upper) {
    b2RevoluteJointDef rjd;
    rjd.bodyA = a;
    rjd.bodyB = b;
    rjd.localAnchorA = anchor_a;
    rjd.localAnchorB = vec(0, walker::kLegH / 2);
    rjd.enableMotor = true;
    rjd.enableLimit = true;
    rjd.maxMotorTorque = static_cast<float32>(walker::kMotorsTorque);
    rjd.motorSpeed = static_cast<float32>(motor_speed);
    rjd.lowerAngle = static_cast<float32>(lower);
    rjd.upperAngle = static_cast<float32>(upper);
    // pybox2d's revoluteJointDef sets it from the bodies' angles
    rjd.referenceAngle = static_cast<float32>(static_cast<double>(b->GetAngle()) - a->GetAngle());
    return static_cast<b2RevoluteJoint*>(world.CreateJoint(&rjd));
  }

  // np.sign of a float32 (zeros keep their sign)
  static float sign(float a) { return a > 0 ? 1.0f : a < 0 ? -1.0f : a; }
  static float clip01_abs(float a) { return std::min(std::abs(a), 1.0f); }

  core::BasicStepResult<double> step_episode(WalkerEpisode& ep, const Action* action) const {
    using namespace walker;
    for (int k = 0; k < 4; ++k) {
      const float speed = k % 2 == 0 ? kSpeedHip : kSpeedKnee;
      ep.joints[k]->SetMotorSpeed(speed * sign(action[k]));
      ep.joints[k]->SetMaxMotorTorque(static_cast<float>(kMotorsTorque) * clip01_abs(action[k]));
    }
    ep.world->Step(static_cast<float32>(1.0 / kFps), 6 * 30, 2 * 30);

    const b2Vec2 pos = ep.hull->GetPosition();
    const b2Vec2 vel = ep.hull->GetLinearVelocity();
    std::array<LidarCallback, 10>& lidar = ep.lidar;
    lidar = {};
    for (int i = 0; i < 10; ++i) {
      const double ray = 1.5 * i / 10.0;
      const b2Vec2 p2 = vec(pos.x + std::sin(ray) * kLidarRange, pos.y - std::cos(ray) * kLidarRange);
      ep.world->RayCast(&lidar[i], pos, p2);
    }
    const b2RevoluteJoint* const* j = ep.joints.data();
    const double state[14] = {
        static_cast<double>(ep.hull->GetAngle()),
        2.0 * ep.hull->GetAngularVelocity() / kFps,
        0.3 * vel.x * (kViewportW / kScale) / kFps,
        0.3 * vel.y * (kViewportH / kScale) / kFps,
        static_cast<double>(j[0]->GetJointAngle()),
        static_cast<double>(j[0]->GetJointSpeed()) / kSpeedHip,
        j[1]->GetJointAngle() + 1.0,
        static_cast<double>(j[1]->GetJointSpeed()) / kSpeedKnee,
        ep.ground_contact[1] ? 1.0 : 0.0,
        static_cast<double>(j[2]->GetJointAngle()),
        static_cast<double>(j[2]->GetJointSpeed()) / kSpeedHip,
        j[3]->GetJointAngle() + 1.0,
        static_cast<double>(j[3]->GetJointSpeed()) / kSpeedKnee,
        ep.ground_contact[3] ? 1.0 : 0.0,
    };
    for (int k = 0; k < 14; ++k) ep.state[k] = static_cast<float>(state[k]);
    for (int k = 0; k < 10; ++k) ep.state[14 + k] = lidar[k].fraction;

    double shaping = 130 * static_cast<double>(pos.x) / kScale;
    shaping -= 5.0 * std::abs(state[0]);
    double reward_d = 0;
    if (ep.has_prev_shaping) reward_d = shaping - ep.prev_shaping;
    ep.prev_shaping = shaping;
    ep.has_prev_shaping = true;
    // (0.00035 * MOTORS_TORQUE) * clip(|a|): a Python float times a float32, in float32 (NEP 50)
    const float cost = static_cast<float>(0.00035 * kMotorsTorque);
    float reward = static_cast<float>(reward_d);
    for (int k = 0; k < 4; ++k) reward -= cost * clip01_abs(action[k]);
    double out = reward;

    bool terminated = false;
    if (ep.game_over || pos.x < 0) {
      out = -100;
      terminated = true;
    }
    if (pos.x > (kTerrainLength - kTerrainGrass) * kTerrainStep) terminated = true;
    return {out, terminated};
  }

  const bool hardcore_;
  std::vector<WalkerEpisode> episodes_;
  std::vector<core::Pcg64*> rng_;
};

}  // namespace fastvec::envs::box2d
