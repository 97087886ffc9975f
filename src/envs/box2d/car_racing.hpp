#pragma once
// CarRacing-v3 (continuous, and continuous=False), a port of gymnasium/envs/box2d/car_racing.py on the Box2D
// that pybox2d compiles (cmake/box2d.cmake): the track's generation (its np_random draws in order, retried
// until a track closes), domain_randomize's colours, the tiles' contact listener (FrictionDetector), rewards
// and termination, in the reference's float64 arithmetic and order. As the reference, each env keeps one
// b2World for its life and destroys the episode's bodies at the next reset in the reference's order (the
// world's allocators and broad-phase tree carry over: proxy ids, hence contact order).
//
// Not yet: the observation (the reference's 96x96 "state_pixels" frame, drawn by pygame at 1000x800 and
// smoothscaled), which write_obs leaves black; until it exists the env is registered under a test-only id
// (src/bindings/register_box2d.cpp). What a frame is drawn from is the render state (CarRacingState below).

#include <Box2D/Box2D.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/options.hpp"
#include "core/rng.hpp"
#include "core/spec.hpp"
#include "envs/box2d/car_dynamics.hpp"
#include "envs/box2d/world.hpp"

namespace fastvec::envs::box2d {

namespace racing {
inline constexpr int kStateW = 96, kStateH = 96;
inline constexpr double kScale = 6.0;                // track scale
inline constexpr double kTrackRad = 900 / kScale;    // the track is a heavily morphed circle of this radius
inline constexpr double kPlayfield = 2000 / kScale;  // game over boundary
inline constexpr int kFps = 50;
inline constexpr double kTrackDetailStep = 21 / kScale, kTrackTurnRate = 0.31;
inline constexpr double kTrackWidth = 40 / kScale, kBorder = 8 / kScale;
inline constexpr int kBorderMinCount = 4, kCheckpoints = 12;
// The generation takes at most 2500 steps (the reference's no_freeze): no track is longer.
inline constexpr int kMaxTrack = 2500;
}  // namespace racing

// The render state (write_render_state): everything a frame of the reference shows, and what the tests compare
// with the reference's attributes. float64 values, each as the int64 of its bits (Python: .view(np.float64));
// counts, flags and indices as floats. Box2D's float32 values are exact in it. Offsets:
namespace racing_state {
// The header: numbers of tiles, road polygons (tiles and their borders: the reference's road_poly) and particles,
// then the reference's t, reward, prev_reward, tile_visited_count, new_lap, the last step's info["lap_finished"]
// (-1: no such key), start_alpha, road_color, bg_color and grass_color (3 each).
inline constexpr int kNumTiles = 0, kNumRoadPoly = 1, kNumParticles = 2, kT = 3, kReward = 4, kPrevReward = 5,
                     kTileVisitedCount = 6, kNewLap = 7, kLapFinished = 8, kStartAlpha = 9, kRoadColor = 10,
                     kBgColor = 13, kGrassColor = 16;
// A body: position (2), angle, linear velocity (2), angular velocity, its transform's rotation (sin, cos).
inline constexpr int kBodyValues = 8;
inline constexpr int kHull = 19;
// A wheel: its body's values, then joint angle, joint motor speed, gas, brake, steer, omega, phase, skid_start
// (0/1), skid_particle (its index in the particles; -1: none; -2: one the car's particles no longer hold), the
// number of tiles it touches and the first kWheelTiles of their indices, ascending (-1 past the number).
inline constexpr int kWheelTiles = 8;
inline constexpr int kWheelValues = kBodyValues + 10 + kWheelTiles;
inline constexpr int kWheels = kHull + kBodyValues;
// The car's particles, oldest first: grass (0/1), number of points, kMaxParticlePoints points (x, y).
inline constexpr int kParticleValues = 2 + 2 * car::kMaxParticlePoints;
inline constexpr int kParticles = kWheels + 4 * kWheelValues;
// The track: (alpha, beta, x, y) per tile.
inline constexpr int kTrack = kParticles + car::kMaxParticles * kParticleValues;
// Per tile: road_visited, its colour (3), its polygon (4 points), whether it has a border, the border's polygon
// (4 points; its colour is the reference's white on even tiles, red on odd ones).
inline constexpr int kTileValues = 1 + 3 + 8 + 1 + 8;
inline constexpr int kTiles = kTrack + 4 * racing::kMaxTrack;
inline constexpr int kSize = kTiles + kTileValues * racing::kMaxTrack;
}  // namespace racing_state

struct TrackPoint {
  double alpha, beta, x, y;
};

struct RoadTile {
  std::array<double, 8> poly;  // road1_l, road1_r, road2_r, road2_l
  std::array<double, 3> color;
  bool visited = false;
  bool border = false;
  std::array<double, 8> border_poly{};  // b1_l, b1_r, b2_r, b2_l
};

// One env: its world (for the env's life), the episode's bodies, and what the reference's env and its
// FrictionDetector keep.
struct RacingEpisode final : b2ContactListener {
  std::unique_ptr<b2World> world;
  std::vector<b2Body*> road;  // the tiles' bodies, in creation order (the reference's _destroy order)
  std::unique_ptr<Car> car;
  std::vector<TrackPoint> track;
  std::vector<RoadTile> tiles;
  std::array<double, 3> road_color{}, bg_color{}, grass_color{};
  double start_alpha = 0;
  double reward = 0, prev_reward = 0, t = 0;
  int64_t tile_visited_count = 0;
  bool new_lap = false;
  int lap_finished = -1;  // the last step's info["lap_finished"]: -1 none, else 0/1
  double lap_complete_percent = 0;

