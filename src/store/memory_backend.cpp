// segbloom store: the in-memory LRU blob store (see memory_backend.hpp).
#include "segbloom/memory_backend.hpp"

#include <atomic>
#include <functional>
#include <list>
#include <mutex>
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

  std::uint64_t cost() const { return key.size() + bytes.size() + kEntryOverheadBytes; }
};

struct Shard {
  std::mutex mutex;
  std::list<Entry> lru;  // most recently used first
  // Keys are views of Entry::key, which list nodes never move.
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index;
  std::uint64_t bytes = 0;
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
    std::lock_guard lock(shard.mutex);
    auto it = shard.index.find(key);
    if (it != shard.index.end()) {
      shard.lru.splice(shard.lru.begin(), shard.lru, it->second);
      visit(it->second->bytes, it->second->version);
      return true;
    }
    Entry* loaded = load(shard, key);
    if (loaded == nullptr) return false;
    visit(loaded->bytes, loaded->version);
    return true;
  }

  std::uint64_t write(std::string_view key, std::string_view bytes,
                      std::uint64_t expected) override {
    Shard& shard = shard_of(key);
    std::lock_guard lock(shard.mutex);
    auto it = shard.index.find(key);
    Entry* entry = nullptr;
    if (it != shard.index.end()) {
      entry = &*it->second;
      shard.lru.splice(shard.lru.begin(), shard.lru, it->second);
    } else {
      // Not in memory: evicted since the caller read it, or never read. The backing
      // store's version decides; standalone, an absent key has version 0.
      entry = load(shard, key);
    }
    const std::uint64_t current = entry == nullptr ? 0 : entry->version;
    if (current != expected) {
      write_conflicts_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    if (entry == nullptr) {
      shard.lru.push_front(Entry{std::string(key), {}, 0, 0, false});
      entry = &shard.lru.front();
      shard.index.emplace(entry->key, shard.lru.begin());
      shard.bytes += entry->cost();
    }
    shard.bytes -= entry->cost();
    entry->bytes.assign(bytes);
    shard.bytes += entry->cost();
    entry->version = store_detail::new_version_token();
    entry->dirty = backing_ != nullptr;
    writes_.fetch_add(1, std::memory_order_relaxed);
    const std::uint64_t version = entry->version;
    evict(shard);
    return version;
  }

  void remove(std::string_view key) override {
    Shard& shard = shard_of(key);
    std::lock_guard lock(shard.mutex);
    // The backing store first: if it fails, the blob stays in memory, dirty, unchanged.
    if (backing_) backing_->remove(key);
    auto it = shard.index.find(key);
    if (it != shard.index.end()) drop(shard, it->second);
  }

  // Writes every dirty blob back. One that fails (an error of the backing store, or
  // kWriteBackAttempts conflicts) does not stop the others: the first failure is thrown
  // at the end, the blobs that failed stay dirty in memory.
  void flush() override {
    std::optional<StoreError> failed;
    for (Shard& shard : shards_) {
      std::lock_guard lock(shard.mutex);
      for (Entry& entry : shard.lru) {
        if (!entry.dirty) continue;
        try {
          if (!write_back(entry) && !failed) failed.emplace(refused(entry));
        } catch (const StoreError& e) {
          if (!failed) failed.emplace(e);
        }
      }
    }
    if (backing_) backing_->flush();
    if (failed) throw *failed;
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

  // Loads `key` from the backing store into the shard (most recently used) and
  // returns it; null when there is no backing store or it does not hold the key.
  Entry* load(Shard& shard, std::string_view key) {
    if (!backing_) return nullptr;
    bool found = backing_->read(key, [&](std::string_view bytes, std::uint64_t version) {
      shard.lru.push_front(Entry{std::string(key), std::string(bytes), version, version, false});
    });
    if (!found) return nullptr;
    backing_loads_.fetch_add(1, std::memory_order_relaxed);
    Entry& entry = shard.lru.front();
    shard.index.emplace(entry.key, shard.lru.begin());
    shard.bytes += entry.cost();
    evict(shard);  // keeps `entry`, though blobs it could not write back may now stand before it
    return &entry;
  }

  // Drops least recently used blobs, writing dirty ones back, until the shard fits its
  // budget; the most recently used blob always stays (once it is the last, only the blobs
  // moved to the front stand before it, and the loop stops). A write-back the backing store
  // keeps refusing (kWriteBackAttempts conflicts) leaves its blob in memory, moved to the
  // front so that the next evictions do not retry it at once (the budget is exceeded
  // meanwhile); flush() reports it. An error of the backing store (unavailable, I/O)
  // leaves the blob so too and ends this call's evictions, as the next write-backs would
  // most likely wait and fail alike: the caller's own read or write, which has already
  // happened, never fails for another key's write-back (the budget is exceeded until a
  // later call succeeds; flush() reports the error).
  void evict(Shard& shard) {
    std::size_t kept = 0;  // refused blobs moved to the front in this call
    while (shard.bytes > shard_budget_ && shard.lru.size() > 1 + kept) {
      auto last = std::prev(shard.lru.end());
      bool failed = false;
      bool landed = true;
      if (last->dirty) {
        try {
          landed = write_back(*last);
        } catch (const StoreError&) {
          failed = true;
        }
      }
      if (failed || !landed) {
        shard.lru.splice(shard.lru.begin(), shard.lru, last);  // iterators, and so the index, stay valid
        ++kept;
        if (failed) return;
        continue;
      }
      drop(shard, last);
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  void drop(Shard& shard, std::list<Entry>::iterator it) {
    shard.bytes -= it->cost();
    shard.index.erase(it->key);
    shard.lru.erase(it);
  }

  // Writes a dirty blob to the backing store under the version it was loaded with;
  // true when it landed. If another writer changed the key meanwhile (outside this
  // cache's contract), the cached blob still wins: it is written over the newer version
  // and the conflict is counted. A backing store that keeps refusing (writers racing on
  // the key, or a version it reports but never matches) makes it give up after
  // kWriteBackAttempts tries and return false, the blob still dirty, rather than loop for
  // ever under the shard's lock (as it did until 1 Dec 2026).
  static constexpr int kWriteBackAttempts = 64;
  bool write_back(Entry& entry) {
    std::uint64_t expected = entry.backing_version;
    for (int attempt = 1;; ++attempt) {
      const std::uint64_t stored = backing_->write(entry.key, entry.bytes, expected);
      if (stored != 0) {
        // entry.version stays: a caller between its read and its write is not disturbed
        // by a flush. After eviction the next load shows the backing version instead,
        // and such a caller retries once.
        entry.backing_version = stored;
        entry.dirty = false;
        backing_stores_.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
      write_conflicts_.fetch_add(1, std::memory_order_relaxed);
      if (attempt == kWriteBackAttempts) return false;
      expected = 0;
      backing_->read(entry.key, [&](std::string_view, std::uint64_t version) { expected = version; });
    }
  }

  StoreError refused(const Entry& entry) const {
    return StoreError(StoreErrc::conflict, "segbloom: writing '" + entry.key + "' back to " + backing_->name() +
                                               " still conflicted after " + std::to_string(kWriteBackAttempts) +
                                               " attempts; it stays in memory");
  }

  std::shared_ptr<StoreBackend> backing_;
  mutable std::vector<Shard> shards_;
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
