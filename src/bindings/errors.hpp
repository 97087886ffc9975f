#pragma once
// The core's exceptions as Python sees them.

#include <pybind11/pybind11.h>

#include <exception>

#include "core/pool_base.hpp"

namespace fastvec::bindings {

namespace py = pybind11;

// Adds fastvec._core.EnvError (a RuntimeError) to `m` and translates the core's exceptions: UsageError to
// RuntimeError, OutOfMemory to MemoryError, EnvError to EnvError. Called once, at module import.
inline void translate_errors(py::module_& m) {
  static py::exception<core::EnvError> env_error(m, "EnvError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const core::UsageError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const core::OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const core::EnvError& e) {
      // env_id names the env that raised (as the Python-env pool's exceptions have it): reset it to go on.
      py::object error = py::reinterpret_borrow<py::object>(env_error.ptr())(e.what());
      if (e.env_id() >= 0) error.attr("env_id") = e.env_id();
      PyErr_SetObject(env_error.ptr(), error.ptr());
    }
  });
}

}  // namespace fastvec::bindings
