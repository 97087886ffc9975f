#pragma once
// LunarLander-v3 (discrete, and continuous=True), a port of gymnasium/envs/box2d/lunar_lander.py on the Box2D
// that pybox2d compiles (cmake/box2d.cmake). The reference computes in float64 from Box2D's float32 state and
// hands float64 values back to Box2D, which rounds them to float32: the order of operations below is the
// reference's, term by term. Without rendering the reference makes no particles (they are decoration); with
// render_mode it makes them as it does, Box2D bodies of the world that only the ground touches (each its own
// island: they leave the lander's physics as it is), aged and removed by each render (write_render_state).

#include <Box2D/Box2D.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/box2d/render_state.hpp"
#include "envs/box2d/world.hpp"

namespace fastvec::envs::box2d {

namespace lander {
inline constexpr double kFps = 50, kScale = 30.0;
inline constexpr double kMainEnginePower = 13.0, kSideEnginePower = 0.6, kInitialRandom = 1000.0;
inline constexpr int kLegAway = 20, kLegDown = 18, kLegW = 2, kLegH = 8, kLegSpringTorque = 40;
inline constexpr int kSideEngineHeight = 14, kSideEngineAway = 12, kMainEngineYLocation = 4;
inline constexpr int kViewportW = 600, kViewportH = 400;
inline constexpr int kChunks = 11;
inline constexpr double kW = kViewportW / kScale, kH = kViewportH / kScale;
inline constexpr double kHelipadY = kH / 4;
// The particles a render state holds: the most an episode of the registered 1000 steps makes (two a step) when
// nothing renders it (only a render ages them).
inline constexpr int kMaxParticles = 2048;
inline constexpr int64_t kRenderStateSize =
    kChunks + 3 * body_record_size(b2_maxPolygonVertices) + 1 + kMaxParticles * (1 + kCircleRecordSize);
}  // namespace lander

// One episode: its world, bodies and contact flags (ContactDetector), made anew at each reset as the reference
// makes a new b2World.
struct LanderEpisode final : b2ContactListener {
  std::unique_ptr<b2World> world;
  b2Body* lander = nullptr;
  std::array<b2Body*, 2> legs{};
  std::array<bool, 2> ground_contact{};
  bool game_over = false;
  double prev_shaping = 0;
  bool has_prev_shaping = false;
  int64_t wind_idx = 0, torque_idx = 0;
  std::array<float, 8> state{};
  // With render_mode: the terrain's heights (the sky's polygons) and the engines' particles, oldest first.
  struct Particle {
    b2Body* body;
    double ttl;
  };
  std::array<double, lander::kChunks> smooth_y{};
  std::deque<Particle> particles;

  void BeginContact(b2Contact* contact) override {
    b2Body* a = contact->GetFixtureA()->GetBody();
    b2Body* b = contact->GetFixtureB()->GetBody();
    if (lander == a || lander == b) game_over = true;
    for (int i = 0; i < 2; ++i)
      if (legs[i] == a || legs[i] == b) ground_contact[i] = true;
  }
  void EndContact(b2Contact* contact) override {
    b2Body* a = contact->GetFixtureA()->GetBody();
    b2Body* b = contact->GetFixtureB()->GetBody();
    for (int i = 0; i < 2; ++i)
      if (legs[i] == a || legs[i] == b) ground_contact[i] = false;
  }
};

template <bool kContinuous>
class LunarLander {
 public:
  using Obs = float;
  // Continuous actions reach the env as float64 when given so (the reference clips them in float64).
  using Action = std::conditional_t<kContinuous, double, int32_t>;
  using Reward = double;  // the reference's reward is a Python float

  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return {{"continuous", K::kBool, 0},
            // gymnasium asserts -12 < gravity < 0 (the constructor refuses the ends)
            {.name = "gravity", .kind = K::kReal, .fallback = -10.0, .low = -12.0, .high = 0.0},
            {"enable_wind", K::kBool, 0},
            {"wind_power", K::kReal, 15.0},
            {"turbulence_power", K::kReal, 1.5},
            {"render_mode", K::kString}};
  }

