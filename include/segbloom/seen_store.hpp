// segbloom: per-user "seen" filters kept in a store.
//
//   auto disk = segbloom::make_leveldb_backend({.path = "/var/lib/app/seen"});
//   segbloom::SeenStore store({.backend = disk});
//   std::vector<std::uint64_t> fresh = store.filter_unseen("alice", candidates);
//   store.mark_seen("alice", shown);                  // or, in one step:
//   auto page = store.take_unseen("alice", candidates, 20);  // unseen, then marked seen
//
// Each user has one ScalableBloomFilter, created on first write from
// SeenStoreOptions::filter and stored in the backend as a serialized envelope blob
// (checksummed; serialization.hpp) under the user's key. A read (filter_unseen) checks
// the candidates against the stored bytes through a FilterView (TransitionView during a
// change of options), without building a filter; a write (mark_seen, take_unseen) loads the filter, inserts, and writes the
// blob back with the backend's compare-and-set.
//
// Changing options. A store opened with other SeenStoreOptions::filter options than a
// user's stored filter moves that user lazily, on their next write: the stored filter
// becomes the previous half of a TransitionFilter (transition_filter.hpp), which answers
// reads for transition_period (7 days by default, on SeenStoreOptions::clock), while a
// new filter with the new options takes every write. The pair is stored as one blob
// (kind 4) only while the period lasts; the first write after it stores the new filter
// alone. Reads never move a user. A user still in a transition when the options change
// again finishes it first. Items only the previous filter holds are forgotten when its
// period ends. Timed filters (Options::slice_lifetime) are timed by the same clock.
//
// Concurrency. Every call may come from any thread. Calls for the same user are
// serialised by a lock striped over users (lock_stripes of them: two different users
// share a lock with probability 1 / lock_stripes); calls for different users proceed
// in parallel. Across processes (Redis fleets), writes are optimistic: a write whose
// compare-and-set finds the user changed since it was read (another server wrote)
// reads the user again, re-applies its items and tries again, after a short random
// pause (up to max_retries attempts in all; each retry is counted in
// SeenStoreStats::conflicts_retried). So two servers that update one user at once both
// land: no update is lost. Inserting is idempotent, so re-applying is always safe.
//
// Errors: StoreError (store_backend.hpp) for every failure of the store, with code()
// unavailable / timeout / locked / io from the backend, conflict when max_retries are
// exhausted (or from flush(): a memory cache's blob its backing store kept refusing), corrupt under CorruptBlobPolicy::throw_error, full when the user's stored
// filter takes no more items (growing mode at 64 slices) or its blob would pass
// max_blob_bytes. A call that throws has not
// changed the user, except that a write whose outcome the store could not confirm
// (timeout, or unavailable when the connection dropped after the send) may have landed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "segbloom/clock.hpp"
#include "segbloom/options.hpp"
#include "segbloom/store_backend.hpp"