  void BeginContact(b2Contact* contact) override { on_contact(contact, true); }
  void EndContact(b2Contact* contact) override { on_contact(contact, false); }

 private:
  // FrictionDetector._contact
  void on_contact(b2Contact* contact, bool begin) {
    const intptr_t u1 = tag_of(contact->GetFixtureA()->GetBody());
    const intptr_t u2 = tag_of(contact->GetFixtureB()->GetBody());
    intptr_t tile = -1, obj = 0;
    if (u1 >= kTileTag) tile = u1 - kTileTag, obj = u2;
    if (u2 >= kTileTag) tile = u2 - kTileTag, obj = u1;
    if (tile < 0) return;
    RoadTile& t = tiles[static_cast<size_t>(tile)];
    t.color = road_color;  // (any body's contact, the hull's too, gives the tile the road's colour)
    if (obj < 1 || obj > 4) return;
    std::vector<int>& touching = car->wheels[static_cast<size_t>(obj - 1)].tiles;
    const auto at = std::find(touching.begin(), touching.end(), static_cast<int>(tile));
    if (!begin) {
      if (at != touching.end()) touching.erase(at);
      return;
    }
    if (at == touching.end()) touching.push_back(static_cast<int>(tile));
    if (t.visited) return;
    t.visited = true;
    const double n = static_cast<double>(track.size());
    reward += 1000.0 / n;
    tile_visited_count += 1;
    // a lap is complete when enough of the track was covered
    if (tile == 0 && static_cast<double>(tile_visited_count) / n > lap_complete_percent) new_lap = true;
  }
};

template <bool kContinuous>
class CarRacing {
 public:
  using Obs = uint8_t;
  // Continuous actions reach the env as float64 when given so (the reference converts them to float64).
  using Action = std::conditional_t<kContinuous, double, int32_t>;
  using Reward = double;  // the reference's reward is a Python float

  static core::OptionTable options() {
    using K = core::OptionSpec::Kind;
    return {{"continuous", K::kBool, 1}, {"domain_randomize", K::kBool, 0}, {"lap_complete_percent", K::kReal, 0.95}};
  }

  static core::Spec spec(const core::Options&) {
    using namespace racing;
    core::Spec s;
    s.obs_shape = {kStateH, kStateW, 3};
    s.obs_low.assign(kStateH * kStateW * 3, 0.0);
    s.obs_high.assign(kStateH * kStateW * 3, 255.0);
    if constexpr (kContinuous) {
      s.action_shape = {3};  // steer, gas, brake
      s.action_low = {-1.0, 0.0, 0.0};
      s.action_high = {1.0, 1.0, 1.0};
    } else {
      s.num_actions = 5;  // do nothing, right, left, gas, brake
    }
    s.render_state_size = racing_state::kSize;
    s.step_cost_ns = 30e3;
    s.env_address_bytes = s.env_resident_bytes = 1e6;
    return s;
  }