  static core::Spec spec(const core::Options& o) {
    core::Spec s;
    if (!o.text("render_mode").empty()) s.render_state_size = lander::kRenderStateSize;
    s.obs_shape = {8};
    const double pi2 = 2 * M_PI;
    s.obs_low = {-2.5, -2.5, -10.0, -10.0, static_cast<float>(-pi2), -10.0, -0.0, -0.0};
    s.obs_high = {2.5, 2.5, 10.0, 10.0, static_cast<float>(pi2), 10.0, 1.0, 1.0};
    if constexpr (kContinuous) {
      s.action_shape = {2};
      s.action_low = {-1.0, -1.0};
      s.action_high = {1.0, 1.0};
    } else {
      s.num_actions = 4;
    }
    s.step_cost_ns = 20e3;
    s.env_address_bytes = s.env_resident_bytes = 64e3;
    return s;
  }

  LunarLander(int n, const core::Options& o)
      : gravity_(o.get("gravity")),
        enable_wind_(o.flag("enable_wind")),
        wind_power_(o.get("wind_power")),
        turbulence_power_(o.get("turbulence_power")),
        particles_(!o.text("render_mode").empty()),
        episodes_(n),
        rng_(n, nullptr) {
    if (!(-12.0 < gravity_ && gravity_ < 0.0))
      throw std::invalid_argument("gravity must be in (-12, 0) (gymnasium's bounds), got " + std::to_string(gravity_));
  }

  // rng is the pool's generator of env i, which outlives this env: the engines' dispersion draws from it at
  // every step, as the reference's np_random.
  void reset(int i, core::Pcg64& rng) {
    rng_[i] = &rng;
    guarded([&] { reset_episode(episodes_[i], rng); });
    step(i, nullptr);
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    core::BasicStepResult<double> r{};
    guarded([&] { r = step_episode(episodes_[i], *rng_[i], action); });
    return r;
  }

  void write_obs(int i, float* out) const {
    for (int k = 0; k < 8; ++k) out[k] = episodes_[i].state[k];
  }

  // What the reference's render() reads (render_state.hpp): smooth_y, the lander and legs, then the particles
  // (their count, each its ttl and body). Then what that render() does to the env: it ages every particle and
  // removes the oldest ones whose time is up.
  void write_render_state(int i, int64_t* out) {
    LanderEpisode& ep = episodes_[i];
    if (ep.particles.size() > static_cast<size_t>(lander::kMaxParticles))
      throw core::EnvError("LunarLander's render state holds " + std::to_string(lander::kMaxParticles) +
                           " particles, and this episode has " + std::to_string(ep.particles.size()) +
                           " unrendered ones: render it more often, or end episodes within 1000 steps");
    RenderWriter w(out);
    for (double y : ep.smooth_y) w.real(y);
    w.body(*ep.lander);
    for (b2Body* leg : ep.legs) w.body(*leg);
    w.integer(static_cast<int64_t>(ep.particles.size()));
    for (LanderEpisode::Particle& p : ep.particles) {
      w.real(p.ttl);
      w.body(*p.body);
      p.ttl -= 0.15;
    }
    clean_particles(ep);
  }

