#include "env_registry.hpp"

#ifdef FASTVEC_WITH_BOX2D
#include "envs/box2d/bipedal_walker.hpp"
#include "envs/box2d/car_racing.hpp"
#include "envs/box2d/lunar_lander.hpp"
#define BOX2D(E) E
#else
#define BOX2D(E) NotBuilt  // built with FASTVEC_BOX2D=OFF: the ids, without their envs (env_registry.hpp)
#endif

namespace fastvec::bindings {
namespace {

#ifdef FASTVEC_WITH_BOX2D
// One id whose action space an option chooses (LunarLander's `continuous`): the entry of the discrete class,
// whose pool and loop rate are the continuous class's when the option is set.
template <class Discrete, class Continuous>
void add_env_with_continuous(EnvInfo info) {
  const std::string id = info.id;
  add_env<Discrete>(std::move(info));
  NativeEnvEntry& entry = native_envs()[id];
  entry.make = [](const core::PoolConfig& cfg, const core::Options& options) -> std::unique_ptr<core::PoolBase> {
    if (options.flag("continuous")) return std::make_unique<core::Pool<Continuous>>(cfg, options);
    return std::make_unique<core::Pool<Discrete>>(cfg, options);
  };
  entry.loop_rate = [](const core::Options& options, int64_t steps, int max_episode_steps, bool next_step) {
    return options.flag("continuous") ? loop_rate<Continuous>(options, steps, max_episode_steps, next_step)
                                      : loop_rate<Discrete>(options, steps, max_episode_steps, next_step);
  };
}

// gymnasium's ids that are another id with a keyword set (LunarLanderContinuous-v3: continuous=True): the
// option's default is the id's.
void set_default(const std::string& id, const std::string& option, double value) {
  for (core::OptionSpec& o : native_envs()[id].options)
    if (o.name == option) o.fallback = value;
}
#else
template <class, class>
void add_env_with_continuous(EnvInfo info) {
  add_env<NotBuilt>(std::move(info));
}
void set_default(const std::string&, const std::string&, double) {}
#endif

using LunarLanderDiscrete = BOX2D(envs::box2d::LunarLander<false>);
using LunarLanderContinuous = BOX2D(envs::box2d::LunarLander<true>);
using CarRacingDiscrete = BOX2D(envs::box2d::CarRacing<false>);
using CarRacingContinuous = BOX2D(envs::box2d::CarRacing<true>);

// gymnasium's Box2D envs (CarRacing aside), with its ids, episode limits and reward thresholds.
const EnvFamily box2d([] {
  const std::string b = "box2d";
  add_env_with_continuous<LunarLanderDiscrete, LunarLanderContinuous>(
      {.id = "LunarLander-v3", .max_episode_steps = 1000, .reward_threshold = 200.0, .family = b});
  add_env_with_continuous<LunarLanderDiscrete, LunarLanderContinuous>(
      {.id = "LunarLanderContinuous-v3", .max_episode_steps = 1000, .reward_threshold = 200.0, .family = b});
  set_default("LunarLanderContinuous-v3", "continuous", 1);
  add_env<BOX2D(envs::box2d::BipedalWalker)>(
      {.id = "BipedalWalker-v3", .max_episode_steps = 1600, .reward_threshold = 300.0, .family = b});
  add_env<BOX2D(envs::box2d::BipedalWalker)>(
      {.id = "BipedalWalkerHardcore-v3", .max_episode_steps = 2000, .reward_threshold = 300.0, .family = b});
  set_default("BipedalWalkerHardcore-v3", "hardcore", 1);
  // CarRacing-v3's physics, track and rewards without its observation (the 96x96 frame, not drawn yet): a
  // test-only id (hidden: not listed, not in gymnasium's registry) until the frame exists.
  add_env_with_continuous<CarRacingDiscrete, CarRacingContinuous>(
      {.id = "_CarRacing-v3", .max_episode_steps = 1000, .reward_threshold = 900.0, .hidden = true, .family = b});
});

}  // namespace
}  // namespace fastvec::bindings
