#include "env_registry.hpp"
#include "envs/atari/atari.hpp"

namespace fastvec::bindings {

// One native env for every game: fastvec/roms.py makes an id per ROM
// (Pong-v5, ...) and passes the game's ROM path as the "rom" option.
void register_atari() { add_env<envs::Atari>({.id = "Atari", .max_episode_steps = 27'000, .family = "atari"}); }

}  // namespace fastvec::bindings
