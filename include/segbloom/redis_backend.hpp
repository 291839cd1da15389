// segbloom: Redis as the blob store, shared by a fleet of servers (Debian:
// redis-server, libhiredis-dev).
//
//   segbloom::RedisConfig cfg;
//   cfg.unix_socket = "/run/redis/redis-server.sock";   // or cfg.host / cfg.port
//   cfg.key_prefix = "seen:";
//   cfg.ttl = std::chrono::days(90);
//   auto redis = segbloom::make_redis_backend(cfg);
//
// Layout: one Redis hash per user, key = key_prefix + user (or key_prefix + "{" + user
// + "}" with hash_tag, so that Redis Cluster places it by the user alone), with fields
// "v" (version token, decimal) and "d" (the blob).
//
// No lost updates: write() is one EVALSHA of a Lua script that compares the stored
// version with the expected one and, only when they match, stores the blob and a new
// version (and sets the TTL, or removes any expiry when ttl is 0) -- atomically, since
// Redis runs a script without interleaving other commands. Two servers that read the same
// version both try to write; exactly one succeeds and the other gets "conflict" and starts
// again from a fresh read (SeenStore does this). A script is used instead of
// WATCH/MULTI/EXEC because it takes one round trip instead of three and keeps no state on
// the connection between commands, so pooled connections stay interchangeable.
//
// Failures: every command runs with `command_timeout`; connecting is bounded by
// `connect_timeout`. A connection that failed is closed, and the command is tried
// again on a fresh connection up to `attempts` times in all (a read, or a
// compare-and-set, is safe to repeat: a repeated write that already happened finds its
// new version among the user's last four, field `h`, and reports success without
// writing again). The pool's other connections opened before the
// failure are closed as well (idle ones at once, busy ones when they come back): a server
// restart, CLIENT KILL or idle timeout leaves them dead too, and a retry that took one
// would fail again. So one call waits at most about
// attempts * (connect_timeout + command_timeout) before it throws StoreError with
// code StoreErrc::unavailable (cannot connect, connection lost) or StoreErrc::timeout
// (a write that first loads the script, SCRIPT LOAD on the same connection, can make two
// commands an attempt). Concurrent calls wait side by side: no lock is held across a
// network call. A caller that finds all max_connections in use first waits for one.
// Redis error replies (wrong type, OOM, NOSCRIPT after a retry) throw StoreErrc::io.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "segbloom/store_backend.hpp"

namespace segbloom {

struct RedisConfig {
  // Where the server is: a Unix socket when unix_socket is not empty, else TCP.
  std::string unix_socket{};
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password{};  // AUTH when not empty
  int database = 0;      // SELECT when not 0 (Redis Cluster has only database 0)

  std::chrono::milliseconds connect_timeout{500};
  std::chrono::milliseconds command_timeout{1000};
  int attempts = 2;  // tries per call, each on a fresh connection after a failure; >= 1

  std::string key_prefix = "segbloom:";
  bool hash_tag = false;            // wrap the user in {} for Redis Cluster
  // Expire a user this long after its last write; 0: never (a write also removes an expiry
  // set earlier, under another ttl). Range [0, kMaxRedisTtl].
  std::chrono::milliseconds ttl{0};

  std::size_t max_connections = 16;  // pooled connections kept open; more callers wait
};

// The longest RedisConfig::ttl: 100 years.
inline constexpr std::chrono::milliseconds kMaxRedisTtl = std::chrono::years(100);

// Connects once to check the configuration, so a wrong address fails here.
// Throws std::invalid_argument for out-of-range options and StoreError when Redis
// cannot be reached.
std::shared_ptr<StoreBackend> make_redis_backend(const RedisConfig& config);

// The Redis key that holds `user`'s blob under `config` (prefix and hash tag applied).
std::string redis_key(const RedisConfig& config, std::string_view user);

}  // namespace segbloom