 private:
  void reset_episode(LanderEpisode& ep, core::Pcg64& rng) const {
    using namespace lander;
    ep.world.reset();
    ep.world = std::make_unique<b2World>(b2Vec2(0.0f, static_cast<float>(gravity_)));
    ep.world->SetContactListener(&ep);
    ep.game_over = false;
    ep.has_prev_shaping = false;
    ep.ground_contact = {false, false};
    ep.particles.clear();  // (bodies of the world just destroyed)

    // Terrain
    std::array<double, kChunks + 1> height;
    for (double& h : height) h = rng.uniform(0, kH / 2);
    std::array<double, kChunks> chunk_x;
    for (int i = 0; i < kChunks; ++i) chunk_x[i] = kW / (kChunks - 1) * i;
    for (int k = kChunks / 2 - 2; k <= kChunks / 2 + 2; ++k) height[k] = kHelipadY;
    std::array<double, kChunks> smooth_y;
    for (int i = 0; i < kChunks; ++i)  // (height[-1] is Python's last element)
      smooth_y[i] = 0.33 * (height[(i + kChunks) % (kChunks + 1)] + height[i] + height[i + 1]);
    ep.smooth_y = smooth_y;

    b2BodyDef moon_def;
    b2Body* moon = ep.world->CreateBody(&moon_def);
    b2EdgeShape bottom;
    bottom.Set(b2Vec2(0.0f, 0.0f), b2Vec2(static_cast<float>(kW), 0.0f));
    b2FixtureDef bottom_fixture;  // pybox2d's default fixture for `shapes=`
    bottom_fixture.shape = &bottom;
    moon->CreateFixture(&bottom_fixture);
    for (int i = 0; i < kChunks - 1; ++i) {
      b2EdgeShape edge;
      edge.Set(vec(chunk_x[i], smooth_y[i]), vec(chunk_x[i + 1], smooth_y[i + 1]));
      b2FixtureDef f;
      f.shape = &edge;
      f.density = 0;
      f.friction = 0.1f;
      moon->CreateFixture(&f);
    }

    // Lander
    const double initial_y = kViewportH / kScale, initial_x = kViewportW / kScale / 2;
    b2BodyDef body;
    body.type = b2_dynamicBody;
    body.position = vec(initial_x, initial_y);
    body.angle = 0.0f;
    ep.lander = ep.world->CreateBody(&body);
    static constexpr std::array<std::array<int, 2>, 6> kLanderPoly = {
        {{-14, +17}, {-17, 0}, {-17, -10}, {+17, -10}, {+17, 0}, {+14, +17}}};
    std::array<b2Vec2, 6> poly;
    for (size_t k = 0; k < poly.size(); ++k) poly[k] = vec(kLanderPoly[k][0] / kScale, kLanderPoly[k][1] / kScale);
    b2PolygonShape lander_shape;
    lander_shape.Set(poly.data(), static_cast<int32>(poly.size()));
    b2FixtureDef lf;
    lf.shape = &lander_shape;
    lf.density = 5.0f;
    lf.friction = 0.1f;
    lf.filter.categoryBits = 0x0010;
    lf.filter.maskBits = 0x001;
    lf.restitution = 0.0f;
    ep.lander->CreateFixture(&lf);
    const double fx = rng.uniform(-kInitialRandom, kInitialRandom);
    const double fy = rng.uniform(-kInitialRandom, kInitialRandom);
    ep.lander->ApplyForceToCenter(vec(fx, fy), true);
    if (enable_wind_) {
      ep.wind_idx = rng.integers(-9999, 9999);
      ep.torque_idx = rng.integers(-9999, 9999);
    }

    // Legs
    for (int k = 0; k < 2; ++k) {
      const int i = k == 0 ? -1 : +1;
      b2BodyDef leg_def;
      leg_def.type = b2_dynamicBody;
      leg_def.position = vec(initial_x - i * kLegAway / kScale, initial_y);
      leg_def.angle = static_cast<float>(i * 0.05);
      b2Body* leg = ep.world->CreateBody(&leg_def);
      b2PolygonShape box;
      box.SetAsBox(static_cast<float>(kLegW / kScale), static_cast<float>(kLegH / kScale));
      b2FixtureDef f;
      f.shape = &box;
      f.density = 1.0f;
      f.restitution = 0.0f;
      f.filter.categoryBits = 0x0020;
      f.filter.maskBits = 0x001;
      leg->CreateFixture(&f);
      ep.legs[k] = leg;
      b2RevoluteJointDef rjd;
      rjd.bodyA = ep.lander;
      rjd.bodyB = leg;
      rjd.localAnchorA = b2Vec2(0.0f, 0.0f);
      rjd.localAnchorB = vec(i * kLegAway / kScale, kLegDown / kScale);
      rjd.enableMotor = true;
      rjd.enableLimit = true;
      rjd.maxMotorTorque = static_cast<float>(kLegSpringTorque);
      rjd.motorSpeed = static_cast<float>(+0.3 * i);
      if (i == -1) {
        rjd.lowerAngle = static_cast<float>(+0.9 - 0.5);
        rjd.upperAngle = static_cast<float>(+0.9);
      } else {
        rjd.lowerAngle = static_cast<float>(-0.9);
        rjd.upperAngle = static_cast<float>(-0.9 + 0.5);
      }
      // pybox2d's revoluteJointDef sets it from the bodies' angles
      rjd.referenceAngle = static_cast<float>(static_cast<double>(leg->GetAngle()) - ep.lander->GetAngle());
      ep.world->CreateJoint(&rjd);
    }
  }

