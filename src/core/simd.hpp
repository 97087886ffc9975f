#pragma once
// FASTVEC_SIMD_CLONES compiles a hot loop for AVX-512 and AVX2 besides the
// baseline and picks one at load time (GCC function multi-versioning), so a
// portable build still runs vectorized block loops at full width.

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define FASTVEC_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define FASTVEC_SIMD_CLONES_256 __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define FASTVEC_SIMD_CLONES
#define FASTVEC_SIMD_CLONES_256
#endif

// FASTVEC_SIMD_CLONES_256 stops at AVX2, for short kernels between long
// stretches of scalar code (an Atari env's per-step preprocessing, between
// emulated frames). Dense 512-bit multiplies or float arithmetic there put
// the core in a lower-frequency AVX-512 licence for a while, and the scalar
// code after them pays: the emulator ran measurably slower behind them
// (docs/performance.md). 512-bit shuffles, adds and compares do not do it.
