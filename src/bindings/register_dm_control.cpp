#include "env_registry.hpp"

#ifdef FASTVEC_WITH_MUJOCO
#include "envs/dm_control/acrobot.hpp"
#include "envs/dm_control/ball_in_cup.hpp"
#include "envs/dm_control/cartpole.hpp"
#include "envs/dm_control/cheetah.hpp"
#include "envs/dm_control/hopper.hpp"
#include "envs/dm_control/pendulum.hpp"
#include "envs/dm_control/point_mass.hpp"
#include "envs/dm_control/walker.hpp"
// humanoid, quadruped, fish, swimmer
#include "envs/dm_control/fish.hpp"
#include "envs/dm_control/humanoid.hpp"
#include "envs/dm_control/quadruped.hpp"
#include "envs/dm_control/swimmer.hpp"
// lqr, manipulator, stacker
#include "envs/dm_control/lqr.hpp"
#include "envs/dm_control/manipulator.hpp"
#include "envs/dm_control/stacker.hpp"
// reacher, finger, point_mass hard, cartpole's poles
#include "envs/dm_control/finger.hpp"
#include "envs/dm_control/reacher.hpp"
// humanoid_CMU, dog
#include "envs/dm_control/humanoid_cmu.hpp"
// dog
#include "envs/dm_control/dog.hpp"
#include "envs/dm_control/pixels.hpp"
#define DMC(...) envs::dm_control::DmControlEnv<envs::dm_control::__VA_ARGS__>
#else
#define DMC(...) NotBuilt  // built with FASTVEC_MUJOCO=OFF: the ids, without their envs (env_registry.hpp)
#endif

