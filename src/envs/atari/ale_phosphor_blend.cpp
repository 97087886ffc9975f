// fastvec's stand-in for ALE's environment/phosphor_blend.cpp, compiled in
// its place (cmake/ale.cmake). ALE's version fills a 256x256 colour-average
// table and a 64^3 RGB table in every emulator's constructor: most of the
// time it takes to load a ROM (docs/performance.md), and 0.5 MB of memory
// per env. The tables serve only ALE's "color_averaging" setting, which
// fastvec never turns on.
// Here construction costs nothing and the tables' pages are never touched.

#include <cstdio>
#include <cstdlib>

#include "ale/environment/phosphor_blend.hpp"

namespace ale {

PhosphorBlend::PhosphorBlend(stella::OSystem* osystem) : m_osystem(osystem), m_phosphor_blend_ratio(0) {}

void PhosphorBlend::process(ALEScreen&) {
  // Unreachable: StellaEnvironment calls this only with color_averaging on.
  std::fputs("fastvec: ALE's colour averaging (color_averaging) is not built into fastvec\n", stderr);
  std::abort();
}

}  // namespace ale
