#pragma once
// CarRacing's car, a port of gymnasium/envs/box2d/car_dynamics.py (Car): a hull and four wheels on revolute
// joints, each wheel pushed by its own friction model (gas, brake, steering; road or grass grip). The reference
// computes in float64 from Box2D's float32 state and hands float64 values back to Box2D, which rounds them to
// float32: the order of operations below is the reference's, term by term. Skid marks (particles) are kept as
// the reference keeps them, for the frames that draw them.

#include <Box2D/Box2D.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "envs/box2d/world.hpp"

namespace fastvec::envs::box2d {

namespace car {
inline constexpr double kSize = 0.02;
inline constexpr double kEnginePower = 100000000 * kSize * kSize;
inline constexpr double kWheelMomentOfInertia = 4000 * kSize * kSize;
inline constexpr double kFrictionLimit = 1000000 * kSize * kSize;  // friction ~ mass ~ size^2
inline constexpr int kWheelR = 27, kWheelW = 14;
inline constexpr double kWheelRad = 1.0 * kWheelR * kSize;  // (front_k * WHEEL_R * SIZE, front_k = 1.0)
inline constexpr std::array<std::array<int, 2>, 4> kWheelPos = {{{-55, +80}, {+55, +80}, {-55, -82}, {+55, -82}}};
inline constexpr int kMaxParticles = 30, kMaxParticlePoints = 30;
}  // namespace car

// What a body is to CarRacing's contact listener (its userData, the reference's `userData` attributes): the
// hull nothing (None), wheel k 1 + k, tile i kTileTag + i.
inline constexpr intptr_t kTileTag = 8;
inline void* body_tag(intptr_t tag) { return reinterpret_cast<void*>(tag); }
inline intptr_t tag_of(const b2Body* body) { return reinterpret_cast<intptr_t>(body->GetUserData()); }

// np.sign of a float64: zeros give +0.0, as numpy's.
inline double np_sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }

// A skid mark: a polyline of wheel positions (the reference's Particle).
struct Particle {
  bool grass;
  std::vector<std::array<double, 2>> poly;
};

struct Wheel {
  b2Body* body = nullptr;
  b2RevoluteJoint* joint = nullptr;
  double gas = 0, brake = 0, steer = 0;
  double phase = 0;  // wheel angle
  double omega = 0;  // angular velocity
  // skid_start is the reference's position alias (a b2Vec2 viewing the body's own position): only whether it
  // is set matters, as the particle it starts begins at the wheel's position then.
  bool skid_start = false;
  std::shared_ptr<Particle> skid_particle;  // (may have left the car's particles, which keep 30)
  std::vector<int> tiles;                   // the tiles it touches (the reference's set; their order is moot)
};

