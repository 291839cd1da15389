// segbloom: LevelDB as the blob store, embedded (Debian: libleveldb-dev).
//
//   auto disk = segbloom::make_leveldb_backend({.path = "/var/lib/app/seen"});
//
// One LevelDB key per user; the value is an 8-byte version (little-endian) followed by
// the blob. A value without a version this backend writes (shorter than 8 bytes, or a
// version of 0 or 2^64 - 1) is foreign: read() hands it out whole, under a version that only
// a write expecting it matches (never 0, "absent").
//
// LevelDB lets one process open a database at a time (it holds an fcntl lock on the
// directory's LOCK file): opening a directory another process (or another backend in this
// process) has open throws StoreError with code StoreErrc::locked.
// Within the process, compare-and-set is a read-check-write under one of a set of
// striped mutexes, so writes to the same key are serialised and writes to different
// keys are not.
//
// Durability: a write has reached the operating system (LevelDB's log) when write()
// returns, so killing the process loses nothing that was acknowledged. A power loss
// can lose the last writes unless `sync_writes` is set, which costs an fsync per write.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "segbloom/store_backend.hpp"

namespace segbloom {

struct LevelDbBackendOptions {
  std::string path{};  // database directory; created when missing
  bool create_if_missing = true;
  bool sync_writes = false;          // fsync every write (survives power loss)
  std::size_t block_cache_bytes = 8u << 20;  // LevelDB's LRU cache of uncompressed blocks
  std::size_t write_buffer_bytes = 4u << 20; // memtable size before it is written out
};

// Opens (or creates) the database. Throws StoreError: StoreErrc::locked when another
// process holds it, StoreErrc::io for any other failure to open (message from LevelDB).
std::shared_ptr<StoreBackend> make_leveldb_backend(const LevelDbBackendOptions& options);

}  // namespace segbloom
