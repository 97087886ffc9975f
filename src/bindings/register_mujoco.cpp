#include "env_registry.hpp"

#ifdef FASTVEC_WITH_MUJOCO
#include "envs/mujoco/ant.hpp"
#include "envs/mujoco/frames.hpp"
#include "envs/mujoco/half_cheetah.hpp"
#include "envs/mujoco/hopper.hpp"
#include "envs/mujoco/humanoid.hpp"
#include "envs/mujoco/inverted_pendulum.hpp"
#include "envs/mujoco/reacher.hpp"
#include "envs/mujoco/swimmer.hpp"
#define MUJOCO(E) envs::mujoco::Rendered<envs::mujoco::E>  // with gymnasium's rgb_array frames (frames.hpp)
#else
#define MUJOCO(E) NotBuilt  // built with FASTVEC_MUJOCO=OFF: the ids, without their envs (env_registry.hpp)
#endif

namespace fastvec::bindings {
namespace {

// gymnasium's MuJoCo v5 envs, with its ids, episode limits and reward thresholds.
const EnvFamily mujoco([] {
  const std::string m = "mujoco";
  add_env<MUJOCO(Ant)>({.id = "Ant-v5", .max_episode_steps = 1000, .reward_threshold = 6000.0, .family = m});
  add_env<MUJOCO(HalfCheetah)>(
      {.id = "HalfCheetah-v5", .max_episode_steps = 1000, .reward_threshold = 4800.0, .family = m});
  add_env<MUJOCO(Hopper)>({.id = "Hopper-v5", .max_episode_steps = 1000, .reward_threshold = 3800.0, .family = m});
  add_env<MUJOCO(Humanoid)>({.id = "Humanoid-v5", .max_episode_steps = 1000, .family = m});
  add_env<MUJOCO(HumanoidStandup)>({.id = "HumanoidStandup-v5", .max_episode_steps = 1000, .family = m});
  add_env<MUJOCO(InvertedDoublePendulum)>(
      {.id = "InvertedDoublePendulum-v5", .max_episode_steps = 1000, .reward_threshold = 9100.0, .family = m});
  add_env<MUJOCO(InvertedPendulum)>(
      {.id = "InvertedPendulum-v5", .max_episode_steps = 1000, .reward_threshold = 950.0, .family = m});
  add_env<MUJOCO(Pusher)>({.id = "Pusher-v5", .max_episode_steps = 100, .reward_threshold = 0.0, .family = m});
  add_env<MUJOCO(Reacher)>({.id = "Reacher-v5", .max_episode_steps = 50, .reward_threshold = -3.75, .family = m});
  add_env<MUJOCO(Swimmer)>({.id = "Swimmer-v5", .max_episode_steps = 1000, .reward_threshold = 360.0, .family = m});
  add_env<MUJOCO(Walker2d)>({.id = "Walker2d-v5", .max_episode_steps = 1000, .family = m});
});

}  // namespace
}  // namespace fastvec::bindings
