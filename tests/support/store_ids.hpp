// Deterministic workloads shared by the store tests and tests/store_worker.cpp, so that
// the checking process can regenerate every id a writer process marked.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace segbloom::test {

inline std::uint64_t mix64(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One mark_seen call of the lost-update test: writer (process, thread) at step i marks
// three ids, unique over all writers, for a user in [0, users).
struct MarkOp {
  static constexpr std::size_t kIds = 3;
  std::uint64_t user = 0;
  std::array<std::uint64_t, kIds> ids{};

  static MarkOp make(int process, int thread, int step, int users) {
    MarkOp op;
    const std::uint64_t writer = (std::uint64_t(process) << 8) | std::uint64_t(thread);
    op.user = mix64((writer << 32) | std::uint64_t(step)) % std::uint64_t(users);
    for (std::size_t j = 0; j < kIds; ++j) {
      op.ids[j] = (writer << 40) | (std::uint64_t(step) * kIds + j);
    }
    return op;
  }
};

// The crash test: the writer marks ids crash_id(user, n) for n = 0, 1, 2, ... in
// batches of kCrashBatch per mark_seen call.
inline constexpr std::size_t kCrashBatch = 50;
inline std::uint64_t crash_id(int user, std::uint64_t n) {
  return mix64((std::uint64_t(user) << 40) ^ n);
}

}  // namespace segbloom::test
