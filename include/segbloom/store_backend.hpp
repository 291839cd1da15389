// segbloom: the blob store under SeenStore.
//
// A StoreBackend maps a key (a user) to one opaque blob and a version token. It knows
// nothing about filters; SeenStore (seen_store.hpp) puts serialized filters in it.
//
// Versions make read-modify-write safe without locks shared between processes:
//   1. read(key)  -> bytes and the version they were stored under (0: key absent);
//   2. modify the bytes;
//   3. write(key, new_bytes, version) stores them only if the key still holds that
//      version (compare-and-set) and returns the new version; if anybody wrote or
//      removed the key in between, nothing is stored and the caller starts again at 1.
// Version tokens are opaque non-zero numbers; a new one is drawn at every write (a
// fresh random 64-bit number, or a counter that never repeats), so a key deleted and
// re-created does not come back under a version an old reader still holds.
//
// Implementations (each in its own header, built only when its dependency is found):
//   make_memory_backend   (memory_backend.hpp)  LRU cache under a byte budget, optionally
//                                                in front of another backend (write-back)
//   make_leveldb_backend  (leveldb_backend.hpp) embedded, one directory, one process
//   make_redis_backend    (redis_backend.hpp)   shared by a fleet of servers
//
// Thread safety: every backend may be called from any number of threads at once.
// Errors: every failure to reach or use the underlying store is a StoreError.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace segbloom {

// Why a store operation failed.
enum class StoreErrc {
  unavailable,  // cannot connect to, or lost, the store (Redis down, socket missing)
  timeout,      // the store did not answer within the configured timeout
  locked,       // LevelDB: the directory is held by another process (its LOCK file)
  io,           // the store reported an I/O error or refused the request
  corrupt,      // a stored blob failed its checks (SeenStore, CorruptBlobPolicy::throw_error)
  conflict,     // SeenStore: still conflicting after SeenStoreOptions::max_retries; the memory
                //   backend's flush(): a blob its backing store refused 64 times in a row
  full,         // SeenStore: the user's stored filter takes no more items (growing, at 64 slices),
                //   or its blob would pass SeenStoreOptions::max_blob_bytes
};

// The one exception type of the store layer; code() says which failure it was.
class StoreError : public std::runtime_error {
 public:
  StoreError(StoreErrc code, const std::string& what) : std::runtime_error(what), code_(code) {}
  StoreErrc code() const noexcept { return code_; }

 private:
  StoreErrc code_;
};

// Counters a backend keeps; every field is cumulative since construction except
// `entries` and `bytes` (current values; 0 for backends that do not hold blobs in memory).
struct BackendStats {
  std::uint64_t entries = 0;    // blobs held in memory now (memory backend)
  std::uint64_t bytes = 0;      // bytes of those blobs plus bookkeeping
  std::uint64_t reads = 0;      // read() calls
  std::uint64_t writes = 0;     // write() calls that stored
  std::uint64_t write_conflicts = 0;  // write() calls refused by the version check
  std::uint64_t backing_loads = 0;    // memory backend: blobs fetched from its backing store
  std::uint64_t backing_stores = 0;   // memory backend: blobs written back to it
  std::uint64_t evictions = 0;        // memory backend: blobs dropped from memory
  std::uint64_t reconnects = 0;       // Redis: connections (re)opened after a failure
};

// A non-owning reference to a callable, for callbacks that run before the call returns.
template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
             std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& f) noexcept  // NOLINT: implicit on purpose, like std::function
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

class StoreBackend {
 public:
  // Called with the stored bytes and their version. The bytes are only valid during
  // the call (they may point into a cache entry or a network reply: no copy is made).
  using Visitor = FunctionRef<void(std::string_view bytes, std::uint64_t version)>;

  virtual ~StoreBackend() = default;

  // When `key` holds a blob, calls visit(bytes, version) once and returns true;
  // otherwise returns false without calling it. Exceptions thrown by `visit`
  // propagate unchanged. Throws StoreError when the store cannot be read.
  virtual bool read(std::string_view key, Visitor visit) = 0;

  // Compare-and-set. Stores `bytes` under `key` when the key's current version is
  // `expected` (0: the key must be absent) and returns the new, non-zero version;
  // returns 0 and stores nothing when the version differs. Throws StoreError when the
  // store cannot be written; then the write may or may not have happened, and a
  // caller that retries reads the key again first.
  virtual std::uint64_t write(std::string_view key, std::string_view bytes,
                              std::uint64_t expected) = 0;

  // Removes `key` (whatever its version); no effect when absent.
  virtual void remove(std::string_view key) = 0;

  // Makes every completed write durable in the layer below: the memory backend writes
  // its dirty blobs to its backing store; the others have nothing buffered.
  virtual void flush() {}

  virtual BackendStats stats() const = 0;

  // "memory", "leveldb", "redis", or "memory+leveldb" and so on.
  virtual std::string name() const = 0;
};

}  // namespace segbloom
