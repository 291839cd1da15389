// segbloom store: SeenStore (see seen_store.hpp).
#include "segbloom/seen_store.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

#include "segbloom/filter_view.hpp"
#include "segbloom/memory_backend.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "segbloom/serialization.hpp"
#include "segbloom/transition_filter.hpp"
#include "segbloom/transition_serialization.hpp"
#include "segbloom/transition_view.hpp"

namespace segbloom {
namespace {

using Filter = ScalableBloomFilter;
// A user in the middle of a change of options (SeenStoreOptions::transition_period).
using Pair = TransitionFilter<Filter>;

// The candidates a view does not report, in order; asked a batch at a time
// (contains_many), which hashes several keys at once and asks each slice for a group.
template <class View, class Item>
void collect_unseen(const View& view, std::span<const Item> candidates, std::vector<Item>& unseen) {
  unseen.reserve(candidates.size());
  constexpr std::size_t kBatch = 256;
  bool found[kBatch];
  for (std::size_t start = 0; start < candidates.size(); start += kBatch) {
    const std::span<const Item> batch = candidates.subspan(start, std::min(kBatch, candidates.size() - start));
    view.contains_many(batch, std::span<bool>(found, batch.size()));
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!found[i]) unseen.push_back(batch[i]);
    }
  }
}

SeenStoreOptions checked(SeenStoreOptions options) {
  validate(options.filter);
  if (options.lock_stripes < 1 || options.lock_stripes > (std::size_t{1} << 20)) {
    throw std::invalid_argument("segbloom: SeenStoreOptions::lock_stripes must be in [1, 2^20]");
  }
  if (options.max_retries < 1 || options.max_retries > 1000) {
    throw std::invalid_argument("segbloom: SeenStoreOptions::max_retries must be in [1, 1000]");
  }
  if (options.transition_period < std::chrono::seconds{0} ||
      options.transition_period > kMaxTransitionPeriod) {
    throw std::invalid_argument(
        "segbloom: SeenStoreOptions::transition_period must be in [0, 100 years]");
  }
  // Writes never store a blob past the limit (reads would take it for corrupt), so a new
  // user's empty filter must fit, or no user could ever be written (nor a corrupt one reset).
  const std::uint64_t empty_filter = to_bytes(Filter(options.filter)).size();  // the same on any clock
  if (options.max_blob_bytes < empty_filter) {
    throw std::invalid_argument("segbloom: SeenStoreOptions::max_blob_bytes (" + std::to_string(options.max_blob_bytes) +
                                ") is smaller than a new user's empty filter (" + std::to_string(empty_filter) +
                                " bytes)");
  }
  if (!options.backend) options.backend = make_memory_backend();
  return options;
}

// After the n-th conflict in a row, sleep a random time in [0, 50 us * 2^n), at most
// 5 ms: writers that collided spread out instead of colliding again in lockstep.
void back_off(int conflicts) {
  thread_local std::minstd_rand rng(std::random_device{}());
  const long long ceiling = std::min<long long>(50LL << std::min(conflicts, 7), 5000);
  std::this_thread::sleep_for(std::chrono::microseconds(rng() % static_cast<unsigned>(ceiling)));
}

}  // namespace

Options default_seen_filter_options() {
  Options o;
  o.capacity = 10'000;
  o.max_slices = 8;
  o.false_positive_rate = 0.001;
  return o;
}

SeenStore::SeenStore(SeenStoreOptions options)
    : options_(checked(std::move(options))),
      locks_(std::make_unique<std::mutex[]>(options_.lock_stripes)) {}

std::mutex& SeenStore::lock_for(const std::string& user) {
  return locks_[std::hash<std::string>{}(user) % options_.lock_stripes];
}

// --- Reads: straight from the stored bytes ------------------------------------------

