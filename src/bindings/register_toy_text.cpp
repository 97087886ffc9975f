#include "env_registry.hpp"
#include "envs/toy_text/blackjack.hpp"
#include "envs/toy_text/cliff_walking.hpp"
#include "envs/toy_text/frozen_lake.hpp"
#include "envs/toy_text/taxi.hpp"

namespace fastvec::bindings {
namespace {

// gymnasium's toy text envs, with its ids, episode limits and reward thresholds.
const EnvFamily toy_text([] {
  add_env<envs::FrozenLake>(
      {.id = "FrozenLake-v1", .max_episode_steps = 100, .reward_threshold = 0.70, .family = "toy_text"});
  add_env<envs::FrozenLake8x8>(
      {.id = "FrozenLake8x8-v1", .max_episode_steps = 200, .reward_threshold = 0.85, .family = "toy_text"});
  // Taxi-v3 as gymnasium 1.2 has it (later releases deprecate it), Taxi-v4 as gymnasium 1.3 and later have it.
  add_env<envs::Taxi<3>>({.id = "Taxi-v3", .max_episode_steps = 200, .reward_threshold = 8.0, .family = "toy_text"});
  add_env<envs::Taxi<4>>({.id = "Taxi-v4", .max_episode_steps = 200, .reward_threshold = 8.0, .family = "toy_text"});
  add_env<envs::CliffWalking>({.id = "CliffWalking-v1", .family = "toy_text"});
  add_env<envs::CliffWalkingSlippery>({.id = "CliffWalkingSlippery-v1", .family = "toy_text"});
  add_env<envs::Blackjack>({.id = "Blackjack-v1", .family = "toy_text"});
});

}  // namespace
}  // namespace fastvec::bindings
