// segbloom demo: a simulated short-video feed served through SeenStore, measured
// against exact ground truth.
//
// Every simulated day each user makes `requests_per_day` feed requests (users
// interleaved in a shuffled order, as a server sees them). A request proposes
// `candidates` videos drawn from a Zipf(s) popularity over the catalog and shows the
// first `shown` the store calls unseen (SeenStore::take_unseen: one read and one
// write). Next to the store, an exact set per user records what was really shown, so
// every answer of the filter is checked:
//   - a repeat is a shown video the user had already been shown (must never happen:
//     a Bloom filter has no false negatives);
//   - a wrongly skipped candidate is one the user had never been shown that the
//     store called seen (a false positive; its rate is bounded by the target rate).
// take_unseen stops reading candidates once it has `shown` of them, so the checked
// candidates are those up to the last one shown (all of them when fewer were found).
//
// Policy change: at the start of `transition_day` the store is reopened on the same
// backend with target rate `new_rate`. SeenStore moves each user to the new filter on
// their next write and keeps the old filter answering reads for the transition period
// (on the simulated clock); then the old filter, and the history only it held, is
// dropped. A video the user saw only before their move, shown again once the period
// is over, is counted apart ("forgotten with the old policy"), not as a repeat.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "segbloom/store_backend.hpp"

namespace segbloom::cli {

struct FeedConfig {
  std::uint64_t users = 1000;
  std::uint32_t days = 28;
  std::uint32_t requests_per_day = 5;  // per user
  std::uint32_t candidates = 50;       // proposed per request
  std::uint32_t shown = 10;            // shown per request (at most)
  std::uint64_t catalog = 1'000'000;   // videos
  double zipf = 1.0;                   // popularity exponent s: rank r has weight 1 / r^s
  std::uint64_t capacity = 256;        // filter capacity C (growing mode)
  double rate = 0.001;                 // target rate before the policy change
  double new_rate = 0.0001;            // target rate after it
  std::uint32_t transition_day = 14;   // day of the change; >= days: no change
  std::uint32_t transition_days = 7;   // SeenStoreOptions::transition_period, in days
  std::uint64_t seed = 1;
};

enum class Phase { before, during, after };
const char* phase_name(Phase phase) noexcept;

// Which policy the stored filters are on, from reading every user's blob.
struct PolicyCount {
  std::uint64_t old_policy = 0;  // a plain filter with the old rate
  std::uint64_t in_transition = 0;  // anything else: the old and the new filter together
  std::uint64_t new_policy = 0;  // a plain filter with the new rate
  std::uint64_t none = 0;        // no blob stored
};

struct DayStats {
  std::uint32_t day = 0;
  Phase phase = Phase::before;
  double target = 0;                 // target rate of the filters taking writes
  std::uint64_t requests = 0;
  std::uint64_t shown = 0;           // videos shown
  std::uint64_t repeats = 0;         // shown although already shown: a defect
  std::uint64_t forgotten = 0;       // shown again after the old policy's filter was dropped
  std::uint64_t unseen_checked = 0;  // never-shown candidates the store answered for
  std::uint64_t wrongly_skipped = 0; // of those, called seen
  std::uint64_t seen_skipped = 0;    // candidates already shown, rightly skipped
  double store_seconds = 0;          // wall time inside SeenStore calls
  double blob_bytes_per_user = 0;    // stored bytes at the end of the day
  double id_bytes_per_user = 0;      // 8 bytes per distinct video shown: an exact id list
  PolicyCount policy;

  double skip_rate() const noexcept {
    return unseen_checked ? static_cast<double>(wrongly_skipped) / static_cast<double>(unseen_checked)
                          : 0.0;
  }
  double requests_per_second() const noexcept {
    return store_seconds > 0 ? static_cast<double>(requests) / store_seconds : 0.0;
  }
};

// Throws std::invalid_argument naming a field out of range.
void validate(const FeedConfig& config);

// Runs the simulation on `backend` (whose keys "demo-user-<n>" are forgotten first, so
// a reused database starts clean), calling on_day after each day. Throws StoreError
// when the store fails.
std::vector<DayStats> run_feed(const FeedConfig& config, std::shared_ptr<StoreBackend> backend,
                               const std::function<void(const DayStats&)>& on_day = {});

// The key of user `index` in the store.
std::string demo_user(std::uint64_t index);

}  // namespace segbloom::cli
