#pragma once
// What a native env must provide, as a concept the pool and the registry
// check at compile time. An env does physics only: the pool owns step
// counting, truncation, autoreset, seeding and episode statistics.
//
// One instance holds a block of n envs (structure of arrays); its methods
// take the index i of an env in the block. The pool calls an instance from
// one thread at a time.
//
//   using Obs = float | uint8_t | double | int64_t;  observation element (a float32, uint8 or float64 Box;
//                                            int64_t: Discrete values, spec.obs_discrete)
//   using Action = int32_t | float | double; int32_t: Discrete(spec.num_actions); float, double: a Box
//                                            (double: float64 actions reach the env exact)
//   static OptionTable options();     every keyword the env takes (core/options.hpp)
//   static Spec spec(const Options&); spaces, cost, info fields (core/spec.hpp)
//   E(int n, const Options&);         n envs, not yet reset
//   void reset(int i, Pcg64& rng);    a new episode, drawn from rng (numpy-exact)
//   BasicStepResult<Reward> step(int i, const Action* a);  one action (Discrete) or action_shape elements (Box)
//   void write_obs(int i, Obs* out) const;     the current observation
//
// Optional, found by the pool when present (each must be noexcept):
//   using Reward = double;                                                  float64 rewards (default: float)
//   void step_block(int n, const Action*, float* reward, bool* terminated);  every env of the block at once
//   void write_obs_block(int n, Obs* out) const;                            observations of the whole block
//   void write_info(int i, std::byte* out) const;    spec.info's fields, at info_offsets(spec.info), for the
//                                                    env's last step or reset (the pool masks what a reset lacks)
//   void render(int i, uint8_t* out);                                        spec.render_shape, RGB
//   void write_render_state(int i, int64_t* out) const;  spec.render_state_size values from which Python draws
//                                                        the env's frame (toy text's, by gymnasium's classes);
//                                                        non-const where the reference's render() changes the
//                                                        env (Box2D's), called once a frame by the caller thread

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "options.hpp"
#include "rng.hpp"
#include "spec.hpp"

namespace fastvec::core {

namespace env_detail {
template <class E>
struct RewardOf {
  using type = float;
};
template <class E>
  requires requires { typename E::Reward; }
struct RewardOf<E> {
  using type = typename E::Reward;
};
}  // namespace env_detail

// The reward type of env E: E::Reward if it declares one, else float.
template <class E>
using reward_t = typename env_detail::RewardOf<E>::type;

template <class E>
concept NativeEnv = (std::same_as<typename E::Obs, float> || std::same_as<typename E::Obs, uint8_t> ||
                     std::same_as<typename E::Obs, double> || std::same_as<typename E::Obs, int64_t>) &&
                    (std::same_as<typename E::Action, int32_t> || std::same_as<typename E::Action, float> ||
                     std::same_as<typename E::Action, double>) &&
                    (std::same_as<reward_t<E>, float> || std::same_as<reward_t<E>, double>) &&
                    std::constructible_from<E, int, const Options&> &&
                    requires(E& env, const E& cenv, int i, Pcg64& rng, const typename E::Action* a,
                             typename E::Obs* out, const Options& o) {
                      { E::options() } -> std::same_as<OptionTable>;
                      { E::spec(o) } -> std::same_as<Spec>;
                      { env.reset(i, rng) } -> std::same_as<void>;
                      { env.step(i, a) } -> std::same_as<BasicStepResult<reward_t<E>>>;
                      { cenv.write_obs(i, out) } -> std::same_as<void>;
                    };

// Discrete(spec.num_actions) envs take int32 actions; Box envs take float32 or float64.
template <NativeEnv E>
inline constexpr bool kDiscreteActions = std::is_integral_v<typename E::Action>;

template <class T>
constexpr const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  if constexpr (std::is_same_v<T, double>) return "float64";
  if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
  if constexpr (std::is_same_v<T, int32_t>) return "int32";
  return "int64";
}

// The numpy dtype of an env's observations.
template <NativeEnv E>
constexpr const char* obs_dtype() {
  return dtype_name<typename E::Obs>();
}

}  // namespace fastvec::core
