// segbloom store: the in-memory LRU blob store (see memory_backend.hpp).
#include "segbloom/memory_backend.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "version_token.hpp"

namespace segbloom {
namespace {

struct Entry {
  std::string key;
  std::string bytes;
  std::uint64_t version = 0;          // the version callers see
  std::uint64_t backing_version = 0;  // the backing store's version when last loaded/written
  bool dirty = false;                 // changed since it was loaded or written back
  bool writing_back = false;          // a copy is being written back without the shard's lock
  bool removing = false;              // being removed from the backing store without the lock

  std::uint64_t cost() const { return key.size() + bytes.size() + kEntryOverheadBytes; }
};

struct Shard {
  std::mutex mutex;
  std::condition_variable settled;  // a load, write-back or removal of this shard ended
  std::list<Entry> lru;  // most recently used first
  // Keys are views of Entry::key, which list nodes never move.
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index;
  // Keys not in `index` that the backing store is loading or removing without the lock
  // (few at a time). A key is never both here and in `index`: its other calls wait until
  // the store's call ends.
  std::vector<std::string> in_flight;
  std::uint64_t bytes = 0;

  bool is_in_flight(std::string_view key) const {
    return std::find(in_flight.begin(), in_flight.end(), key) != in_flight.end();
  }
  void end_in_flight(std::string_view key) {
    in_flight.erase(std::find(in_flight.begin(), in_flight.end(), key));
    settled.notify_all();
  }
};

class MemoryBackend final : public StoreBackend {
 public:
  explicit MemoryBackend(MemoryBackendOptions options)
      : backing_(std::move(options.backing)),
        shards_(options.shards),
        shard_budget_(options.byte_budget / options.shards) {}

  ~MemoryBackend() override {
    // A destructor cannot report a failure; call flush() first to see errors.
    try {
      flush();
    } catch (...) {
    }
  }

  bool read(std::string_view key, Visitor visit) override {
    reads_.fetch_add(1, std::memory_order_relaxed);
    Shard& shard = shard_of(key);
    std::unique_lock lock(shard.mutex);
    bool loaded = false;
    const Entry* entry = find_or_load(lock, shard, key, loaded);
    if (entry != nullptr) visit(entry->bytes, entry->version);
    // Only a load adds bytes: a hit never waits for a write-back (of a shard left over its
    // budget by a failing store, say).
    if (loaded) evict(lock, shard);
    return entry != nullptr;
  }

  std::uint64_t write(std::string_view key, std::string_view bytes,
                      std::uint64_t expected) override {
    Shard& shard = shard_of(key);
    std::unique_lock lock(shard.mutex);
    // Not in memory: evicted since the caller read it, or never read. The backing
    // store's version decides; standalone, an absent key has version 0.
    bool loaded = false;
    Entry* entry = find_or_load(lock, shard, key, loaded);
    const std::uint64_t current = entry == nullptr ? 0 : entry->version;
    if (current != expected) {
      write_conflicts_.fetch_add(1, std::memory_order_relaxed);
      if (loaded) evict(lock, shard);
      return 0;
    }
    // The copy first: a bad_alloc leaves the shard as it was (until 2 Dec 2026 it left a
    // new key's entry empty with version 0, and the byte count short).
    std::string copy(bytes);
    if (entry == nullptr) {
      entry = &link_front(shard, Entry{std::string(key), std::move(copy), 0, 0, false});
    } else {
      shard.bytes -= entry->cost();
      entry->bytes = std::move(copy);
      shard.bytes += entry->cost();
    }
    entry->version = store_detail::new_version_token();
    entry->dirty = backing_ != nullptr;
    writes_.fetch_add(1, std::memory_order_relaxed);
    const std::uint64_t version = entry->version;
    evict(lock, shard);
    return version;
  }