class Car {
 public:
  Car(b2World& world, double init_angle, double init_x, double init_y) : world_(world) {
    using namespace car;
    static constexpr std::array<std::array<int, 2>, 4> kPoly1 = {{{-60, +130}, {+60, +130}, {+60, +110}, {-60, +110}}};
    static constexpr std::array<std::array<int, 2>, 4> kPoly2 = {{{-15, +120}, {+15, +120}, {+20, +20}, {-20, 20}}};
    static constexpr std::array<std::array<int, 2>, 8> kPoly3 = {
        {{+25, +20}, {+50, -10}, {+50, -40}, {+20, -90}, {-20, -90}, {-50, -40}, {-50, -10}, {-25, +20}}};
    static constexpr std::array<std::array<int, 2>, 4> kPoly4 = {{{-50, -120}, {+50, -120}, {+50, -90}, {-50, -90}}};
    b2BodyDef hull_def;
    hull_def.type = b2_dynamicBody;
    hull_def.position = vec(init_x, init_y);
    hull_def.angle = static_cast<float32>(init_angle);
    hull = world.CreateBody(&hull_def);
    const auto add_hull_part = [&](const auto& points) {
      std::array<b2Vec2, std::tuple_size_v<std::decay_t<decltype(points)>>> v;
      for (size_t k = 0; k < v.size(); ++k) v[k] = vec(points[k][0] * kSize, points[k][1] * kSize);
      b2PolygonShape shape;
      shape.Set(v.data(), static_cast<int32>(v.size()));
      b2FixtureDef f;
      f.shape = &shape;
      f.density = 1.0f;
      hull->CreateFixture(&f);
    };
    add_hull_part(kPoly1);
    add_hull_part(kPoly2);
    add_hull_part(kPoly3);
    add_hull_part(kPoly4);

    static constexpr std::array<std::array<int, 2>, 4> kWheelPoly = {
        {{-kWheelW, +kWheelR}, {+kWheelW, +kWheelR}, {+kWheelW, -kWheelR}, {-kWheelW, -kWheelR}}};
    std::array<b2Vec2, 4> wheel_poly;
    for (size_t k = 0; k < wheel_poly.size(); ++k)
      wheel_poly[k] = vec(kWheelPoly[k][0] * 1.0 * kSize, kWheelPoly[k][1] * 1.0 * kSize);
    b2PolygonShape wheel_shape;
    wheel_shape.Set(wheel_poly.data(), 4);
    for (int k = 0; k < 4; ++k) {
      const int wx = kWheelPos[k][0], wy = kWheelPos[k][1];
      b2BodyDef def;
      def.type = b2_dynamicBody;
      def.position = vec(init_x + wx * kSize, init_y + wy * kSize);
      def.angle = static_cast<float32>(init_angle);
      Wheel& w = wheels[k];
      w.body = world.CreateBody(&def);
      b2FixtureDef f;
      f.shape = &wheel_shape;
      f.density = 0.1f;
      f.filter.categoryBits = 0x0020;
      f.filter.maskBits = 0x001;
      f.restitution = 0.0f;
      w.body->CreateFixture(&f);
      w.body->SetUserData(body_tag(1 + k));
      b2RevoluteJointDef rjd;
      rjd.bodyA = hull;
      rjd.bodyB = w.body;
      rjd.localAnchorA = vec(wx * kSize, wy * kSize);
      rjd.localAnchorB = b2Vec2(0.0f, 0.0f);
      rjd.enableMotor = true;
      rjd.enableLimit = true;
      rjd.maxMotorTorque = static_cast<float32>(180 * 900 * kSize * kSize);
      rjd.motorSpeed = 0.0f;
      rjd.lowerAngle = static_cast<float32>(-0.4);
      rjd.upperAngle = static_cast<float32>(+0.4);
      // pybox2d's revoluteJointDef sets it from the bodies' angles
      rjd.referenceAngle = static_cast<float32>(static_cast<double>(w.body->GetAngle()) - hull->GetAngle());
      w.joint = static_cast<b2RevoluteJoint*>(world.CreateJoint(&rjd));
    }
  }
  Car(const Car&) = delete;
  Car& operator=(const Car&) = delete;

  // Rear-wheel drive: the gas rises by at most 0.1 a step, and drops at once.
  void gas(double g) {
    g = std::clamp(g, 0.0, 1.0);
    for (int k = 2; k < 4; ++k) {
      double diff = g - wheels[k].gas;
      if (diff > 0.1) diff = 0.1;
      wheels[k].gas += diff;
    }
  }
  // More than 0.9 blocks the wheels.
  void brake(double b) {
    for (Wheel& w : wheels) w.brake = b;
  }
  // The front wheels' target angle, which their joints' motors turn them towards.
  void steer(double s) {
    wheels[0].steer = s;
    wheels[1].steer = s;
  }

