#include "env_registry.hpp"
#include "envs/mpe/simple.hpp"
#include "envs/mpe/simple_adversary.hpp"
#include "envs/mpe/simple_crypto.hpp"
#include "envs/mpe/simple_push.hpp"
#include "envs/mpe/simple_reference.hpp"
#include "envs/mpe/simple_speaker_listener.hpp"
#include "envs/mpe/simple_spread.hpp"
#include "envs/mpe/simple_tag.hpp"
#include "envs/mpe/simple_world_comm.hpp"

namespace fastvec::bindings {
namespace {

// mpe2's Multi Particle Environments (its parallel envs): each env's observation and action rows are its agents'
// concatenated (core::Spec::agents); its episode limit is the max_cycles option's (fastvec.native).
const EnvFamily mpe([] {
  add_env<envs::mpe::SimpleSpread>({.id = "simple_spread_v3", .max_episode_steps = 25, .family = "mpe"});
  add_env<envs::mpe::Simple>({.id = "simple_v3", .max_episode_steps = 25, .family = "mpe"});
  add_env<envs::mpe::SimpleAdversary>({.id = "simple_adversary_v3", .max_episode_steps = 25, .family = "mpe"});
  add_env<envs::mpe::SimpleTag>({.id = "simple_tag_v3", .max_episode_steps = 25, .family = "mpe"});
  add_env<envs::mpe::SimplePush>({.id = "simple_push_v3", .max_episode_steps = 25, .family = "mpe"});
  add_env<envs::mpe::SimpleSpeakerListener>(
      {.id = "simple_speaker_listener_v4", .max_episode_steps = 25, .family = "mpe"});
  add_env<envs::mpe::SimpleReference>({.id = "simple_reference_v3", .max_episode_steps = 25, .family = "mpe"});
  add_env<envs::mpe::SimpleCrypto>({.id = "simple_crypto_v3", .max_episode_steps = 25, .family = "mpe"});
  add_env<envs::mpe::SimpleWorldComm>({.id = "simple_world_comm_v3", .max_episode_steps = 25, .family = "mpe"});
});

}  // namespace
}  // namespace fastvec::bindings
