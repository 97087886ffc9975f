#pragma once
// What gymnasium's Box2D envs share on the C++ side: pybox2d's float64-to-float32 conversion, and Box2D's
// failed assertions (b2AssertException, cmake/box2d.cmake) turned into an EnvError the pool re-raises.

#include <Box2D/Box2D.h>

#include "core/spec.hpp"

namespace fastvec::envs::box2d {

// A Python pair of floats as pybox2d passes it to Box2D: each rounded to float32.
inline b2Vec2 vec(double x, double y) { return b2Vec2(static_cast<float32>(x), static_cast<float32>(y)); }

template <class F>
void guarded(F&& f) {
  try {
    f();
  } catch (const b2AssertException&) {
    throw core::EnvError("Box2D failed an internal assertion (the reference raises AssertionError there)");
  }
}

}  // namespace fastvec::envs::box2d