  core::BasicStepResult<double> step_episode(LanderEpisode& ep, core::Pcg64& rng, const Action* action) const {
    using namespace lander;
    b2Body& lander = *ep.lander;
    if (enable_wind_ && !(ep.ground_contact[0] || ep.ground_contact[1])) {
      // tanh(sin(2 k x) + sin(pi k x)), k = 0.01
      const double wind_mag =
          std::tanh(std::sin(0.02 * ep.wind_idx) + std::sin(M_PI * 0.01 * ep.wind_idx)) * wind_power_;
      ep.wind_idx += 1;
      lander.ApplyForceToCenter(vec(wind_mag, 0.0), true);
      const double torque_mag =
          std::tanh(std::sin(0.02 * ep.torque_idx) + std::sin(M_PI * 0.01 * ep.torque_idx)) * turbulence_power_;
      ep.torque_idx += 1;
      lander.ApplyTorque(static_cast<float>(torque_mag), true);
    }
    // (a null action: the reset's no-op step)
    std::array<double, 2> a{};
    int32_t d = 0;
    if (action != nullptr) {
      if constexpr (kContinuous) {
        a = {std::clamp(action[0], -1.0, 1.0), std::clamp(action[1], -1.0, 1.0)};
      } else {
        d = *action;
      }
    }

    const double angle = lander.GetAngle();
    const double tip[2] = {std::sin(angle), std::cos(angle)};
    const double side[2] = {-tip[1], tip[0]};
    const double dispersion[2] = {rng.uniform(-1.0, +1.0) / kScale, rng.uniform(-1.0, +1.0) / kScale};

    double m_power = 0.0;
    if ((kContinuous && a[0] > 0.0) || (!kContinuous && d == 2)) {
      m_power = kContinuous ? (std::clamp(a[0], 0.0, 1.0) + 1.0) * 0.5 : 1.0;
      const double ox = tip[0] * (kMainEngineYLocation / kScale + 2 * dispersion[0]) + side[0] * dispersion[1];
      const double oy = -tip[1] * (kMainEngineYLocation / kScale + 2 * dispersion[0]) - side[1] * dispersion[1];
      const b2Vec2 pos = lander.GetPosition();
      const b2Vec2 impulse_pos = vec(pos.x + ox, pos.y + oy);
      if (particles_)
        create_particle(ep, 3.5, impulse_pos, m_power)
            ->ApplyLinearImpulse(vec(ox * kMainEnginePower * m_power, oy * kMainEnginePower * m_power), impulse_pos,
                                 true);
      lander.ApplyLinearImpulse(vec(-ox * kMainEnginePower * m_power, -oy * kMainEnginePower * m_power),
                                impulse_pos, true);
    }

    double s_power = 0.0;
    if ((kContinuous && std::abs(a[1]) > 0.5) || (!kContinuous && (d == 1 || d == 3))) {
      double direction;
      if (kContinuous) {
        direction = a[1] > 0 ? 1.0 : -1.0;
        s_power = std::clamp(std::abs(a[1]), 0.5, 1.0);
      } else {
        direction = d - 2;
        s_power = 1.0;
      }
      const double ox = tip[0] * dispersion[0] + side[0] * (3 * dispersion[1] + direction * kSideEngineAway / kScale);
      const double oy =
          -tip[1] * dispersion[0] - side[1] * (3 * dispersion[1] + direction * kSideEngineAway / kScale);
      const b2Vec2 pos = lander.GetPosition();
      // (17 where SIDE_ENGINE_HEIGHT is 14: the reference's constant)
      const b2Vec2 impulse_pos =
          vec(pos.x + ox - tip[0] * 17 / kScale, pos.y + oy + tip[1] * kSideEngineHeight / kScale);
      if (particles_)
        create_particle(ep, 0.7, impulse_pos, s_power)
            ->ApplyLinearImpulse(vec(ox * kSideEnginePower * s_power, oy * kSideEnginePower * s_power), impulse_pos,
                                 true);
      lander.ApplyLinearImpulse(vec(-ox * kSideEnginePower * s_power, -oy * kSideEnginePower * s_power),
                                impulse_pos, true);
    }

    ep.world->Step(static_cast<float>(1.0 / kFps), 6 * 30, 2 * 30);

    const b2Vec2 pos = lander.GetPosition();
    const b2Vec2 vel = lander.GetLinearVelocity();
    const double state[8] = {
        (pos.x - kViewportW / kScale / 2) / (kViewportW / kScale / 2),
        (pos.y - (kHelipadY + kLegDown / kScale)) / (kViewportH / kScale / 2),
        vel.x * (kViewportW / kScale / 2) / kFps,
        vel.y * (kViewportH / kScale / 2) / kFps,
        static_cast<double>(lander.GetAngle()),
        20.0 * lander.GetAngularVelocity() / kFps,
        ep.ground_contact[0] ? 1.0 : 0.0,
        ep.ground_contact[1] ? 1.0 : 0.0,
    };
    for (int k = 0; k < 8; ++k) ep.state[k] = static_cast<float>(state[k]);

    const double shaping = -100 * std::sqrt(state[0] * state[0] + state[1] * state[1]) -
                           100 * std::sqrt(state[2] * state[2] + state[3] * state[3]) - 100 * std::abs(state[4]) +
                           10 * state[6] + 10 * state[7];
    double reward = 0;
    if (ep.has_prev_shaping) reward = shaping - ep.prev_shaping;
    ep.prev_shaping = shaping;
    ep.has_prev_shaping = true;
    reward -= m_power * 0.30;
    reward -= s_power * 0.03;

    bool terminated = false;
    if (ep.game_over || std::abs(state[0]) >= 1.0) {
      terminated = true;
      reward = -100;
    }
    if (!lander.IsAwake()) {
      terminated = true;
      reward = +100;
    }
    return {reward, terminated};
  }

