#include "env_registry.hpp"

#ifdef FASTVEC_WITH_ATARI
#include "envs/atari/atari.hpp"
#define ATARI(E) envs::E
#else
#define ATARI(E) NotBuilt  // built with FASTVEC_ATARI=OFF: the id, without its env (env_registry.hpp)
#endif

namespace fastvec::bindings {
namespace {

// One native env for every game: fastvec/roms.py makes an id per ROM
// (Pong-v5, ...) and passes the game's ROM path as the "rom" option.
const EnvFamily atari(
    [] { add_env<ATARI(Atari)>({.id = "Atari", .max_episode_steps = 27'000, .family = "atari"}); });

}  // namespace
}  // namespace fastvec::bindings
