// segbloom: an in-memory blob store with least-recently-used eviction under a byte
// budget, standalone or as a write-back cache in front of another backend.
//
//   auto disk = segbloom::make_leveldb_backend({.path = "/var/lib/app/seen"});
//   auto cache = segbloom::make_memory_backend({.byte_budget = 256 << 20, .backing = disk});
//
// In front of a backing store (write-back):
//   - read() of a key not in memory loads it from the backing store and keeps it;
//   - write() changes only the copy in memory and marks it dirty;
//   - a dirty blob reaches the backing store when it is evicted, at flush(), and when
//     the backend is destroyed. Work since the last flush is what a crash (SIGKILL,
//     power loss) can lose; call flush() as often as that loss must be bounded.
//   - The backing store is never called under the shard's lock: a miss's load, the
//     write-back of each dirty blob (from a copy) by eviction and by flush(), and
//     remove(). Reads and writes of the shard's cached users go on meanwhile, however
//     slow the store; calls for the key itself wait for its load or removal, and a blob
//     written again during its write-back stays dirty. A call that evicts waits for its
//     own write-backs: a write (or a miss's load) into a shard over its budget, which a
//     failed write-back can leave it, writes back its least recently used dirty blob
//     first; a read of a cached user never evicts. A removal that fails leaves the blob
//     in memory with its bytes, version and dirty state. A backing store that is
//     unavailable or timed out ends flush() at once, and that error is thrown; an I/O
//     error or refusal of one key does not stop the others, and the first is thrown at
//     the end. The blobs not written back stay dirty. Each flush() starts at the next
//     shard.
//   - The cache assumes it is the only writer of its keys in the backing store (true
//     for LevelDB, which one process owns; for Redis only when users are routed to
//     one server each). Writing back checks the version loaded; when another writer
//     changed the key meanwhile, the cached blob still wins (last writer wins) and
//     the event is counted in BackendStats::write_conflicts. A key the backing store
//     refuses 64 times in a row stays dirty in memory (eviction skips it for now) and
//     flush() throws StoreError(StoreErrc::conflict) for it. For a fleet of servers
//     sharing users, give SeenStore the Redis backend directly, without this cache.
// Standalone (no backing store): eviction forgets the blob for good; a user whose
// filter is evicted starts again from an empty filter. Size the budget for the
// working set, or give it a backing store.
//
// Budget: the sum over held blobs of their size plus kEntryOverheadBytes. The budget
// is split evenly over `shards` independent LRU lists (one lock each, so different
// keys rarely wait for each other); a blob larger than a shard's share is still held,
// alone, until the next blob of that shard arrives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "segbloom/store_backend.hpp"

namespace segbloom {

struct MemoryBackendOptions {
  // Bytes of blobs (plus per-entry overhead) kept in memory, over all shards. > 0.
  std::uint64_t byte_budget = std::uint64_t{64} << 20;
  // Store that evicted blobs are written to and missing blobs are loaded from; null:
  // none (standalone, eviction forgets).
  std::shared_ptr<StoreBackend> backing{};
  // Independent LRU lists, each with byte_budget / shards. Range [1, 4096].
  std::size_t shards = 16;
};

// Bookkeeping counted against the budget for each blob held (key, list and map nodes).
inline constexpr std::uint64_t kEntryOverheadBytes = 128;

// Throws std::invalid_argument when an option is out of range.
std::shared_ptr<StoreBackend> make_memory_backend(MemoryBackendOptions options = {});

}  // namespace segbloom
