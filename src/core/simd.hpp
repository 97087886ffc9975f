#pragma once
// FASTVEC_SIMD_CLONES compiles a hot loop for AVX-512 and AVX2 besides the
// baseline and picks one at load time (GCC function multi-versioning), so a
// portable build still runs vectorized block loops at full width.

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define FASTVEC_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FASTVEC_SIMD_CLONES
#endif