  CarRacing(int n, const core::Options& o)
      : domain_randomize_(o.flag("domain_randomize")), lap_complete_percent_(o.get("lap_complete_percent")), episodes_(n) {
    for (RacingEpisode& ep : episodes_) {
      ep.world = std::make_unique<b2World>(b2Vec2(0.0f, 0.0f));
      ep.lap_complete_percent = lap_complete_percent_;
    }
  }

  void reset(int i, core::Pcg64& rng) {
    guarded([&] {
      reset_episode(episodes_[i], rng);
      step_episode(episodes_[i], nullptr);  // the reference's reset ends with step(None)
    });
  }

  core::BasicStepResult<double> step(int i, const Action* action) {
    core::BasicStepResult<double> r{};
    guarded([&] { r = step_episode(episodes_[i], action); });
    return r;
  }

  // The frame is not drawn yet (see the top of this file): black.
  void write_obs(int, uint8_t* out) const { std::memset(out, 0, racing::kStateH * racing::kStateW * 3); }

  void write_render_state(int i, int64_t* out) const noexcept {
    namespace rs = racing_state;
    const RacingEpisode& ep = episodes_[i];
    std::fill(out, out + rs::kSize, int64_t{0});  // (the bits of +0.0)
    const auto put = [out](int at, double value) { std::memcpy(out + at, &value, sizeof value); };
    int road_polys = 0;
    for (const RoadTile& t : ep.tiles) road_polys += t.border ? 2 : 1;
    put(rs::kNumTiles, static_cast<double>(ep.tiles.size()));
    put(rs::kNumRoadPoly, road_polys);
    put(rs::kT, ep.t);
    put(rs::kReward, ep.reward);
    put(rs::kPrevReward, ep.prev_reward);
    put(rs::kTileVisitedCount, static_cast<double>(ep.tile_visited_count));
    put(rs::kNewLap, ep.new_lap);
    put(rs::kLapFinished, ep.lap_finished);
    put(rs::kStartAlpha, ep.start_alpha);
    for (int k = 0; k < 3; ++k) {
      put(rs::kRoadColor + k, ep.road_color[k]);
      put(rs::kBgColor + k, ep.bg_color[k]);
      put(rs::kGrassColor + k, ep.grass_color[k]);
    }
    for (size_t k = 0; k < ep.track.size(); ++k) {
      const TrackPoint& p = ep.track[k];
      const int at = rs::kTrack + 4 * static_cast<int>(k);
      put(at, p.alpha), put(at + 1, p.beta), put(at + 2, p.x), put(at + 3, p.y);
    }
    for (size_t k = 0; k < ep.tiles.size(); ++k) {
      const RoadTile& t = ep.tiles[k];
      const int at = rs::kTiles + rs::kTileValues * static_cast<int>(k);
      put(at, t.visited);
      for (int j = 0; j < 3; ++j) put(at + 1 + j, t.color[j]);
      for (int j = 0; j < 8; ++j) put(at + 4 + j, t.poly[j]);
      put(at + 12, t.border);
      for (int j = 0; j < 8; ++j) put(at + 13 + j, t.border_poly[j]);
    }
    if (!ep.car) return;  // (a reset that raised)
    const Car& car = *ep.car;
    const auto put_body = [&put](int at, const b2Body& b) {
      const b2Vec2 p = b.GetPosition(), v = b.GetLinearVelocity();
      const b2Rot& q = b.GetTransform().q;
      const double values[rs::kBodyValues] = {p.x, p.y, b.GetAngle(), v.x, v.y, b.GetAngularVelocity(), q.s, q.c};
      for (int j = 0; j < rs::kBodyValues; ++j) put(at + j, values[j]);
    };
    put_body(rs::kHull, *car.hull);
    for (int k = 0; k < 4; ++k) {
      const Wheel& w = car.wheels[k];
      const int at = rs::kWheels + k * rs::kWheelValues;
      put_body(at, *w.body);
      const auto in_particles = std::find(car.particles.begin(), car.particles.end(), w.skid_particle);
      const double particle = !w.skid_particle                      ? -1.0
                              : in_particles == car.particles.end() ? -2.0
                                                                    : static_cast<double>(in_particles - car.particles.begin());
      std::array<int, rs::kWheelTiles> touching;
      touching.fill(-1);
      const size_t shown = std::min(w.tiles.size(), touching.size());
      std::partial_sort_copy(w.tiles.begin(), w.tiles.end(), touching.begin(), touching.begin() + shown);
      const double values[10] = {w.joint->GetJointAngle(), w.joint->GetMotorSpeed(), w.gas, w.brake, w.steer,
                                 w.omega, w.phase, w.skid_start ? 1.0 : 0.0, particle,
                                 static_cast<double>(w.tiles.size())};
      for (int j = 0; j < 10; ++j) put(at + rs::kBodyValues + j, values[j]);
      for (int j = 0; j < rs::kWheelTiles; ++j) put(at + rs::kBodyValues + 10 + j, touching[j]);
    }
    put(rs::kNumParticles, static_cast<double>(car.particles.size()));
    for (size_t k = 0; k < car.particles.size(); ++k) {
      const Particle& p = *car.particles[k];
      const int at = rs::kParticles + static_cast<int>(k) * rs::kParticleValues;
      put(at, p.grass);
      put(at + 1, static_cast<double>(p.poly.size()));
      for (size_t j = 0; j < p.poly.size(); ++j) {
        put(at + 2 + 2 * static_cast<int>(j), p.poly[j][0]);
        put(at + 3 + 2 * static_cast<int>(j), p.poly[j][1]);
      }
    }
  }

