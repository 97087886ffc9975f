#include "env_registry.hpp"
#include "envs/classic_control/acrobot.hpp"
#include "envs/classic_control/cartpole.hpp"
#include "envs/classic_control/mountain_car.hpp"
#include "envs/classic_control/pendulum.hpp"
#include "envs/debug/debug_env.hpp"

namespace fastvec::bindings {
namespace {

// gymnasium's classic control envs, with its ids, episode limits and reward thresholds (fastvec/_render.py draws
// their frames with gymnasium's class of the same id), and the pool's test env.
const EnvFamily classic_control([] {
  add_env<envs::CartPole>({.id = "CartPole-v1", .max_episode_steps = 500, .reward_threshold = 475.0});
  add_env<envs::MountainCar>({.id = "MountainCar-v0", .max_episode_steps = 200, .reward_threshold = -110.0});
  add_env<envs::MountainCarContinuous>(
      {.id = "MountainCarContinuous-v0", .max_episode_steps = 999, .reward_threshold = 90.0});
  add_env<envs::Acrobot>({.id = "Acrobot-v1", .max_episode_steps = 500, .reward_threshold = -100.0});
  add_env<envs::Pendulum>({.id = "Pendulum-v1", .max_episode_steps = 200});
  add_env<envs::Debug>({.id = "_Debug-v0", .hidden = true});
});

}  // namespace
}  // namespace fastvec::bindings
