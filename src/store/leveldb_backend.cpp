// segbloom store: LevelDB as the blob store (see leveldb_backend.hpp).
#include "segbloom/leveldb_backend.hpp"

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include <array>
#include <atomic>
#include <functional>
#include <mutex>

#include "version_token.hpp"

namespace segbloom {
namespace {

constexpr std::size_t kVersionBytes = 8;
constexpr std::size_t kStripes = 256;  // two keys share a write lock with probability 1/256

std::string encode_version(std::uint64_t version) {
  std::string out(kVersionBytes, '\0');
  for (std::size_t i = 0; i < kVersionBytes; ++i) out[i] = static_cast<char>(version >> (8 * i));
  return out;
}

std::uint64_t decode_version(std::string_view value) {
  std::uint64_t version = 0;
  for (std::size_t i = 0; i < kVersionBytes; ++i) {
    version |= std::uint64_t{static_cast<unsigned char>(value[i])} << (8 * i);
  }
  return version;
}

leveldb::Slice slice_of(std::string_view s) { return {s.data(), s.size()}; }

// Version reported for a value this backend did not write.
constexpr std::uint64_t kForeignVersion = ~std::uint64_t{0};

// The version a stored value carries, or kForeignVersion when it carries none this backend
// writes: too short for one, or 0 (absent, to write()) or 2^64 - 1, never drawn. A 0 let
// write(key, bytes, 0) replace a present key (until 4 Dec 2026).
std::uint64_t stored_version(std::string_view value) {
  if (value.size() < kVersionBytes) return kForeignVersion;
  const std::uint64_t version = decode_version(value);
  return version == 0 ? kForeignVersion : version;
}

class LevelDbBackend final : public StoreBackend {
 public:
  explicit LevelDbBackend(const LevelDbBackendOptions& options)
      : path_(options.path), sync_(options.sync_writes) {
    cache_.reset(leveldb::NewLRUCache(options.block_cache_bytes));
    leveldb::Options db_options;
    db_options.create_if_missing = options.create_if_missing;
    db_options.block_cache = cache_.get();
    db_options.write_buffer_size = options.write_buffer_bytes;
    leveldb::DB* db = nullptr;
    const leveldb::Status status = leveldb::DB::Open(db_options, options.path, &db);
    if (!status.ok()) {
      const std::string message = status.ToString();
      // LevelDB reports a held LOCK file as an IOError from LockFile: "lock <path>/LOCK:
      // already held by process" (same process) or "...: Resource temporarily
      // unavailable" (fcntl, another process).
      const bool locked = message.find("/LOCK") != std::string::npos &&
                          (message.find("already held") != std::string::npos ||
                           message.find("temporarily unavailable") != std::string::npos);
      if (locked) {
        throw StoreError(StoreErrc::locked,
                         "segbloom: LevelDB database '" + options.path +
                             "' is open in another process (or another backend of this one); "
                             "LevelDB allows one owner at a time: " + message);
      }
      throw StoreError(StoreErrc::io,
                       "segbloom: cannot open LevelDB database '" + options.path + "': " + message);
    }
    db_.reset(db);
  }

  ~LevelDbBackend() override {
    db_.reset();  // before the cache it uses
  }

  bool read(std::string_view key, Visitor visit) override {
    reads_.fetch_add(1, std::memory_order_relaxed);
    std::string value;
    const leveldb::Status status = db_->Get(leveldb::ReadOptions(), slice_of(key), &value);
    if (status.IsNotFound()) return false;
    check(status, "read", key);
    const std::uint64_t version = stored_version(value);
    if (version == kForeignVersion) {
      // Not written by this backend: the whole value, under a version that a caller can
      // overwrite (CorruptBlobPolicy::reset) yet that never matches "absent".
      visit(std::string_view(value), kForeignVersion);
      return true;
    }
    visit(std::string_view(value).substr(kVersionBytes), version);
    return true;
  }

  std::uint64_t write(std::string_view key, std::string_view bytes,
                      std::uint64_t expected) override {
    std::lock_guard lock(stripes_[std::hash<std::string_view>{}(key) % kStripes]);
    std::string value;
    const leveldb::Status status = db_->Get(leveldb::ReadOptions(), slice_of(key), &value);
    std::uint64_t current = 0;
    if (!status.IsNotFound()) {
      check(status, "read", key);
      current = stored_version(value);
    }
    if (current != expected) {
      write_conflicts_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    std::uint64_t version = store_detail::new_version_token();
    while (version == kForeignVersion) version = store_detail::new_version_token();
    value = encode_version(version);
    value.append(bytes);
    leveldb::WriteOptions write_options;
    write_options.sync = sync_;
    check(db_->Put(write_options, slice_of(key), value), "write", key);
    writes_.fetch_add(1, std::memory_order_relaxed);
    return version;
  }

  void remove(std::string_view key) override {
    std::lock_guard lock(stripes_[std::hash<std::string_view>{}(key) % kStripes]);
    leveldb::WriteOptions write_options;
    write_options.sync = sync_;
    check(db_->Delete(write_options, slice_of(key)), "remove", key);
  }

  BackendStats stats() const override {
    BackendStats s;
    s.reads = reads_.load(std::memory_order_relaxed);
    s.writes = writes_.load(std::memory_order_relaxed);
    s.write_conflicts = write_conflicts_.load(std::memory_order_relaxed);
    return s;
  }

  std::string name() const override { return "leveldb"; }

 private:
  void check(const leveldb::Status& status, const char* what, std::string_view key) const {
    if (status.ok()) return;
    throw StoreError(StoreErrc::io, "segbloom: LevelDB " + std::string(what) + " of key '" +
                                        std::string(key) + "' in '" + path_ +
                                        "' failed: " + status.ToString());
  }

  std::string path_;
  bool sync_;
  std::unique_ptr<leveldb::Cache> cache_;
  std::unique_ptr<leveldb::DB> db_;
  std::array<std::mutex, kStripes> stripes_;
  std::atomic<std::uint64_t> reads_{0}, writes_{0}, write_conflicts_{0};
};

}  // namespace

std::shared_ptr<StoreBackend> make_leveldb_backend(const LevelDbBackendOptions& options) {
  if (options.path.empty()) {
    throw std::invalid_argument("segbloom: LevelDbBackendOptions::path is empty");
  }
  return std::make_shared<LevelDbBackend>(options);
}

}  // namespace segbloom
