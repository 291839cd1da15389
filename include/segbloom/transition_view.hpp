// segbloom: lookups straight from a stored TransitionFilter (kinds 4, 5, 6), without
// loading it.
//
// The request path during a change of options: fetch a user's blob, check a few hundred
// candidates, drop it. TransitionView checks the whole blob once, exactly as
// from_bytes<TransitionFilter<F>> does (outer envelope and fields, then each inner
// envelope as FilterView does), then answers from two FilterViews pointing into the
// blob: no copy of the cells, no allocation.
//
//   std::string blob = store.get(user);
//   std::optional<segbloom::FilterView> plain;
//   std::optional<segbloom::TransitionView> pair;
//   if (segbloom::is_transition_kind(segbloom::envelope::read_header(blob, 0, {}).kind)) {
//     pair.emplace(blob);
//   } else {
//     plain.emplace(blob);
//   }
//
// The previous filter answers when its period was not over at construction (by `clock`):
// the view answers exactly as the filter from_bytes would return with the same clock at
// that moment, but that, like FilterView given a clock, it skips the slices of a filter
// with a slice lifetime that the next write would drop as expired (the loaded filter
// answers from them until that write). The view borrows the blob: it must stay alive and unchanged while the
// view is used. Read-only, so any number of threads may use one view at once.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "segbloom/clock.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/envelope.hpp"
#include "segbloom/filter_view.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/transition_serialization.hpp"

namespace segbloom {

// True for the kind ids of transition pairs (4, 5, 6).
constexpr bool is_transition_kind(std::uint8_t kind) noexcept {
  return kind > kTransitionKindOffset && kind <= kTransitionKindOffset + std::size(kTransitionKindNames);
}

class TransitionView {
 public:
  // Checks `blob` (one envelope of a transition kind) and keeps pointers into it.
  // Throws FormatError naming what is wrong, for every blob from_bytes refuses (and for
  // a blob of a single filter: read those with FilterView).
  explicit TransitionView(std::string_view blob, const LoadLimits& limits = {},
                          const Clock& clock = system_clock());

  // The current filter's answer, or the previous one's while it answers. The key is hashed
  // once for both (they share one seed).
  template <Key K>
  bool contains(const K& key) const {
    bool found = false;
    visit_kind(FilterKinds{}, current_.kind(), [&]<class F>() {
      const auto digest = F::slice_type::scheme_type::hash(key, current_.options().seed);
      found = current_.contains_digest_as<F>(digest) || (previous_ && previous_->contains_digest_as<F>(digest));
    });
    return found;
  }

  // found[i] = contains(keys[i]); `found` must have keys.size() elements (else
  // std::invalid_argument). Returns the number found. The slices of both filters answer
  // in one batch, as a loaded pair's (TransitionFilter::contains_many: each key hashed
  // once, detail::lookup_slices), read in place from the blob.
  template <Key K>
  std::size_t contains_many(std::span<const K> keys, std::span<bool> found) const {
    detail::check_batch_output(keys.size(), found.size(), false);
    std::size_t count = 0;
    const FilterView* const both[] = {previous_ ? &*previous_ : nullptr, &current_};  // oldest first
    visit_kind(FilterKinds{}, current_.kind(), [&]<class F>() { count = FilterView::contains_many_in<F>(both, keys, found); });
    return count;
  }

  // The pair's kind id (4, 5, 6); current().kind() is the kind of both filters.
  std::uint8_t kind() const noexcept { return kind_; }
  const FilterView& current() const noexcept { return current_; }
  // The previous filter while it answers; null when none, or its period was over at
  // construction.
  const FilterView* previous() const noexcept { return previous_ ? &*previous_ : nullptr; }
  bool in_transition() const noexcept { return previous_.has_value(); }
  // As stored: 0 when the blob holds no previous filter.
  UnixSeconds transition_ends_at() const noexcept { return ends_at_; }
  std::chrono::seconds transition_period() const noexcept { return period_; }
  // Items held by the filters that answer, as TransitionFilter::size().
  std::uint64_t size() const noexcept {
    return current_.size() + (previous_ ? previous_->size() : 0);
  }

 private:
  TransitionView(const detail::TransitionParts& parts, const LoadLimits& limits, const Clock& clock);

  FilterView current_;
  std::optional<FilterView> previous_;
  UnixSeconds ends_at_ = 0;
  std::chrono::seconds period_{0};
  std::uint8_t kind_ = 0;
};

}  // namespace segbloom
