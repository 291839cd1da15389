// segbloom: a batch's slices split by layout, as a batch with blocked slices asks them
// (detail::lookup_slices over any filter's slices, and SegmentedFilter's group inserts over
// its older slices).
#pragma once

#include <cstddef>
#include <type_traits>

#include "segbloom/blocked.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/options.hpp"

namespace segbloom::detail {

// The most slices a batch asks at once: two filters' (a transition pair).
inline constexpr std::size_t kMaxAskedSlices = 2 * std::size_t{kMaxSlices};
static_assert(blocked::kMaxBlockedSlices >= kMaxAskedSlices);

// Slices [first, end), newest first: the blocked ones as the group kernels' SliceRefs,
// the classic ones (a growing filter's tightest slices may fall back to classic) by
// index, to be asked key by key about the keys no blocked slice holds. slice_at(s) gives
// slice s: a reference (lookup_slices, SegmentedFilter), or a slice by value over stored
// cells (tests). A slice by value must not own its cells (the SliceRefs point into them,
// past the temporary's life): a copy of a loaded slice is refused at compile time.
template <class SliceAt>
class SlicesByLayout {
 public:
  SlicesByLayout(std::size_t first, std::size_t end, SliceAt slice_at) : slice_at_(slice_at) {
    using Given = std::invoke_result_t<const SliceAt&, std::size_t>;
    static_assert(std::is_lvalue_reference_v<Given> || std::is_trivially_copyable_v<Given>,
                  "slice_at must return a reference, or a view that does not own its cells");
    for (std::size_t s = end; s-- > first;) {
      const auto& slice = slice_at_(s);
      if (slice.shape().layout == Layout::blocked) {
        refs_[blocked_count_++] = slice.slice_ref();
      } else {
        classic_[classic_count_++] = s;
      }
    }
  }

  const blocked::SliceRef* refs() const noexcept { return refs_; }
  std::size_t blocked_count() const noexcept { return blocked_count_; }

  // found[i] = some slice holds key i, for n keys, the blocked slices asked with `lookup`
  // (a kernel for them: blocked::lookup_group_for); returns how many were found.
  std::size_t answer(blocked::LookupGroupFn lookup, const Digest128* digests, std::size_t n,
                     bool* found) const noexcept {
    const std::size_t count = lookup(refs_, blocked_count_, digests, n, found, {});
    return count + ask_classic(digests, n, found);  // after the kernel: it reads found
  }

  // The classic slices' part of answer(): sets found[i] where one holds a key not found yet.
  std::size_t ask_classic(const Digest128* digests, std::size_t n, bool* found) const noexcept {
    std::size_t count = 0;
    for (std::size_t c = 0; c < classic_count_; ++c) {
      count += slice_at_(classic_[c]).contains_group(digests, n, found, true);
    }
    return count;
  }

 private:
  SliceAt slice_at_;
  blocked::SliceRef refs_[kMaxAskedSlices];
  std::size_t classic_[kMaxAskedSlices];
  std::size_t blocked_count_ = 0, classic_count_ = 0;
};

}  // namespace segbloom::detail