  // Waits for a load, write-back or removal of the key in flight (the first two would
  // store or cache the key again after the removal), then removes it from the backing
  // store without the shard's lock (until 2 Dec 2026 under it: a hung store held up the
  // shard's other keys until it timed out); the key's other calls wait for it. The
  // backing store first: if it fails, the blob stays in memory with its bytes, version and
  // dirty state (evictions meanwhile may have moved it to the front of the LRU list).
  void remove(std::string_view key) override {
    Shard& shard = shard_of(key);
    std::unique_lock lock(shard.mutex);
    shard.settled.wait(lock, [&] {
      auto it = shard.index.find(key);
      return it == shard.index.end() ? !shard.is_in_flight(key)
                                     : !it->second->writing_back && !it->second->removing;
    });
    // A list iterator, valid across the unlock (an index iterator is not: a rehash).
    const auto found = shard.index.find(key);
    const bool cached = found != shard.index.end();
    const std::list<Entry>::iterator entry = cached ? found->second : shard.lru.end();
    if (backing_) {
      // Marked, the cached entry stays put (evict() passes it over, flush_one() waits), and
      // an uncached key's calls wait in find_or_load().
      if (cached) {
        entry->removing = true;
      } else {
        shard.in_flight.emplace_back(key);
      }
      lock.unlock();
      const auto end_remove = [&] {
        lock.lock();
        if (cached) {
          entry->removing = false;
          shard.settled.notify_all();
        } else {
          shard.end_in_flight(key);
        }
      };
      try {
        backing_->remove(key);
      } catch (...) {
        end_remove();
        throw;
      }
      end_remove();
    }
    if (cached) drop(shard, entry);
  }

  // Writes every dirty blob back, each from a copy taken under its shard's lock and
  // written without it (flush_one), so that the shard's reads and writes go on meanwhile
  // (until 2 Dec 2026 the lock was held throughout: with a hung store, for minutes). A
  // blob the backing store refuses (kWriteBackAttempts conflicts) does not stop the
  // others, nor does an I/O error (StoreErrc::io: one key's, such as a Redis key of
  // another type); the first of them is thrown at the end. A store that is unavailable or
  // timed out ends the flush at once, as it ends evict(): the next write-backs would most
  // likely wait and fail alike. Each flush starts at the shard after the one the last
  // began with, so a shard's failures do not keep the others' blobs waiting. Blobs not
  // written back stay dirty in memory.
  void flush() override {
    std::lock_guard one_flush_at_a_time(flush_mutex_);
    std::optional<StoreError> first_error;
    const std::size_t start = next_flush_shard_;
    next_flush_shard_ = (start + 1) % shards_.size();
    for (std::size_t i = 0; i < shards_.size(); ++i) {
      Shard& shard = shards_[(start + i) % shards_.size()];
      for (const std::string& key : dirty_keys(shard)) {
        try {
          if (!flush_one(shard, key) && !first_error) first_error.emplace(refused(key));
        } catch (const StoreError& e) {
          if (e.code() == StoreErrc::unavailable || e.code() == StoreErrc::timeout) throw;
          if (!first_error) first_error.emplace(e);
        }
      }
    }
    if (backing_) backing_->flush();
    if (first_error) throw *first_error;
  }

  BackendStats stats() const override {
    BackendStats s;
    for (Shard& shard : shards_) {
      std::lock_guard lock(shard.mutex);
      s.entries += shard.lru.size();
      s.bytes += shard.bytes;
    }
    s.reads = reads_.load(std::memory_order_relaxed);
    s.writes = writes_.load(std::memory_order_relaxed);
    s.write_conflicts = write_conflicts_.load(std::memory_order_relaxed);
    s.backing_loads = backing_loads_.load(std::memory_order_relaxed);
    s.backing_stores = backing_stores_.load(std::memory_order_relaxed);
    s.evictions = evictions_.load(std::memory_order_relaxed);
    return s;
  }

  std::string name() const override {
    return backing_ ? "memory+" + backing_->name() : std::string("memory");
  }

 private:
  Shard& shard_of(std::string_view key) const {
    return shards_[std::hash<std::string_view>{}(key) % shards_.size()];
  }

