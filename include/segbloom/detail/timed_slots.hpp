// segbloom: the bookkeeping of a concurrent filter's time windows (Options::slice_lifetime;
// ConcurrentScalableBloomFilter, concurrent_filter.hpp): which of its 64 slots are live, when
// each slice opened and closed, in what order they opened, and when the oldest expires.
//
// Written only under the filter's opening mutex; read by any thread. The live slots are a
// bit mask rather than a range of open numbers, since expiry drops the oldest slices
// without opening one. The expiry rule itself is detail/expiry.hpp's.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "segbloom/clock.hpp"
#include "segbloom/detail/expiry.hpp"
#include "segbloom/options.hpp"

namespace segbloom::detail {

class TimedSlots {
 public:
  using Order = std::array<std::uint8_t, kMaxSlices>;

  explicit TimedSlots(std::int64_t lifetime) noexcept : lifetime_(lifetime) {}

  // The live slots (release on store, acquire on load: a slot's slice and times are
  // written before it joins).
  std::uint64_t live() const noexcept { return live_.load(std::memory_order_acquire); }
  void set_live(std::uint64_t mask) noexcept { live_.store(mask, std::memory_order_release); }

  // `slot` opened as the filter's opening number `number` at `time`, taking writes until
  // its lifetime ends or mark_closed.
  void mark_opened(std::size_t slot, std::uint64_t number, UnixSeconds time) noexcept {
    opened_at_[slot].store(time, std::memory_order_relaxed);
    closed_at_[slot].store(kStillOpen, std::memory_order_relaxed);
    number_[slot].store(number, std::memory_order_relaxed);
  }
  // `slot`, the newest, opened later than mark_opened said (only ever later).
  void move_open_time(std::size_t slot, UnixSeconds time) noexcept {
    opened_at_[slot].store(time, std::memory_order_relaxed);
  }
  // The slice of `slot` stopped taking writes at `time`: the next one opened.
  void mark_closed(std::size_t slot, UnixSeconds time) noexcept {
    closed_at_[slot].store(time, std::memory_order_relaxed);
  }

  UnixSeconds opened_at(std::size_t slot) const noexcept { return opened_at_[slot].load(std::memory_order_relaxed); }
  // When the slice of `slot` stopped (or will stop, by its lifetime) taking writes.
  UnixSeconds closed_at(std::size_t slot) const noexcept {
    return std::min<UnixSeconds>(closed_at_[slot].load(std::memory_order_relaxed), opened_at(slot) + lifetime_);
  }
  // Whether the newest slice, in `slot`, takes writes at `time` by its lifetime.
  bool open_at(std::size_t slot, UnixSeconds time) const noexcept { return time < opened_at(slot) + lifetime_; }

  // The live slots, oldest first; returns how many. Each slot's opening number is read
  // once: an opening may change it meanwhile, and a sort whose order changes under it is
  // undefined.
  std::size_t oldest_first(Order& out) const noexcept {
    std::array<std::pair<std::uint64_t, std::uint8_t>, kMaxSlices> by_age;
    std::size_t n = 0;
    for (std::uint64_t m = live(); m != 0; m &= m - 1) {
      const auto slot = static_cast<std::uint8_t>(std::countr_zero(m));
      by_age[n++] = {number_[slot].load(std::memory_order_relaxed), slot};
    }
    std::sort(by_age.begin(), by_age.begin() + static_cast<std::ptrdiff_t>(n));
    for (std::size_t i = 0; i < n; ++i) out[i] = by_age[i].second;
    return n;
  }

  // How many of the `live` slots of `order` (oldest first) have expired at `time`.
  std::size_t expired(const Order& order, std::size_t live, UnixSeconds time) const noexcept {
    return expired_by_close(live, lifetime_, time, [&](std::size_t i) { return closed_at(order[i]); });
  }

  // Whether some slice may have expired at `time` (one relaxed load: inserts ask it
  // before taking the mutex). Kept by update_expiry after every change.
  bool expiry_due(UnixSeconds time) const noexcept { return time >= next_expiry_.load(std::memory_order_relaxed); }
  void update_expiry() noexcept {
    Order order;
    if (oldest_first(order) == 0) return;  // never: a timed filter keeps a live slice
    next_expiry_.store(closed_at(order[0]) + lifetime_, std::memory_order_relaxed);
  }

  // Slices expired or recycled so far (the filter's rotations()).
  std::uint64_t rotations() const noexcept { return rotations_.load(std::memory_order_relaxed); }
  void add_rotations(std::uint64_t n) noexcept { rotations_.fetch_add(n, std::memory_order_relaxed); }
  void set_rotations(std::uint64_t n) noexcept { rotations_.store(n, std::memory_order_relaxed); }

 private:
  static constexpr UnixSeconds kStillOpen = std::numeric_limits<UnixSeconds>::max() / 2;

  const std::int64_t lifetime_;
  alignas(64) std::atomic<std::uint64_t> live_{0};
  std::atomic<UnixSeconds> next_expiry_{0};
  std::atomic<std::uint64_t> rotations_{0};
  std::array<std::atomic<UnixSeconds>, kMaxSlices> opened_at_{};
  std::array<std::atomic<UnixSeconds>, kMaxSlices> closed_at_{};
  std::array<std::atomic<std::uint64_t>, kMaxSlices> number_{};
};

}  // namespace segbloom::detail
