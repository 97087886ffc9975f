#pragma once
// XLA's custom calls into fastvec's pools (xla_ffi.cpp), built when the build found XLA FFI's headers
// (FASTVEC_WITH_XLA; cmake/xla.cmake).

#include <string>
#include <utility>
#include <vector>

namespace fastvec::bindings {

// The CPU handlers ("send", "recv", "step"), as XLA_FFI_Handler pointers, for jax.ffi.register_ffi_target.
std::vector<std::pair<std::string, void*>> xla_cpu_handlers();

}  // namespace fastvec::bindings