  // The entry of `key`, made most recently used; not in memory, loaded from the backing
  // store without the shard's lock (`lock` holds it again on return), so the shard's other
  // keys are served meanwhile, however slow the store (until 2 Dec 2026 a hung store held
  // the shard for its timeout). Other calls for the key wait for its load. Null when
  // there is no backing store or it does not hold the key; throws its errors. Calls for a
  // key being removed wait for the removal.
  // `loaded`: set when the entry was loaded here.
  Entry* find_or_load(std::unique_lock<std::mutex>& lock, Shard& shard, std::string_view key, bool& loaded) {
    for (;;) {
      if (auto it = shard.index.find(key); it != shard.index.end()) {
        if (!it->second->removing) {
          shard.lru.splice(shard.lru.begin(), shard.lru, it->second);
          return &*it->second;
        }
      } else if (!backing_ || !shard.is_in_flight(key)) {
        break;
      }
      shard.settled.wait(lock);
    }
    if (!backing_) return nullptr;
    shard.in_flight.emplace_back(key);
    lock.unlock();
    std::optional<Entry> stored;
    const auto end_load = [&] {
      lock.lock();
      shard.end_in_flight(key);
    };
    try {
      backing_->read(key, [&](std::string_view bytes, std::uint64_t version) {
        stored.emplace(Entry{std::string(key), std::string(bytes), version, version, false});
      });
    } catch (...) {
      end_load();
      throw;
    }
    end_load();
    if (!stored) return nullptr;
    backing_loads_.fetch_add(1, std::memory_order_relaxed);
    loaded = true;
    return &link_front(shard, std::move(*stored));
  }

  // Adds `entry` (a key not in the shard) as the most recently used, or nothing if that
  // throws (bad_alloc: an entry in the list but not in the index would later be dropped
  // in place of the key's next one, until 2 Dec 2026).
  Entry& link_front(Shard& shard, Entry&& entry) {
    shard.lru.push_front(std::move(entry));
    try {
      shard.index.emplace(shard.lru.front().key, shard.lru.begin());
    } catch (...) {
      shard.lru.pop_front();
      throw;
    }
    shard.bytes += shard.lru.front().cost();
    return shard.lru.front();
  }

