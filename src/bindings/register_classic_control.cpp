#include "env_registry.hpp"
#include "envs/classic_control/acrobot.hpp"
#include "envs/classic_control/cartpole.hpp"
#include "envs/classic_control/mountain_car.hpp"
#include "envs/classic_control/pendulum.hpp"
#include "envs/debug/debug_env.hpp"

namespace fastvec::bindings {

void register_classic_control() {
  add_env<envs::CartPole>("CartPole");
  add_env<envs::MountainCar>("MountainCar");
  add_env<envs::MountainCarContinuous>("MountainCarContinuous");
  add_env<envs::Acrobot>("Acrobot");
  add_env<envs::Pendulum>("Pendulum");
  add_env<envs::Debug>("Debug");
}

}  // namespace fastvec::bindings