 private:
  // The reference's _destroy: the tiles in creation order, then the car.
  static void destroy(RacingEpisode& ep) {
    if (ep.road.empty()) return;
    // (the reference's listener, called for the contacts these end, changes only the episode's objects)
    ep.world->SetContactListener(nullptr);
    for (b2Body* t : ep.road) ep.world->DestroyBody(t);
    ep.road.clear();
    if (ep.car) ep.car->destroy();
    ep.car.reset();
  }

  void reset_episode(RacingEpisode& ep, core::Pcg64& rng) const {
    destroy(ep);
    ep.world->SetContactListener(&ep);
    ep.reward = 0.0;
    ep.prev_reward = 0.0;
    ep.tile_visited_count = 0;
    ep.t = 0.0;
    ep.new_lap = false;
    ep.lap_finished = -1;
    ep.tiles.clear();
    if (domain_randomize_) {
      for (double& c : ep.road_color) c = rng.uniform(0, 210);
      for (double& c : ep.bg_color) c = rng.uniform(0, 210);
      ep.grass_color = ep.bg_color;
      ep.grass_color[static_cast<size_t>(rng.integers(3))] += 20;
    } else {
      ep.road_color = {102, 102, 102};
      ep.bg_color = {102, 204, 102};
      ep.grass_color = {102, 230, 102};
    }
    while (!create_track(ep, rng)) {
    }
    const TrackPoint& start = ep.track[0];
    ep.car = std::make_unique<Car>(*ep.world, start.beta, start.x, start.y);
  }