  // Drops least recently used blobs until the shard fits its budget, writing dirty ones
  // back first, each from a copy without the shard's lock (as flush() does; until 2 Dec
  // 2026 under it); a blob written again meanwhile stays, dirty. At least one blob always
  // stays: the loop stops once only the blobs it moved to the front are left besides the
  // first. A write-back the backing store keeps refusing (kWriteBackAttempts conflicts)
  // leaves its blob in memory, moved to the front so that the next evictions do not retry
  // it at once (the budget is exceeded meanwhile); flush() reports it. A blob being written
  // back or removed by another call is passed over the same way. An error of the backing store
  // (unavailable, I/O, or no memory for the copy) leaves the blob so too and ends this
  // call's evictions, as the next write-backs would most likely wait and fail alike: the
  // caller's own read or write, which has already happened, never fails for another key's
  // write-back (the budget is exceeded until a later call succeeds; flush() reports the
  // error).
  void evict(std::unique_lock<std::mutex>& lock, Shard& shard) {
    std::size_t kept = 0;  // blobs moved to the front in this call
    while (shard.bytes > shard_budget_ && shard.lru.size() > 1 + kept) {
      auto last = std::prev(shard.lru.end());
      if (!last->writing_back && !last->removing && !last->dirty) {
        drop(shard, last);
        evictions_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      bool failed = false;
      if (!last->writing_back && !last->removing) {
        try {
          write_back_unlocked(lock, shard, *last);  // `last` stays valid: see end_write_back
        } catch (const StoreError&) {
          failed = true;
        } catch (const std::bad_alloc&) {
          failed = true;
        }
        // Written back and not changed meanwhile: clean, dropped at its turn (now, unless
        // another call used it meanwhile).
        if (!failed && !last->dirty && !last->writing_back && !last->removing) continue;
      }
      shard.lru.splice(shard.lru.begin(), shard.lru, last);  // iterators, and so the index, stay valid
      ++kept;
      if (failed) return;
    }
  }

  void drop(Shard& shard, std::list<Entry>::iterator it) {
    shard.bytes -= it->cost();
    shard.index.erase(it->key);
    shard.lru.erase(it);
  }

  std::vector<std::string> dirty_keys(Shard& shard) {
    std::lock_guard lock(shard.mutex);
    std::vector<std::string> keys;
    for (const Entry& entry : shard.lru) {
      if (entry.dirty) keys.push_back(entry.key);
    }
    return keys;
  }

  // flush()'s write-back of one key, once any other write-back of it in flight has ended.
  // False when the backing store refused it; throws its errors.
  bool flush_one(Shard& shard, const std::string& key) {
    std::unique_lock lock(shard.mutex);
    for (;;) {
      auto it = shard.index.find(key);
      if (it == shard.index.end() || !it->second->dirty) return true;  // written back since, by evict()
      if (!it->second->writing_back && !it->second->removing) {
        return write_back_unlocked(lock, shard, *it->second) != 0;
      }
      shard.settled.wait(lock);
    }
  }

  // Writes `entry` (dirty, not being written back) back from a copy taken under the shard's
  // lock (`lock`), written without it; `lock` holds it again on return, also by exception.
  // The entry is marked clean only if nobody wrote it meanwhile (its version is the copy's);
  // otherwise it stays dirty, and the next write-back expects the version just stored.
  // While the copy is in flight, evict() passes the entry over, flush_one() and remove()
  // wait, so no other write-back or removal of the key lands under it and the entry stays
  // where it is in memory. Returns the backing store's version, 0 when it refused the copy.
  std::uint64_t write_back_unlocked(std::unique_lock<std::mutex>& lock, Shard& shard, Entry& entry) {
    const Entry copy = entry;  // may throw (bad_alloc) before anything is marked
    entry.writing_back = true;
    lock.unlock();
    std::uint64_t stored = 0;
    try {
      stored = write_back(copy);
    } catch (...) {
      end_write_back(lock, shard, entry, copy, 0);
      throw;
    }
    end_write_back(lock, shard, entry, copy, stored);
    return stored;
  }

  // `stored`: the backing store's version of the copy, 0 when it was not written.
  void end_write_back(std::unique_lock<std::mutex>& lock, Shard& shard, Entry& entry, const Entry& copy,
                      std::uint64_t stored) {
    lock.lock();
    entry.writing_back = false;
    if (stored != 0) {
      entry.backing_version = stored;
      if (entry.version == copy.version) entry.dirty = false;
    }
    shard.settled.notify_all();
  }

  // Writes a dirty blob to the backing store under the version it was loaded with and
  // returns the version it got there; 0 when refused. If another writer changed the key
  // meanwhile (outside this cache's contract), the cached blob still wins: it is written
  // over the newer version and the conflict is counted. A backing store that keeps
  // refusing (writers racing on the key, or a version it reports but never matches) makes
  // it give up after kWriteBackAttempts tries and return 0, the blob still dirty, rather
  // than loop for ever (as it did until 1 Dec 2026, under the shard's lock).
  // entry.version is not changed: a caller between its read and its write is not
  // disturbed by a write-back. After eviction the next load shows the backing version
  // instead, and such a caller retries once.
  static constexpr int kWriteBackAttempts = 64;
  std::uint64_t write_back(const Entry& entry) {
    std::uint64_t expected = entry.backing_version;
    for (int attempt = 1;; ++attempt) {
      const std::uint64_t stored = backing_->write(entry.key, entry.bytes, expected);
      if (stored != 0) {
        backing_stores_.fetch_add(1, std::memory_order_relaxed);
        return stored;
      }
      write_conflicts_.fetch_add(1, std::memory_order_relaxed);
      if (attempt == kWriteBackAttempts) return 0;
      expected = 0;
      backing_->read(entry.key, [&](std::string_view, std::uint64_t version) { expected = version; });
    }
  }

  StoreError refused(const std::string& key) const {
    return StoreError(StoreErrc::conflict, "segbloom: writing '" + key + "' back to " + backing_->name() +
                                               " still conflicted after " + std::to_string(kWriteBackAttempts) +
                                               " attempts; it stays in memory");
  }

  std::shared_ptr<StoreBackend> backing_;
  mutable std::vector<Shard> shards_;
  std::mutex flush_mutex_;  // one flush() at a time: each write-back is in flight once
  std::size_t next_flush_shard_ = 0;  // under flush_mutex_
  std::uint64_t shard_budget_;
  std::atomic<std::uint64_t> reads_{0}, writes_{0}, write_conflicts_{0}, backing_loads_{0},
      backing_stores_{0}, evictions_{0};
};

}  // namespace

std::shared_ptr<StoreBackend> make_memory_backend(MemoryBackendOptions options) {
  if (options.byte_budget == 0) {
    throw std::invalid_argument("segbloom: MemoryBackendOptions::byte_budget must be > 0");
  }
  if (options.shards < 1 || options.shards > 4096) {
    throw std::invalid_argument("segbloom: MemoryBackendOptions::shards must be in [1, 4096]");
  }
  return std::make_shared<MemoryBackend>(std::move(options));
}

}  // namespace segbloom
