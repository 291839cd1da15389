// segbloom: the time source of time windows (Options::slice_lifetime) and policy
// transitions (TransitionFilter, SeenStore).
//
// Times are wall-clock seconds since the Unix epoch, so that a filter stored on one
// machine expires its slices on schedule when another machine loads it. A filter keeps a
// pointer to its clock: the clock must outlive the filter. Tests and simulations use a
// ManualClock; everything else the system clock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace segbloom {

// Seconds since 1970-01-01 00:00:00 UTC.
using UnixSeconds = std::int64_t;

class Clock {
 public:
  virtual UnixSeconds now() const noexcept = 0;

 protected:
  ~Clock() = default;
};

// The system's wall clock in whole seconds: the coarse clock where there is one
// (CLOCK_REALTIME_COARSE, the last timer tick: at most a second behind
// std::chrono::system_clock, and only in the few ms after a second begins),
// std::chrono::system_clock elsewhere. Thread-safe.
const Clock& system_clock() noexcept;

// The latest time a filter records (a timed slice's open time): 2^40 s after 1970, about
// the year 36800. Loaders refuse later ones.
inline constexpr UnixSeconds kLatestTime = UnixSeconds{1} << 40;

namespace detail {

// A clock's reading as filters take it: within [0, kLatestTime]. A broken clock (before
// 1970, or far in the future) can then neither overflow open time + lifetime nor write a
// filter that its own loader refuses; one stuck at 0 expires nothing.
inline UnixSeconds filter_time(const Clock& clock) noexcept {
  const UnixSeconds now = clock.now();
  return now < 0 ? 0 : (now > kLatestTime ? kLatestTime : now);
}

}  // namespace detail

// A clock that moves only when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(UnixSeconds start = 1'700'000'000) noexcept : now_(start) {}
  UnixSeconds now() const noexcept override { return now_.load(std::memory_order_relaxed); }
  void set(UnixSeconds t) noexcept { now_.store(t, std::memory_order_relaxed); }
  void advance(std::chrono::seconds by) noexcept {
    now_.fetch_add(static_cast<UnixSeconds>(by.count()), std::memory_order_relaxed);
  }

 private:
  std::atomic<UnixSeconds> now_;
};

}  // namespace segbloom