  // _create_track: false when the track does not close (the caller draws another).
  static bool create_track(RacingEpisode& ep, core::Pcg64& rng) {
    using namespace racing;
    struct Checkpoint {
      double alpha, x, y;
    };
    std::array<Checkpoint, kCheckpoints> checkpoints;
    for (int c = 0; c < kCheckpoints; ++c) {
      const double noise = rng.uniform(0, 2 * M_PI * 1 / kCheckpoints);
      double alpha = 2 * M_PI * c / kCheckpoints + noise;
      double rad = rng.uniform(kTrackRad / 3, kTrackRad);
      if (c == 0) {
        alpha = 0;
        rad = 1.5 * kTrackRad;
      }
      if (c == kCheckpoints - 1) {
        alpha = 2 * M_PI * c / kCheckpoints;
        ep.start_alpha = 2 * M_PI * (-0.5) / kCheckpoints;
        rad = 1.5 * kTrackRad;
      }
      checkpoints[c] = {alpha, rad * std::cos(alpha), rad * std::sin(alpha)};
    }

    // Go from one checkpoint to another to create the track
    double x = 1.5 * kTrackRad, y = 0, beta = 0;
    int dest_i = 0, laps = 0, no_freeze = 2500;
    bool visited_other_side = false;
    std::vector<TrackPoint> track;
    for (;;) {
      double alpha = std::atan2(y, x);
      if (visited_other_side && alpha > 0) {
        laps += 1;
        visited_other_side = false;
      }
      if (alpha < 0) {
        visited_other_side = true;
        alpha += 2 * M_PI;
      }
      Checkpoint dest{};
      for (;;) {  // find the destination among the checkpoints
        bool failed = true;
        for (;;) {
          dest = checkpoints[dest_i % kCheckpoints];
          if (alpha <= dest.alpha) {
            failed = false;
            break;
          }
          dest_i += 1;
          if (dest_i % kCheckpoints == 0) break;
        }
        if (!failed) break;
        alpha -= 2 * M_PI;
      }
      const double r1x = std::cos(beta), r1y = std::sin(beta);
      const double p1x = -r1y, p1y = r1x;
      const double dest_dx = dest.x - x, dest_dy = dest.y - y;  // towards the destination
      double proj = r1x * dest_dx + r1y * dest_dy;              // projected on the radius
      while (beta - alpha > 1.5 * M_PI) beta -= 2 * M_PI;
      while (beta - alpha < -1.5 * M_PI) beta += 2 * M_PI;
      const double prev_beta = beta;
      proj *= kScale;
      if (proj > 0.3) beta -= std::min(kTrackTurnRate, std::abs(0.001 * proj));
      if (proj < -0.3) beta += std::min(kTrackTurnRate, std::abs(0.001 * proj));
      x += p1x * kTrackDetailStep;
      y += p1y * kTrackDetailStep;
      track.push_back({alpha, prev_beta * 0.5 + beta * 0.5, x, y});
      if (laps > 4) break;
      no_freeze -= 1;
      if (no_freeze == 0) break;
    }

    // The closed loop i1..i2: the first lap is ignored, the second is the track
    int i1 = -1, i2 = -1;
    for (int i = static_cast<int>(track.size());;) {
      i -= 1;
      if (i == 0) return false;
      const bool pass_through_start = track[i].alpha > ep.start_alpha && track[i - 1].alpha <= ep.start_alpha;
      if (pass_through_start && i2 == -1) {
        i2 = i;
      } else if (pass_through_start && i1 == -1) {
        i1 = i;
        break;
      }
    }
    track = std::vector<TrackPoint>(track.begin() + i1, track.begin() + std::max(i1, i2 - 1));
    const int n = static_cast<int>(track.size());
    // (where the reference's indexing raises IndexError: no track is this short)
    const auto too_short = [n] { return core::EnvError("CarRacing generated a track of " + std::to_string(n) + " tiles"); };
    if (n == 0) throw too_short();
    const auto wrap = [n](int i) { return i < 0 ? i + n : i; };  // Python's negative indices

    // the perpendicular jump that puts the head and tail together
    const double first_beta = track[0].beta;
    const double gx = std::cos(first_beta) * (track[0].x - track[n - 1].x);
    const double gy = std::sin(first_beta) * (track[0].y - track[n - 1].y);
    if (std::sqrt(gx * gx + gy * gy) > kTrackDetailStep) return false;
    if (n < kBorderMinCount) throw too_short();

    // Red-white border on hard turns
    std::vector<char> border(n);
    for (int i = 0; i < n; ++i) {
      bool good = true;
      double oneside = 0;
      for (int neg = 0; neg < kBorderMinCount; ++neg) {
        const double beta1 = track[wrap(i - neg - 0)].beta, beta2 = track[wrap(i - neg - 1)].beta;
        good &= std::abs(beta1 - beta2) > kTrackTurnRate * 0.2;
        oneside += np_sign(beta1 - beta2);
      }
      good &= std::abs(oneside) == kBorderMinCount;
      border[i] = good;
    }
    for (int i = 0; i < n; ++i)
      for (int neg = 0; neg < kBorderMinCount; ++neg) border[wrap(i - neg)] |= border[i];

    // The tiles
    ep.tiles.resize(n);
    ep.road.reserve(n);
    for (int i = 0; i < n; ++i) {
      const TrackPoint& a = track[i];
      const TrackPoint& b = track[wrap(i - 1)];
      RoadTile& tile = ep.tiles[i];
      const double c1 = std::cos(a.beta), s1 = std::sin(a.beta), c2 = std::cos(b.beta), s2 = std::sin(b.beta);
      tile.poly = {a.x - kTrackWidth * c1, a.y - kTrackWidth * s1, a.x + kTrackWidth * c1, a.y + kTrackWidth * s1,
                   b.x + kTrackWidth * c2, b.y + kTrackWidth * s2, b.x - kTrackWidth * c2, b.y - kTrackWidth * s2};
      const std::array<b2Vec2, 4> vertices = {vec(tile.poly[0], tile.poly[1]), vec(tile.poly[2], tile.poly[3]),
                                              vec(tile.poly[4], tile.poly[5]), vec(tile.poly[6], tile.poly[7])};
      b2PolygonShape shape;
      shape.Set(vertices.data(), 4);
      b2FixtureDef f;  // the reference's fd_tile
      f.shape = &shape;
      b2BodyDef def;
      b2Body* body = ep.world->CreateBody(&def);
      body->CreateFixture(&f);
      body->SetUserData(body_tag(kTileTag + i));
      body->GetFixtureList()->SetSensor(true);
      ep.road.push_back(body);
      const double c = 0.01 * (i % 3) * 255;
      for (int k = 0; k < 3; ++k) tile.color[k] = ep.road_color[k] + c;
      tile.border = border[i];
      if (tile.border) {
        const double side = np_sign(b.beta - a.beta);
        tile.border_poly = {a.x + side * kTrackWidth * c1,
                            a.y + side * kTrackWidth * s1,
                            a.x + side * (kTrackWidth + kBorder) * c1,
                            a.y + side * (kTrackWidth + kBorder) * s1,
                            b.x + side * (kTrackWidth + kBorder) * c2,
                            b.y + side * (kTrackWidth + kBorder) * s2,
                            b.x + side * kTrackWidth * c2,
                            b.y + side * kTrackWidth * s2};
      }
    }
    ep.track = std::move(track);
    return true;
  }