  // _create_particle: a small ball the engine throws, which lives ttl renders of 0.15 each.
  static b2Body* create_particle(LanderEpisode& ep, double mass, b2Vec2 position, double ttl) {
    b2BodyDef def;
    def.type = b2_dynamicBody;
    def.position = position;
    def.angle = 0.0f;
    b2Body* body = ep.world->CreateBody(&def);
    b2CircleShape circle;
    circle.m_radius = static_cast<float32>(2 / lander::kScale);
    circle.m_p = b2Vec2(0.0f, 0.0f);
    b2FixtureDef f;
    f.shape = &circle;
    f.density = static_cast<float32>(mass);
    f.friction = 0.1f;
    f.filter.categoryBits = 0x0100;
    f.filter.maskBits = 0x001;
    f.restitution = 0.3f;
    body->CreateFixture(&f);
    ep.particles.push_back({body, ttl});
    clean_particles(ep);
    return body;
  }

  // _clean_particles(False): the oldest particles, while their time is up.
  static void clean_particles(LanderEpisode& ep) {
    while (!ep.particles.empty() && ep.particles.front().ttl < 0) {
      ep.world->DestroyBody(ep.particles.front().body);
      ep.particles.pop_front();
    }
  }

  const double gravity_;
  const bool enable_wind_;
  const double wind_power_, turbulence_power_;
  const bool particles_;  // render_mode given: the reference makes particles
  std::vector<LanderEpisode> episodes_;
  std::vector<core::Pcg64*> rng_;
};

}  // namespace fastvec::envs::box2d