template <class Item>
std::vector<Item> SeenStore::filter_impl(const std::string& user, std::span<const Item> candidates) {
  std::lock_guard lock(lock_for(user));
  std::vector<Item> unseen;
  std::optional<std::string> corrupt;  // why, when the blob failed its checks
  std::uint64_t corrupt_version = 0;
  const bool found = options_.backend->read(user, [&](std::string_view bytes, std::uint64_t version) {
    try {
      if (bytes.size() > options_.max_blob_bytes) {
        throw FormatError("segbloom: blob of " + std::to_string(bytes.size()) +
                          " bytes exceeds max_blob_bytes");
      }
      const LoadLimits limits{options_.max_blob_bytes};
      // A plain filter, or a pair while the user moves to new options.
      const std::uint8_t kind = envelope::read_header(bytes, 0, limits).kind;
      if (kind == FilterKind<Pair>::id) {
        collect_unseen(TransitionView(bytes, limits, clock()), candidates, unseen);
      } else if (kind == FilterKind<Filter>::id) {
        collect_unseen(FilterView(bytes, limits, clock()), candidates, unseen);
      } else {
        throw FormatError("segbloom: stored filter is a " + std::string(kind_name(kind)) +
                          ", not a ScalableBloomFilter or a transition of one");
      }
    } catch (const FormatError& e) {
      corrupt = e.what();
      corrupt_version = version;
    }
  });
  if (!found) return {candidates.begin(), candidates.end()};
  loads_.fetch_add(1, std::memory_order_relaxed);
  if (corrupt) {
    reset_corrupt(user, corrupt_version, *corrupt);  // or throws, by policy
    return {candidates.begin(), candidates.end()};
  }
  return unseen;
}

// --- Writes: load, insert, compare-and-set, retry -----------------------------------

template <class Item>
std::vector<Item> SeenStore::update_impl(const std::string& user, std::span<const Item> items,
                                         bool take, std::size_t limit) {
  std::lock_guard lock(lock_for(user));
  bool corrupt_counted = false;
  for (int attempt = 1;; ++attempt) {
    std::optional<Pair> filter;
    std::optional<std::string> corrupt;
    std::uint64_t version = 0;
    const bool found = options_.backend->read(user, [&](std::string_view bytes, std::uint64_t v) {
      version = v;
      try {
        if (bytes.size() > options_.max_blob_bytes) {
          throw FormatError("segbloom: blob of " + std::to_string(bytes.size()) +
                            " bytes exceeds max_blob_bytes");
        }
        const LoadLimits limits{options_.max_blob_bytes};
        if (envelope::read_header(bytes, 0, limits).kind == FilterKind<Pair>::id) {
          filter.emplace(from_bytes<Pair>(bytes, limits, clock()));
        } else {
          Filter plain = from_bytes<Filter>(bytes, limits);
          plain.set_clock(clock());
          filter.emplace(std::move(plain), clock());
        }
      } catch (const FormatError& e) {
        corrupt = e.what();
      }
    });
    if (found) loads_.fetch_add(1, std::memory_order_relaxed);
    if (corrupt) {
      // Counted once per call, not once per retry of the same blob, but also when only a
      // retry meets it: a blob another writer stored after the first read (until 4 Dec 2026
      // only the first attempt counted).
      if (!std::exchange(corrupt_counted, true)) corrupt_.fetch_add(1, std::memory_order_relaxed);
      if (options_.on_corrupt == CorruptBlobPolicy::throw_error) throw_corrupt(user, *corrupt);
      // reset: build on an empty filter, written over the bad blob (its version).
    }
    if (!filter) filter.emplace(options_.filter, clock());
    // Lazy move to new options: the stored filter keeps answering for the transition
    // period while the new one takes this write and every later one. A user already in
    // a transition finishes it first (with the options it is moving to).
    filter->finish_if_due();
    // A user keeps the seed their filter was made with: one hash serves both filters of a
    // transition, so a new SeenStoreOptions::filter.seed applies to new users only.
    Options target = options_.filter;
    target.seed = filter->options().seed;
    if (!filter->in_transition() && filter->options() != target) {
      filter->change_options(target, options_.transition_period);
    }

    std::vector<Item> taken;
    try {
      if (take) {
        for (const Item& c : items) {
          if (taken.size() >= limit) break;
          // Test-and-set: false when seen, or a duplicate just taken.
          if (filter->insert(c)) taken.push_back(c);
        }
      } else {
        for (const Item& id : items) filter->insert(id);
      }
    } catch (const std::length_error& e) {  // a growing filter at 64 slices: nothing was stored
      throw StoreError(StoreErrc::full, "segbloom: the stored filter of user '" + user +
                                            "' takes no more items: " + e.what());
    }
    if (take && taken.empty() && !corrupt) return taken;  // nothing to record

    // A pair is stored only while the transition lasts; otherwise the plain filter.
    const std::string blob = filter->in_transition() ? to_bytes(*filter) : to_bytes(filter->current());
    // Reads refuse a blob past the limit as corrupt (and, by default, reset the user).
    if (blob.size() > options_.max_blob_bytes) {
      throw StoreError(StoreErrc::full, "segbloom: the stored filter of user '" + user + "' would take " +
                                            std::to_string(blob.size()) + " bytes, more than max_blob_bytes (" +
                                            std::to_string(options_.max_blob_bytes) + "); nothing was stored");
    }
    if (options_.backend->write(user, blob, version) != 0) {
      stores_.fetch_add(1, std::memory_order_relaxed);
      return taken;
    }
    // Another writer (another server, or this cache's eviction) changed the user since
    // the read: read again and re-apply; inserts are idempotent.
    if (attempt >= options_.max_retries) {
      throw StoreError(StoreErrc::conflict,
                       "segbloom: user '" + user + "' still changed by other writers after " +
                           std::to_string(attempt) + " attempts");
    }
    conflicts_.fetch_add(1, std::memory_order_relaxed);
    back_off(attempt);
  }
}