  core::BasicStepResult<double> step_episode(RacingEpisode& ep, const Action* action) const {
    using namespace racing;
    Car& car = *ep.car;
    if (action != nullptr) {
      if constexpr (kContinuous) {
        car.steer(-action[0]);
        car.gas(action[1]);
        car.brake(action[2]);
      } else {
        const int32_t a = *action;
        car.steer(-0.6 * (a == 1 ? 1.0 : 0.0) + 0.6 * (a == 2 ? 1.0 : 0.0));
        car.gas(0.2 * (a == 3 ? 1.0 : 0.0));
        car.brake(0.8 * (a == 4 ? 1.0 : 0.0));
      }
    }
    car.step(1.0 / kFps);
    ep.world->Step(static_cast<float32>(1.0 / kFps), 6 * 30, 2 * 30);
    ep.t += 1.0 / kFps;

    double step_reward = 0;
    bool terminated = false;
    ep.lap_finished = -1;
    if (action != nullptr) {  // (the reset's step has none)
      ep.reward -= 0.1;
      step_reward = ep.reward - ep.prev_reward;
      ep.prev_reward = ep.reward;
      if (ep.tile_visited_count == static_cast<int64_t>(ep.track.size()) || ep.new_lap) {
        terminated = true;  // the lap is finished
        ep.lap_finished = 1;
      }
      const b2Vec2 p = car.hull->GetPosition();
      if (std::abs(static_cast<double>(p.x)) > kPlayfield || std::abs(static_cast<double>(p.y)) > kPlayfield) {
        terminated = true;
        ep.lap_finished = 0;
        step_reward = -100;
      }
    }
    return {step_reward, terminated};
  }

  const bool domain_randomize_;
  const double lap_complete_percent_;
  std::vector<RacingEpisode> episodes_;
};

}  // namespace fastvec::envs::box2d
