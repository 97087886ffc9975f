#include "env_registry.hpp"
#include "envs/mujoco/ant.hpp"
#include "envs/mujoco/half_cheetah.hpp"
#include "envs/mujoco/hopper.hpp"
#include "envs/mujoco/humanoid.hpp"
#include "envs/mujoco/inverted_pendulum.hpp"
#include "envs/mujoco/reacher.hpp"
#include "envs/mujoco/swimmer.hpp"

namespace fastvec::bindings {

// gymnasium's MuJoCo v5 envs, with its ids, episode limits and reward thresholds.
void register_mujoco() {
  using namespace envs::mujoco;
  const std::string m = "mujoco";
  add_env<Ant>({.id = "Ant-v5", .max_episode_steps = 1000, .reward_threshold = 6000.0, .family = m});
  add_env<HalfCheetah>({.id = "HalfCheetah-v5", .max_episode_steps = 1000, .reward_threshold = 4800.0, .family = m});
  add_env<Hopper>({.id = "Hopper-v5", .max_episode_steps = 1000, .reward_threshold = 3800.0, .family = m});
  add_env<Humanoid>({.id = "Humanoid-v5", .max_episode_steps = 1000, .family = m});
  add_env<HumanoidStandup>({.id = "HumanoidStandup-v5", .max_episode_steps = 1000, .family = m});
  add_env<InvertedDoublePendulum>(
      {.id = "InvertedDoublePendulum-v5", .max_episode_steps = 1000, .reward_threshold = 9100.0, .family = m});
  add_env<InvertedPendulum>(
      {.id = "InvertedPendulum-v5", .max_episode_steps = 1000, .reward_threshold = 950.0, .family = m});
  add_env<Pusher>({.id = "Pusher-v5", .max_episode_steps = 100, .reward_threshold = 0.0, .family = m});
  add_env<Reacher>({.id = "Reacher-v5", .max_episode_steps = 50, .reward_threshold = -3.75, .family = m});
  add_env<Swimmer>({.id = "Swimmer-v5", .max_episode_steps = 1000, .reward_threshold = 360.0, .family = m});
  add_env<Walker2d>({.id = "Walker2d-v5", .max_episode_steps = 1000, .family = m});
}

}  // namespace fastvec::bindings