  void step(double dt) {
    using namespace car;
    for (Wheel& w : wheels) {
      const double d = w.steer - static_cast<double>(w.joint->GetJointAngle());
      w.joint->SetMotorSpeed(static_cast<float32>(np_sign(d) * std::min(50.0 * std::abs(d), 3.0)));

      // Position => friction_limit (every tile's road_friction is 1.0)
      bool grass = true;
      double friction_limit = kFrictionLimit * 0.6;
      if (!w.tiles.empty()) {
        friction_limit = std::max(friction_limit, kFrictionLimit * 1.0);
        grass = false;
      }

      const b2Vec2 forw = w.body->GetWorldVector(b2Vec2(0.0f, 1.0f));
      const b2Vec2 side = w.body->GetWorldVector(b2Vec2(1.0f, 0.0f));
      const b2Vec2 v = w.body->GetLinearVelocity();
      const double vf = static_cast<double>(forw.x) * v.x + static_cast<double>(forw.y) * v.y;  // forward speed
      const double vs = static_cast<double>(side.x) * v.x + static_cast<double>(side.y) * v.y;  // side speed

      // The engine's power W = I omega domega/dt (5.0: not to divide by zero)
      w.omega += dt * kEnginePower * w.gas / kWheelMomentOfInertia / (std::abs(w.omega) + 5.0);

      if (w.brake >= 0.9) {
        w.omega = 0;
      } else if (w.brake > 0) {
        const double dir = -np_sign(w.omega);
        double val = 15 * w.brake;  // BRAKE_FORCE, radians per second
        if (std::abs(val) > std::abs(w.omega)) val = std::abs(w.omega);  // low speed => same as = 0
        w.omega += dir * val;
      }
      w.phase += w.omega * dt;

      const double vr = w.omega * kWheelRad;  // rotating wheel speed
      double f_force = -vf + vr;              // force direction is direction of speed difference
      double p_force = -vs;
      f_force *= 205000 * kSize * kSize;  // (the reference's coefficient against oscillations)
      p_force *= 205000 * kSize * kSize;
      double force = std::sqrt(f_force * f_force + p_force * p_force);

      if (std::abs(force) > 2.0 * friction_limit) {  // skid trace
        const b2Vec2 p = w.body->GetPosition();
        const std::array<double, 2> at = {p.x, p.y};
        if (w.skid_particle && w.skid_particle->grass == grass &&
            w.skid_particle->poly.size() < static_cast<size_t>(kMaxParticlePoints)) {
          w.skid_particle->poly.push_back(at);
        } else if (!w.skid_start) {
          w.skid_start = true;
        } else {
          w.skid_particle = create_particle(at, grass);
          w.skid_start = false;
        }
      } else {
        w.skid_start = false;
        w.skid_particle.reset();
      }

      if (std::abs(force) > friction_limit) {
        f_force /= force;
        p_force /= force;
        force = friction_limit;
        f_force *= force;
        p_force *= force;
      }
      w.omega -= dt * f_force * kWheelRad / kWheelMomentOfInertia;
      w.body->ApplyForceToCenter(vec(p_force * side.x + f_force * forw.x, p_force * side.y + f_force * forw.y), true);
    }
  }

  // The reference's destroy(): the hull (its joints with it), then the wheels.
  void destroy() {
    world_.DestroyBody(hull);
    hull = nullptr;
    for (Wheel& w : wheels) {
      world_.DestroyBody(w.body);
      w = Wheel{};
    }
  }

  b2Body* hull = nullptr;
  std::array<Wheel, 4> wheels;
  std::deque<std::shared_ptr<Particle>> particles;  // the latest kMaxParticles, oldest first

 private:
  // A new mark from the wheel's position, twice (the reference's skid_start aliases the position it reads).
  std::shared_ptr<Particle> create_particle(const std::array<double, 2>& at, bool grass) {
    auto p = std::make_shared<Particle>(Particle{grass, {at, at}});
    particles.push_back(p);
    while (particles.size() > static_cast<size_t>(car::kMaxParticles)) particles.pop_front();
    return p;
  }

  b2World& world_;
};

}  // namespace fastvec::envs::box2d
