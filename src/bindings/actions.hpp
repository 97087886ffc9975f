#pragma once
// The checks and conversions of what Python passes a pool: env ids and actions, checked against the pool
// before it is touched. Called with the GIL held.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/simd.hpp"
#include "core/spec.hpp"

namespace fastvec::bindings {

namespace py = pybind11;

// Whether every action is in [0, n): one vectorized pass (the common case);
// the caller looks for the culprit only when it fails.
FASTVEC_SIMD_CLONES inline bool all_in_range(const int64_t* __restrict p, int64_t rows, int64_t n) {
  int64_t lo = 0, hi = 0;
  for (int64_t k = 0; k < rows; ++k) {
    lo = std::min(lo, p[k]);
    hi = std::max(hi, p[k]);
  }
  return lo >= 0 && hi < n;
}

inline bool all_finite(const double* p, int64_t n) {
  for (int64_t k = 0; k < n; ++k)
    if (!std::isfinite(p[k])) return false;
  return true;
}

inline std::string shape_str(const py::array& a) {
  std::string s = "(";
  // As Python prints a shape tuple: (3,) and (2, 2).
  for (py::ssize_t d = 0; d < a.ndim(); ++d) s += std::to_string(a.shape(d)) + (d + 1 < a.ndim() ? ", " : "");
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// numpy's cast of `arr` to T. array_t::ensure returns null (and clears the
// error) when numpy refuses, e.g. when warnings are errors and a cast warns.
template <typename T>
py::array_t<T, py::array::c_style | py::array::forcecast> cast_array(const py::array& arr, const char* what) {
  auto out = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(arr);
  if (!out)
    throw py::value_error(std::string(what) + " of dtype " + std::string(py::str(arr.dtype())) +
                          " cannot be converted to " + std::string(py::str(py::dtype::of<T>())));
  return out;
}

// numpy's view of `value` as an array; when numpy refuses it, a TypeError
// that says why (a torch tensor that requires grad: call .detach()).
inline py::array as_array(const py::handle& value, const char* what) {
  py::array arr = py::array::ensure(value);
  if (arr) return arr;
  try {
    py::module_::import("numpy").attr("asarray")(value);
  } catch (py::error_already_set& e) {
    throw py::type_error(std::string(what) + " could not be converted to a numpy array: " + e.what());
  }
  throw py::type_error(std::string(what) + " must be array-like, got " +
                       std::string(py::str(py::type::handle_of(value).attr("__name__"))));
}

// The index of the first element of a 1-D integer array outside [0, n),
// or -1; its value, as numpy prints it, in *value. Unsigned 64-bit values
// are compared unsigned (2**64 - 1 is not -1).
inline int64_t first_out_of_range(const py::array& arr, int64_t n, std::string* value) {
  if (arr.dtype().kind() == 'u' && arr.itemsize() == 8) {
    auto u = cast_array<uint64_t>(arr, "value");
    for (py::ssize_t k = 0; k < u.size(); ++k) {
      if (u.data()[k] < static_cast<uint64_t>(n)) continue;
      *value = std::to_string(u.data()[k]);
      return k;
    }
    return -1;
  }
  auto v = cast_array<int64_t>(arr, "value");
  for (py::ssize_t k = 0; k < v.size(); ++k) {
    if (v.data()[k] >= 0 && v.data()[k] < n) continue;
    *value = std::to_string(v.data()[k]);
    return k;
  }
  return -1;
}

// env_id (a 1-D array of indices into a pool of num_envs envs, or one integer: one env) as int32s.
inline std::vector<int32_t> convert_ids(const py::handle& env_id, int num_envs) {
  py::array arr = as_array(env_id, "env_id");
  if (arr.ndim() == 0 && (arr.dtype().kind() == 'i' || arr.dtype().kind() == 'u'))
    arr = arr.reshape(std::vector<py::ssize_t>{1});
  if (arr.ndim() != 1)
    throw py::type_error("env_id must be a 1-D array of env indices, got " +
                         std::string(py::str(py::type::handle_of(env_id).attr("__name__"))) + " of shape " +
                         shape_str(arr));
  const char kind = arr.dtype().kind();
  if (kind != 'i' && kind != 'u' && !(arr.size() == 0))
    throw py::type_error("env_id must hold integers, got dtype " + std::string(py::str(arr.dtype())));
  std::string bad;
  if (first_out_of_range(arr, num_envs, &bad) >= 0)
    throw py::value_error("env_id " + bad + " is out of range [0, " + std::to_string(num_envs) + ")");
  auto ids = cast_array<int64_t>(arr, "env_id");
  std::vector<int32_t> out(ids.size());
  const int64_t* p = ids.data();
  for (py::ssize_t k = 0; k < ids.size(); ++k) out[k] = static_cast<int32_t>(p[k]);
  return out;
}

// A pool's action space, as its actions are checked against it: made once, by the pool.
struct ActionSpace {
  bool discrete = false;
  int64_t num_actions = 0;             // Discrete(n)
  std::vector<int64_t> shape;          // a Box's
  int64_t elements = 1;                // of one env's Box action
  bool doubles = false;                // the env takes float64 actions (else float32, or int64 when discrete)
};

// Converted actions, owned by the call that converted them (never by the
// pool: two Python threads may step the same pool).
struct Actions {
  py::object keep;            // an int64 or float64 array the pool reads from
  std::vector<float> floats;  // or float32 elements
  const void* data = nullptr;
};

// Checks actions for `rows` envs against the action space and converts
// them to what the pool reads (int64, float32 or float64), without touching the pool.
inline Actions convert_actions(const py::handle& actions, int64_t rows, const ActionSpace& space) {
  py::array arr = as_array(actions, "actions");
  const char kind = arr.dtype().kind();
  if (space.discrete) {
    if (kind != 'i' && kind != 'u')
      throw py::type_error("actions for Discrete(" + std::to_string(space.num_actions) +
                           ") must be integers, got dtype " + std::string(py::str(arr.dtype())));
    if (arr.ndim() != 1 || arr.shape(0) != rows)
      throw py::value_error("actions must have shape (" + std::to_string(rows) + ",), got " + shape_str(arr));
    auto ints = cast_array<int64_t>(arr, "actions");
    const int64_t* p = ints.data();
    const bool wide_unsigned = kind == 'u' && arr.itemsize() == 8;  // cast to int64 above: may have wrapped
    if (wide_unsigned || !all_in_range(p, rows, space.num_actions)) {
      std::string bad;
      const int64_t k = first_out_of_range(arr, space.num_actions, &bad);
      if (k >= 0)
        throw py::value_error("actions[" + std::to_string(k) + "] = " + bad + " is out of range for Discrete(" +
                              std::to_string(space.num_actions) + ")");
    }
    Actions out;
    out.data = p;
    out.keep = std::move(ints);
    return out;
  }
  if (kind != 'f' && kind != 'i' && kind != 'u')
    throw py::type_error("actions for a Box space must be real numbers, got dtype " +
                         std::string(py::str(arr.dtype())));
  std::string expected = "(" + std::to_string(rows);
  for (int64_t d : space.shape) expected += ", " + std::to_string(d);
  expected += ")";
  bool ok = arr.ndim() == static_cast<py::ssize_t>(space.shape.size()) + 1 && arr.shape(0) == rows;
  for (size_t d = 0; ok && d < space.shape.size(); ++d) ok = arr.shape(d + 1) == space.shape[d];
  const bool flat_1d = space.elements == 1 && arr.ndim() == 1 && arr.shape(0) == rows;
  if (!ok && !flat_1d) throw py::value_error("actions must have shape " + expected + ", got " + shape_str(arr));
  const int64_t n = rows * space.elements;
  Actions out;
  if (space.doubles) {  // float64, as they came (float32 converts exactly): finite, or a ValueError
    auto doubles = cast_array<double>(arr, "actions");
    const double* p = doubles.data();
    if (!all_finite(p, n)) {
      for (int64_t k = 0; k < n; ++k)
        if (!std::isfinite(p[k]))
          throw py::value_error("actions must be finite, got " + std::string(py::repr(py::float_(p[k]))) +
                                " for env row " + std::to_string(k / space.elements));
    }
    out.data = p;
    out.keep = std::move(doubles);
    return out;
  }
  out.floats.resize(static_cast<size_t>(n));
  // Other dtypes are read as float64 and checked before the float32 the env
  // takes: 1e300 is finite as float64, not as float32 (and its C++ cast is undefined).
  const auto take = [&](const auto* p) {
    for (int64_t k = 0; k < n; ++k) {
      if (!(std::fabs(p[k]) <= std::numeric_limits<float>::max()))
        throw py::value_error("actions must be finite as float32, got " +
                              std::string(py::repr(py::float_(static_cast<double>(p[k])))) + " for env row " +
                              std::to_string(k / space.elements));
      out.floats[k] = static_cast<float>(p[k]);
    }
  };
  if (arr.dtype().is(py::dtype::of<float>())) {
    take(cast_array<float>(arr, "actions").data());  // no conversion: at most a contiguous copy
  } else {
    take(cast_array<double>(arr, "actions").data());
  }
  out.data = out.floats.data();
  return out;
}

}  // namespace fastvec::bindings
