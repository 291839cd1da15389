// A feed that never shows a user the same video twice, with the per-user filters kept in
// a store:
//
//   seen_store memory
//   seen_store leveldb /tmp/seen-db            (a directory; created when missing)
//   seen_store redis /run/redis/redis.sock     (a redis-server's Unix socket)
//   seen_store redis 127.0.0.1:6379
//
// Each "request" draws 200 candidate videos from a small catalogue, shows the first 10
// the user has not seen (take_unseen: checked and recorded in one step), and prints the
// store's statistics at the end. Run it twice on LevelDB or Redis: the second run
// continues where the first stopped.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "segbloom/memory_backend.hpp"
#include "segbloom/seen_store.hpp"
#if SEGBLOOM_STORE_HAVE_LEVELDB
#include "segbloom/leveldb_backend.hpp"
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
#include "segbloom/redis_backend.hpp"
#endif

namespace {

std::shared_ptr<segbloom::StoreBackend> open_backend(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "memory";
  if (kind == "memory") return segbloom::make_memory_backend({.byte_budget = 64 << 20});
#if SEGBLOOM_STORE_HAVE_LEVELDB
  if (kind == "leveldb" && argc > 2) return segbloom::make_leveldb_backend({.path = argv[2]});
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
  if (kind == "redis" && argc > 2) {
    segbloom::RedisConfig config;
    const std::string where = argv[2];
    if (const auto colon = where.rfind(':'); colon != std::string::npos && where[0] != '/') {
      config.host = where.substr(0, colon);
      config.port = std::stoi(where.substr(colon + 1));
    } else {
      config.unix_socket = where;
    }
    config.key_prefix = "seen-example:";
    config.ttl = std::chrono::hours(24 * 90);  // forget users idle for 90 days
    return segbloom::make_redis_backend(config);
  }
#endif
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    auto backend = open_backend(argc, argv);
    if (!backend) {
      std::fprintf(stderr, "usage: %s memory | leveldb DIR | redis SOCKET|HOST:PORT\n", argv[0]);
      return 2;
    }
    segbloom::SeenStore store({.backend = backend});

    std::mt19937_64 rng(std::random_device{}());
    const std::vector<std::string> users{"alice", "bob", "carol"};
    for (int request = 0; request < 6; ++request) {
      const std::string& user = users[static_cast<std::size_t>(request) % users.size()];
      std::vector<std::uint64_t> candidates(200);
      for (auto& c : candidates) c = 1000 + rng() % 300;  // a small catalogue: repeats
      const auto page = store.take_unseen(user, candidates, 10);
      std::printf("%-5s sees %2zu new videos:", user.c_str(), page.size());
      for (const auto video : page) std::printf(" %llu", static_cast<unsigned long long>(video));
      std::printf("\n");
    }
    store.flush();

    const segbloom::SeenStoreStats s = store.stats();
    std::printf("backend %s: %llu loads, %llu stores, %llu conflicts retried, %llu corrupt blobs\n",
                backend->name().c_str(), static_cast<unsigned long long>(s.loads),
                static_cast<unsigned long long>(s.stores),
                static_cast<unsigned long long>(s.conflicts_retried),
                static_cast<unsigned long long>(s.corrupt_blobs));
    return 0;
  } catch (const segbloom::StoreError& e) {
    std::fprintf(stderr, "store error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
