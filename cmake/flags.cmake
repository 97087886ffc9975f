# The compiler flags every fastvec target builds with, and the sanitizer option:
# included by CMakeLists.txt (the module) and tests/cpp/CMakeLists.txt (the core's unit tests).
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()

# fastvec runs on Linux on x86-64: the pool waits on futexes, the Python-env pool shares memfd memory, and the
# SIMD kernels are x86 ones (with portable fallbacks chosen at run time, not at build time).
if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux" OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  message(FATAL_ERROR "fastvec builds for Linux on x86-64 only (this is ${CMAKE_SYSTEM_NAME} on "
                      "${CMAKE_SYSTEM_PROCESSOR}): it uses futexes, memfd and x86 SIMD kernels")
endif()

set(FASTVEC_SANITIZER "" CACHE STRING "Build with a sanitizer: address (ASan+UBSan) or thread (TSan)")

# Env physics must match the reference implementations: no fused
# multiply-add contraction, no fast-math.
set(FASTVEC_CXX_FLAGS -O3 -ffp-contract=off -fno-math-errno -Wall -Wextra)

if(FASTVEC_SANITIZER STREQUAL "address")
  list(APPEND FASTVEC_CXX_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -O1 -g)
  set(FASTVEC_LINK_FLAGS -fsanitize=address,undefined)
elseif(FASTVEC_SANITIZER STREQUAL "thread")
  list(APPEND FASTVEC_CXX_FLAGS -fsanitize=thread -O1 -g)
  set(FASTVEC_LINK_FLAGS -fsanitize=thread)
elseif(NOT FASTVEC_SANITIZER STREQUAL "")
  message(FATAL_ERROR "FASTVEC_SANITIZER must be empty, 'address' or 'thread'")
endif()