namespace fastvec::bindings {
namespace {

#ifdef FASTVEC_WITH_MUJOCO
// A task's envs, and with from_pixels=True their frames as observations (DmControlPixels: another env class,
// whose observations are uint8): one id, whose pool is of the class the option picks.
template <class T>
void add_pixel_task(EnvInfo info, envs::dm_control::DmControlEnv<T>*) {
  using State = envs::dm_control::DmControlEnv<T>;
  using Pixels = envs::dm_control::DmControlPixels<T>;
  add_env<State>(info);
  NativeEnvEntry& entry = native_envs()[info.id];
  entry.options = Pixels::options();
  entry.make = [](const core::PoolConfig& cfg, const core::Options& o) -> std::unique_ptr<core::PoolBase> {
    if (o.flag("from_pixels")) return std::make_unique<core::Pool<Pixels>>(cfg, o);
    return std::make_unique<core::Pool<State>>(cfg, o);
  };
  entry.loop_rate = [](const core::Options& o, int64_t steps, int max_episode_steps, bool next_step) {
    return o.flag("from_pixels") ? loop_rate<Pixels>(o, steps, max_episode_steps, next_step)
                                 : loop_rate<State>(o, steps, max_episode_steps, next_step);
  };
}
#endif

template <class E>
void add_task(const char* id, int max_episode_steps = 1000) {
  const EnvInfo info{.id = id, .max_episode_steps = max_episode_steps, .family = "dm_control"};
  if constexpr (std::same_as<E, NotBuilt>)
    add_env<E>(info);
  else
    add_pixel_task(info, static_cast<E*>(nullptr));
}

// The DeepMind Control Suite's tasks (dm_control.suite.load(domain, task)) under EnvPool's ids. Each episode
// lasts the task's time_limit (1000 steps by default, lqr's infinite; the pool truncates it, with discount 1).
const EnvFamily dm_control([] {
  add_task<DMC(acrobot::Balance<false>)>("AcrobotSwingup-v1");
  add_task<DMC(acrobot::Balance<true>)>("AcrobotSwingupSparse-v1");
  add_task<DMC(ball_in_cup::Catch)>("BallInCupCatch-v1");
  add_task<DMC(cartpole::Balance<false, false>)>("CartpoleBalance-v1");
  add_task<DMC(cartpole::Balance<false, true>)>("CartpoleBalanceSparse-v1");
  add_task<DMC(cartpole::Balance<true, false>)>("CartpoleSwingup-v1");
  add_task<DMC(cartpole::Balance<true, true>)>("CartpoleSwingupSparse-v1");
  add_task<DMC(cheetah::Run)>("CheetahRun-v1");
  add_task<DMC(hopper::Hopper<true>)>("HopperHop-v1");
  add_task<DMC(hopper::Hopper<false>)>("HopperStand-v1");
  add_task<DMC(pendulum::SwingUp)>("PendulumSwingup-v1");
  add_task<DMC(point_mass::Easy)>("PointMassEasy-v1");
  add_task<DMC(walker::PlanarWalker<0>)>("WalkerStand-v1");
  add_task<DMC(walker::PlanarWalker<1>)>("WalkerWalk-v1");
  add_task<DMC(walker::PlanarWalker<8>)>("WalkerRun-v1");
  // humanoid, quadruped, fish, swimmer
  add_task<DMC(humanoid::Humanoid<0>)>("HumanoidStand-v1");
  add_task<DMC(humanoid::Humanoid<1>)>("HumanoidWalk-v1");
  add_task<DMC(humanoid::Humanoid<10>)>("HumanoidRun-v1");
  add_task<DMC(humanoid::Humanoid<10, true>)>("HumanoidRunPureState-v1");
  add_task<DMC(quadruped::Move<5>)>("QuadrupedWalk-v1");
  add_task<DMC(quadruped::Move<50>)>("QuadrupedRun-v1");
  add_task<DMC(quadruped::Fetch)>("QuadrupedFetch-v1");
  add_task<DMC(fish::Fish<false>)>("FishUpright-v1");
  add_task<DMC(fish::Fish<true>)>("FishSwim-v1");
  add_task<DMC(swimmer::Swimmer<6>)>("SwimmerSwimmer6-v1");
  add_task<DMC(swimmer::Swimmer<15>)>("SwimmerSwimmer15-v1");
  // lqr, manipulator, stacker
  add_task<DMC(lqr::Level<2, 1>)>("LqrLqr21-v1", 0);
  add_task<DMC(lqr::Level<6, 2>)>("LqrLqr62-v1", 0);
  add_task<DMC(manipulator::Bring<false, false>)>("ManipulatorBringBall-v1");
  add_task<DMC(manipulator::Bring<true, false>)>("ManipulatorBringPeg-v1");
  add_task<DMC(manipulator::Bring<false, true>)>("ManipulatorInsertBall-v1");
  add_task<DMC(manipulator::Bring<true, true>)>("ManipulatorInsertPeg-v1");
  add_task<DMC(stacker::Stack<2>)>("StackerStack2-v1");
  add_task<DMC(stacker::Stack<4>)>("StackerStack4-v1");
  // reacher, finger, point_mass hard, cartpole's poles
  add_task<DMC(reacher::Reacher<false>)>("ReacherEasy-v1");
  add_task<DMC(reacher::Reacher<true>)>("ReacherHard-v1");
  add_task<DMC(finger::Finger<false>)>("FingerSpin-v1");
  add_task<DMC(finger::Finger<true, .07>)>("FingerTurnEasy-v1");
  add_task<DMC(finger::Finger<true, .03>)>("FingerTurnHard-v1");
  add_task<DMC(point_mass::Hard)>("PointMassHard-v1");
  add_task<DMC(cartpole::Balance<true, false, 2>)>("CartpoleTwoPoles-v1");
  add_task<DMC(cartpole::Balance<true, false, 3>)>("CartpoleThreePoles-v1");
  // humanoid_CMU, dog
  add_task<DMC(humanoid_cmu::HumanoidCMU<0>)>("HumanoidCMUStand-v1");
  add_task<DMC(humanoid_cmu::HumanoidCMU<1>)>("HumanoidCMUWalk-v1");
  add_task<DMC(humanoid_cmu::HumanoidCMU<10>)>("HumanoidCMURun-v1");
  // dog
  add_task<DMC(dog::Stand)>("DogStand-v1");
  add_task<DMC(dog::Move<1>)>("DogWalk-v1");
  add_task<DMC(dog::Move<3>)>("DogTrot-v1");
  add_task<DMC(dog::Move<9>)>("DogRun-v1");
  add_task<DMC(dog::Fetch)>("DogFetch-v1");
  // escape
  add_task<DMC(quadruped::Escape)>("QuadrupedEscape-v1");
});

}  // namespace
}  // namespace fastvec::bindings
