// Allocation failure on demand: this test binary replaces the global operator new (and
// delete) with malloc/free, and posix_memalign (where the filters' cell arrays come from,
// detail::AlignedWords) with glibc's memalign, all counting the calling thread's
// allocations: the n-th one after FailNthAllocation starts fails, operator new by throwing
// std::bad_alloc, posix_memalign by returning ENOMEM. Only that one: code that catches the
// failure and goes on allocates normally afterwards. Other threads are not affected.
//
// A separate binary from segbloom_tests, so that the main suite keeps ASan's own operator
// new and its checks of mismatched new/delete.
#pragma once

#include <cstdint>

namespace segbloom::test {

// While one lives, the calling thread's n-th operator new (1 = the next) throws.
class FailNthAllocation {
 public:
  explicit FailNthAllocation(std::uint64_t n) noexcept;
  ~FailNthAllocation();
  FailNthAllocation(const FailNthAllocation&) = delete;
  FailNthAllocation& operator=(const FailNthAllocation&) = delete;
  // Allocations counted so far (the failed one included): fewer than n means none failed.
  std::uint64_t allocations() const noexcept;
  // Of those, the ones through posix_memalign.
  std::uint64_t aligned_allocations() const noexcept;
};

}  // namespace segbloom::test