namespace segbloom {

// What SeenStore does with a stored blob that fails its checks (bad checksum, wrong
// kind, truncated, or larger than max_blob_bytes).
enum class CorruptBlobPolicy {
  // Count it (SeenStoreStats::corrupt_blobs) and start the user again from an empty
  // filter, which is written over the bad blob. The user's history is lost, and they
  // may be shown items again; the service keeps running.
  reset,
  // Throw StoreError with code StoreErrc::corrupt naming the user; the blob is left
  // as it is for inspection. Counted too.
  throw_error,
};

// The default filter of a user: window mode, "remember the last ~10 000 items".
// - capacity 10 000 over max_slices 8: slices of 1 250 items; when all 8 are full the
//   oldest is cleared, so the most recent 8 750 to 10 000 items are always remembered
//   (at 50 items a day, about half a year of history).
// - false_positive_rate 0.001: one unseen candidate in a thousand is wrongly dropped.
// - Why 8 slices: each slice gets p/8, 19.35 bits an item (k = 13) against 17.72 for 4
//   slices (k = 12; +9 % memory), and rotation forgets 1/8 of the window at a time
//   instead of 1/4. Memory grows with the history, one 3 024-byte slice at a time, up to
//   a 24.4 KB blob a user once the window is full.
Options default_seen_filter_options();

struct SeenStoreOptions {
  // Where the blobs live. Null: a standalone memory backend with the default budget
  // (memory_backend.hpp; evicted users are forgotten).
  std::shared_ptr<StoreBackend> backend{};
  // Options of a new user's filter. A user stored with other options moves to these
  // on their next write, through a transition (transition_period, below), but for the
  // seed: a user keeps the seed their filter was made with (one hash serves both filters
  // of a transition), so a new seed applies to new users only.
  Options filter = default_seen_filter_options();
  CorruptBlobPolicy on_corrupt = CorruptBlobPolicy::reset;
  // Stored blobs larger than this are treated as corrupt (and never allocated), so a write
  // whose blob would be larger throws StoreErrc::full and stores nothing. Set it above the
  // largest blob the filter options make (a full window; during a change of options a
  // user's blob holds both filters). At least a new user's empty filter.
  std::uint64_t max_blob_bytes = std::uint64_t{64} << 20;
  // Locks that serialise calls for one user. Range [1, 1 << 20].
  std::size_t lock_stripes = 1024;
  // Compare-and-set attempts per write before StoreErrc::conflict. Range [1, 1000].
  int max_retries = 32;
  // Time source of slice lifetimes and policy transitions; null: the system clock.
  // Must outlive the store.
  const Clock* clock = nullptr;
  // A user whose stored filter has other options than `filter` is moved over on their
  // next write: a TransitionFilter answers from both filters and writes to the new one
  // for this long, then the old one is dropped. Range: [0, 100 years].
  std::chrono::seconds transition_period = std::chrono::hours(24 * 7);
};

struct SeenStoreStats {
  std::uint64_t users_cached = 0;       // blobs the backend holds in memory now
  std::uint64_t bytes_held = 0;         // their bytes (memory backend's budget usage)
  std::uint64_t loads = 0;              // user blobs read from the backend
  std::uint64_t stores = 0;             // user blobs written to it
  std::uint64_t conflicts_retried = 0;  // writes repeated after a version conflict
  std::uint64_t corrupt_blobs = 0;      // blobs that failed their checks (once a call, on
                                        //   whichever attempt of a write first met one)
  BackendStats backend;                 // the backend's own counters
};

// A user: a string, or a 64-bit id (stored under its decimal digits, so user 42 and
// user "42" are the same user).
class UserKey {
 public:
  UserKey(std::string_view name) : key_(name) {}  // NOLINT: implicit on purpose
  UserKey(const std::string& name) : key_(name) {}  // NOLINT
  UserKey(const char* name) : key_(name) {}         // NOLINT
  UserKey(std::uint64_t id) : key_(std::to_string(id)) {}  // NOLINT
  const std::string& str() const noexcept { return key_; }

 private:
  std::string key_;
};

class SeenStore {
 public:
  // Throws std::invalid_argument when an option is out of range.
  explicit SeenStore(SeenStoreOptions options = {});
  SeenStore(const SeenStore&) = delete;
  SeenStore& operator=(const SeenStore&) = delete;

  // The candidates the user has not seen, in their order (duplicates kept). A user
  // never written has seen nothing. Reads only (one backend read).
  std::vector<std::uint64_t> filter_unseen(const UserKey& user,
                                           std::span<const std::uint64_t> candidates);
  std::vector<std::string> filter_unseen(const UserKey& user,
                                         std::span<const std::string> candidates);

  // Records the items as seen (one read and one compare-and-set write, repeated on
  // conflict). Marking an item again refreshes it as recent (window mode).
  void mark_seen(const UserKey& user, std::span<const std::uint64_t> items);
  void mark_seen(const UserKey& user, std::span<const std::string> items);

  // Both in one step: the first `limit` candidates the user has not seen, in their
  // order and without duplicates, which are recorded as seen before the call returns.
  // One read and (when something was taken) one write.
  std::vector<std::uint64_t> take_unseen(
      const UserKey& user, std::span<const std::uint64_t> candidates,
      std::size_t limit = std::numeric_limits<std::size_t>::max());
  std::vector<std::string> take_unseen(
      const UserKey& user, std::span<const std::string> candidates,
      std::size_t limit = std::numeric_limits<std::size_t>::max());

  // Deletes the user's filter: they have seen nothing.
  void forget(const UserKey& user);

  // Writes buffered work through (memory backend in front of another store).
  void flush();

  SeenStoreStats stats() const;
  const SeenStoreOptions& options() const noexcept { return options_; }
  StoreBackend& backend() const noexcept { return *options_.backend; }

 private:
  template <class Item>
  std::vector<Item> filter_impl(const std::string& user, std::span<const Item> candidates);
  template <class Item>
  std::vector<Item> update_impl(const std::string& user, std::span<const Item> items,
                                bool take, std::size_t limit);
  void reset_corrupt(const std::string& user, std::uint64_t version, const std::string& why);
  [[noreturn]] void throw_corrupt(const std::string& user, const std::string& why) const;
  std::mutex& lock_for(const std::string& user);
  const Clock& clock() const noexcept {
    return options_.clock != nullptr ? *options_.clock : system_clock();
  }

  SeenStoreOptions options_;
  std::unique_ptr<std::mutex[]> locks_;
  std::atomic<std::uint64_t> loads_{0}, stores_{0}, conflicts_{0}, corrupt_{0};
};

}  // namespace segbloom
