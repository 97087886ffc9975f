#pragma once
// The render state of the Box2D envs (core::Spec::render_state_size int64 values): what gymnasium's own render()
// reads from its bodies, which fastvec/_render.py hands to gymnasium's class in stand-ins for pybox2d's. Reals are
// the bit patterns of float64 values (Box2D's float32 ones widened, exactly); a body is its fixture's shape and
// transform as Box2D holds them, so that Python computes `transform * v` from the very float32 values.

#include <Box2D/Box2D.h>

#include <bit>
#include <cstdint>
#include <string>

#include "core/spec.hpp"

namespace fastvec::envs::box2d {

// The values of a body's record (RenderWriter::body): of a polygon or edge of n vertices, of a circle.
inline constexpr int64_t body_record_size(int vertices) { return 5 + 2 * vertices; }
inline constexpr int64_t kCircleRecordSize = 8;

class RenderWriter {
 public:
  explicit RenderWriter(int64_t* out) : out_(out) {}
  void integer(int64_t v) { *out_++ = v; }
  void real(double v) { *out_++ = std::bit_cast<int64_t>(v); }
  // A body of one fixture: [n, p.x, p.y, q.s, q.c, then n vertices (x, y)] for a polygon (n = its count) or an
  // edge (n = 2); [-1, transform, pos.x, pos.y, radius] for a circle.
  void body(const b2Body& body) {
    const b2Shape& shape = *body.GetFixtureList()->GetShape();
    const b2Transform& xf = body.GetTransform();
    const auto transform = [&] {
      real(xf.p.x);
      real(xf.p.y);
      real(xf.q.s);
      real(xf.q.c);
    };
    switch (shape.GetType()) {
      case b2Shape::e_polygon: {
        const auto& polygon = static_cast<const b2PolygonShape&>(shape);
        integer(polygon.m_count);
        transform();
        for (int k = 0; k < polygon.m_count; ++k) vertex(polygon.m_vertices[k]);
        break;
      }
      case b2Shape::e_edge: {
        const auto& edge = static_cast<const b2EdgeShape&>(shape);
        integer(2);
        transform();
        vertex(edge.m_vertex1);
        vertex(edge.m_vertex2);
        break;
      }
      case b2Shape::e_circle: {
        const auto& circle = static_cast<const b2CircleShape&>(shape);
        integer(-1);
        transform();
        vertex(circle.m_p);
        real(circle.m_radius);
        break;
      }
      default:
        throw core::EnvError("no render record for a Box2D shape of type " + std::to_string(shape.GetType()));
    }
  }

 private:
  void vertex(const b2Vec2& v) {
    real(v.x);
    real(v.y);
  }
  int64_t* out_;
};

}  // namespace fastvec::envs::box2d
