// segbloom: how wide the SIMD kernels of this process may go.
//
// Each kernel family (blocked lookups and inserts, batched lookups, batched hashing)
// asks the CPU once, at start-up, and takes the widest form the CPU runs. The
// environment variable SEGBLOOM_SIMD, read once at start-up, caps that:
//   SEGBLOOM_SIMD=portable   no SIMD kernels (the portable C++ ones)
//   SEGBLOOM_SIMD=avx2       AVX2 at most (no AVX-512)
//   unset, or anything else  no cap
// It never enables what the CPU lacks. Every level gives the same answers and the same
// bits (the kernels are tested against each other, and a filter saved at one level loads
// and answers alike at another), so the cap only changes speed. It exists so that the
// tests run every path on one machine (tests/meson.build runs the SIMD-dependent tests
// at each cap) and so that benchmarks can show what a CPU without AVX-512 would run.
// Builds that target AVX-512 at compile time (-march=x86-64-v4) inline the per-key
// blocked lookup (blocked::contains), which the cap does not reach.
#pragma once

#include <cstdlib>
#include <cstring>

namespace segbloom::detail {

inline constexpr int kSimdPortable = 0;
inline constexpr int kSimdAvx2 = 1;
inline constexpr int kSimdAvx512 = 2;

// The cap from SEGBLOOM_SIMD (kSimdAvx512 when there is none).
inline int simd_cap() noexcept {
  static const int cap = [] {
    const char* value = std::getenv("SEGBLOOM_SIMD");
    if (value == nullptr) return kSimdAvx512;
    if (std::strcmp(value, "portable") == 0) return kSimdPortable;
    if (std::strcmp(value, "avx2") == 0) return kSimdAvx2;
    return kSimdAvx512;
  }();
  return cap;
}

// True when this CPU runs AVX2 and SEGBLOOM_SIMD allows it (asked once per process): the
// AVX2 kernels' common condition.
inline bool avx2_allowed() noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool allowed = [] {
    __builtin_cpu_init();  // may run before the CPU-model constructor (static initialisation)
    return __builtin_cpu_supports("avx2") && simd_cap() >= kSimdAvx2;
  }();
  return allowed;
#else
  return false;
#endif
}

// True when this CPU runs AVX-512F and SEGBLOOM_SIMD allows it (asked once per process):
// the kernels that need no more of AVX-512 than its foundation.
inline bool avx512_allowed() noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool allowed = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && simd_cap() >= kSimdAvx512;
  }();
  return allowed;
#else
  return false;
#endif
}

}  // namespace segbloom::detail
