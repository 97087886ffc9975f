#include "env_registry.hpp"
#include "envs/atari/atari.hpp"

namespace fastvec::bindings {

// One native env for every game: the registry passes the game's ROM path.
void register_atari() { add_env<envs::Atari>("Atari"); }

}  // namespace fastvec::bindings
