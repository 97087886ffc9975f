#pragma once
// The GIL around the pool's waits.
//
// It is taken back by plain code, never by a destructor. CPython 3.11-3.13
// ends a thread that asks for the GIL while another thread finalizes the
// interpreter with pthread_exit, whose forced unwind aborts the process when
// it leaves a noexcept frame, and every destructor is one: a daemon thread
// stepping a pool (or blocked in recv) at interpreter exit took the process
// down with "terminate called without an active exception". Such a thread
// parks instead of unwinding: its process is exiting, and the objects on its
// stack must not be released without the GIL.

#include <Python.h>
#include <cxxabi.h>
#include <unistd.h>

#include <type_traits>
#include <utility>

namespace fastvec::bindings {

[[noreturn]] inline void park_forever() {
  for (;;) pause();
}

inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

inline void take_gil(PyThreadState* state) {
  try {
    PyEval_RestoreThread(state);
  } catch (abi::__forced_unwind&) {
    park_forever();
  }
}

// Runs f() with the GIL released and takes it back, also when f throws. A
// forced unwind from f (its interrupt check asked for the GIL) parks too.
template <class F>
auto without_gil(F&& f) -> std::invoke_result_t<F&> {
  PyThreadState* state = PyEval_SaveThread();
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
      f();
      take_gil(state);
    } else {
      auto result = f();
      take_gil(state);
      return result;
    }
  } catch (abi::__forced_unwind&) {
    park_forever();
  } catch (...) {
    take_gil(state);
    throw;
  }
}

}  // namespace fastvec::bindings