void SeenStore::reset_corrupt(const std::string& user, std::uint64_t version,
                              const std::string& why) {
  corrupt_.fetch_add(1, std::memory_order_relaxed);
  if (options_.on_corrupt == CorruptBlobPolicy::throw_error) throw_corrupt(user, why);
  // Replace the bad blob by an empty filter, unless another writer already replaced it.
  if (options_.backend->write(user, to_bytes(Filter(options_.filter, clock())), version) != 0) {
    stores_.fetch_add(1, std::memory_order_relaxed);
  }
}

void SeenStore::throw_corrupt(const std::string& user, const std::string& why) const {
  throw StoreError(StoreErrc::corrupt, "segbloom: stored filter of user '" + user +
                                           "' in " + options_.backend->name() +
                                           " is corrupt: " + why);
}

// --- Public overloads -----------------------------------------------------------

std::vector<std::uint64_t> SeenStore::filter_unseen(const UserKey& user,
                                                    std::span<const std::uint64_t> candidates) {
  return filter_impl(user.str(), candidates);
}

std::vector<std::string> SeenStore::filter_unseen(const UserKey& user,
                                                  std::span<const std::string> candidates) {
  return filter_impl(user.str(), candidates);
}

void SeenStore::mark_seen(const UserKey& user, std::span<const std::uint64_t> items) {
  if (!items.empty()) update_impl(user.str(), items, false, 0);
}

void SeenStore::mark_seen(const UserKey& user, std::span<const std::string> items) {
  if (!items.empty()) update_impl(user.str(), items, false, 0);
}

std::vector<std::uint64_t> SeenStore::take_unseen(const UserKey& user,
                                                  std::span<const std::uint64_t> candidates,
                                                  std::size_t limit) {
  if (candidates.empty() || limit == 0) return {};
  return update_impl(user.str(), candidates, true, limit);
}

std::vector<std::string> SeenStore::take_unseen(const UserKey& user,
                                                std::span<const std::string> candidates,
                                                std::size_t limit) {
  if (candidates.empty() || limit == 0) return {};
  return update_impl(user.str(), candidates, true, limit);
}

void SeenStore::forget(const UserKey& user) {
  std::lock_guard lock(lock_for(user.str()));
  options_.backend->remove(user.str());
}

void SeenStore::flush() { options_.backend->flush(); }

SeenStoreStats SeenStore::stats() const {
  SeenStoreStats s;
  s.backend = options_.backend->stats();
  s.users_cached = s.backend.entries;
  s.bytes_held = s.backend.bytes;
  s.loads = loads_.load(std::memory_order_relaxed);
  s.stores = stores_.load(std::memory_order_relaxed);
  s.conflicts_retried = conflicts_.load(std::memory_order_relaxed);
  s.corrupt_blobs = corrupt_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace segbloom
