#pragma once
// What a native env must provide, as a concept the pool and the registry
// check at compile time. An env does physics only: the pool owns step
// counting, truncation, autoreset, seeding and episode statistics.
//
// One instance holds a block of n envs (structure of arrays); its methods
// take the index i of an env in the block. The pool calls an instance from
// one thread at a time.
//
//   using Obs = float | uint8_t;      observation element (float32 or uint8 Box)
//   using Action = int32_t | float;   int32_t: Discrete(spec.num_actions); float: a float32 Box
//   static OptionTable options();     every keyword the env takes (core/options.hpp)
//   static Spec spec(const Options&); spaces, cost, info names (core/spec.hpp)
//   E(int n, const Options&);         n envs, not yet reset
//   void reset(int i, Pcg64& rng);    a new episode, drawn from rng (numpy-exact)
//   StepResult step(int i, const Action* a);   one action (Discrete) or action_shape elements (Box)
//   void write_obs(int i, Obs* out) const;     the current observation
//
// Optional, found by the pool when present (each must be noexcept):
//   void step_block(int n, const Action*, float* reward, bool* terminated);  every env of the block at once
//   void write_obs_block(int n, Obs* out) const;                            observations of the whole block
//   void write_info(int i, int32_t* out) const;                              spec.info_names, one int32 each
//   void render(int i, uint8_t* out);                                        spec.render_shape, RGB

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "options.hpp"
#include "rng.hpp"
#include "spec.hpp"

namespace fastvec::core {

template <class E>
concept NativeEnv = (std::same_as<typename E::Obs, float> || std::same_as<typename E::Obs, uint8_t>) &&
                    (std::same_as<typename E::Action, int32_t> || std::same_as<typename E::Action, float>) &&
                    std::constructible_from<E, int, const Options&> &&
                    requires(E& env, const E& cenv, int i, Pcg64& rng, const typename E::Action* a,
                             typename E::Obs* out, const Options& o) {
                      { E::options() } -> std::same_as<OptionTable>;
                      { E::spec(o) } -> std::same_as<Spec>;
                      { env.reset(i, rng) } -> std::same_as<void>;
                      { env.step(i, a) } -> std::same_as<StepResult>;
                      { cenv.write_obs(i, out) } -> std::same_as<void>;
                    };

// Discrete(spec.num_actions) envs take int32 actions; Box envs take float32.
template <NativeEnv E>
inline constexpr bool kDiscreteActions = std::is_integral_v<typename E::Action>;

// The numpy dtype of an env's observations.
template <NativeEnv E>
constexpr const char* obs_dtype() {
  return std::is_same_v<typename E::Obs, float> ? "float32" : "uint8";
}

}  // namespace fastvec::core
