#pragma once
// dm_control's rewards.tolerance and its sigmoids, with numpy's roundings in numpy's order.
// Reference: dm_control/utils/rewards.py. np.exp is numpy's own loop (envs/numpy_unary.hpp: on AVX-512 CPUs
// it differs from libm's exp). A square is x * x for an array's element but libm's pow(x, 2) for a numpy float64
// scalar (a task passes one or the other: Arg). The sigmoids' scales, computed once from value_at_margin, and
// cosh, cos and tanh use libm: numpy agrees for the sigmoids and values the tasks here use (their parity tests
// check every reward bit for bit); numpy's SVML cosh and tanh may not, for a task that uses them.

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "envs/numpy_unary.hpp"
#include "envs/mujoco/simulation.hpp"

namespace fastvec::envs::dm_control {

// What tolerance's x is in the task's numpy code: an np.float64 scalar or an array (of any size).
enum class Arg { kScalar, kArray };

enum class Sigmoid { kGaussian, kHyperbolic, kLongTail, kReciprocal, kCosine, kLinear, kQuadratic, kTanhSquared };

// One tolerance(x, bounds, margin, sigmoid, value_at_margin) with its scale computed once.
class Tolerance {
 public:
  explicit Tolerance(double lower = 0.0, double upper = 0.0, double margin = 0.0, Sigmoid sigmoid = Sigmoid::kGaussian,
                     double value_at_margin = 0.1)
      : lower_(lower), upper_(upper), margin_(margin), sigmoid_(sigmoid) {
    if (lower > upper) throw std::invalid_argument("tolerance: lower bound must be <= upper bound");
    if (margin < 0) throw std::invalid_argument("tolerance: margin must be non-negative");
    const double v = value_at_margin;
    switch (sigmoid) {
      case Sigmoid::kGaussian:
        scale_ = std::sqrt(-2 * std::log(v));
        break;
      case Sigmoid::kHyperbolic:
        scale_ = std::acosh(1 / v);
        break;
      case Sigmoid::kLongTail:
        scale_ = std::sqrt(1 / v - 1);
        break;
      case Sigmoid::kReciprocal:
        scale_ = 1 / v - 1;
        break;
      case Sigmoid::kCosine:
        scale_ = std::acos(2 * v - 1) / std::numbers::pi;
        break;
      case Sigmoid::kLinear:
        scale_ = 1 - v;
        break;
      case Sigmoid::kQuadratic:
        scale_ = std::sqrt(1 - v);
        break;
      case Sigmoid::kTanhSquared:
        scale_ = std::atanh(std::sqrt(1 - v));
        break;
    }
  }

  // 1 inside [lower, upper]; outside, 0 without a margin, else the sigmoid of the distance / margin (numpy's
  // np.where computes both, and the sigmoid of x inside the bounds is not used: not computed here).
  double operator()(double x, Arg arg) const {
    const bool in_bounds = lower_ <= x && x <= upper_;
    if (margin_ == 0) return in_bounds ? 1.0 : 0.0;
    if (in_bounds) return 1.0;
    const double d = (x < lower_ ? lower_ - x : x - upper_) / margin_;
    return sigmoid(d, arg);
  }

 private:
  // (x * scale) ** 2, as numpy squares it.
  static double square(double xs, Arg arg) { return arg == Arg::kScalar ? mujoco::scalar_pow(xs, 2.0) : xs * xs; }

  double sigmoid(double x, Arg arg) const {
    switch (sigmoid_) {
      case Sigmoid::kGaussian: {
        return numpy_exp(-0.5 * square(x * scale_, arg));
      }
      case Sigmoid::kHyperbolic:
        return 1 / std::cosh(x * scale_);
      case Sigmoid::kLongTail:
        return 1 / (square(x * scale_, arg) + 1);
      case Sigmoid::kReciprocal:
        return 1 / (std::fabs(x) * scale_ + 1);
      case Sigmoid::kCosine: {
        const double xs = x * scale_;
        return std::fabs(xs) < 1 ? (1 + std::cos(std::numbers::pi * xs)) / 2 : 0.0;
      }
      case Sigmoid::kLinear: {
        const double xs = x * scale_;
        return std::fabs(xs) < 1 ? 1 - xs : 0.0;
      }
      case Sigmoid::kQuadratic: {
        const double xs = x * scale_;
        return std::fabs(xs) < 1 ? 1 - square(xs, arg) : 0.0;
      }
      case Sigmoid::kTanhSquared:
        return 1 - square(std::tanh(x * scale_), arg);
    }
    return 0.0;
  }

  double lower_, upper_, margin_, scale_ = 0.0;
  Sigmoid sigmoid_;
};

}  // namespace fastvec::envs::dm_control
