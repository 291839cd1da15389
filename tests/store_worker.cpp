// A second process for the store tests (tests/test_store_*.cpp start it):
//
//   store_worker hold-leveldb PATH
//       opens the LevelDB database, prints "ready", holds it until stdin closes.
//   store_worker redis-counter SOCKET PREFIX KEYS THREADS INCREMENTS
//       THREADS threads each add 1, INCREMENTS times, to a decimal counter under a
//       random one of KEYS keys, by read / compare-and-set / retry; prints "done".
//   store_worker redis-marker SOCKET PREFIX PROCESS THREADS OPS USERS
//       THREADS threads mark ids (process_id_for) for random users through SeenStore
//       on Redis; prints "conflicts N" at the end.
//   store_worker crash-writer PATH USERS FLUSH_EVERY
//       marks batches of ids for USERS users on LevelDB through SeenStore, printing
//       "ack USER FIRST" after each batch is acknowledged, until killed. FLUSH_EVERY > 0
//       puts a memory cache in front, flushed every FLUSH_EVERY batches ("flushed").
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "segbloom/memory_backend.hpp"
#include "segbloom/store_backend.hpp"
#if SEGBLOOM_STORE_HAVE_LEVELDB
#include "segbloom/leveldb_backend.hpp"
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
#include "segbloom/redis_backend.hpp"
#endif
#include "segbloom/seen_store.hpp"
#include "support/store_ids.hpp"

namespace {

int usage() {
  std::cerr << "store_worker: unknown or incomplete command\n";
  return 2;
}

#if SEGBLOOM_STORE_HAVE_REDIS
segbloom::RedisConfig redis_config(const std::string& socket, const std::string& prefix) {
  segbloom::RedisConfig config;
  config.unix_socket = socket;
  config.key_prefix = prefix;
  return config;
}

int redis_counter(const std::string& socket, const std::string& prefix, int keys, int threads,
                  int increments) {
  auto backend = segbloom::make_redis_backend(redis_config(socket, prefix));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) * 7919 + static_cast<std::uint64_t>(::getpid()));
      for (int i = 0; i < increments; ++i) {
        const std::string key = "counter" + std::to_string(rng() % static_cast<std::uint64_t>(keys));
        for (;;) {
          std::uint64_t value = 0, version = 0;
          backend->read(key, [&](std::string_view bytes, std::uint64_t v) {
            value = std::stoull(std::string(bytes));
            version = v;
          });
          if (backend->write(key, std::to_string(value + 1), version) != 0) break;
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  std::cout << "done" << std::endl;
  return 0;
}
#endif

#if SEGBLOOM_STORE_HAVE_REDIS
int redis_marker(const std::string& socket, const std::string& prefix, int process, int threads,
                 int ops, int users) {
  segbloom::SeenStoreOptions options;
  options.backend = segbloom::make_redis_backend(redis_config(socket, prefix));
  segbloom::SeenStore store(options);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < ops; ++i) {
        const auto op = segbloom::test::MarkOp::make(process, t, i, users);
        store.mark_seen(op.user, op.ids);
      }
    });
  }
  for (auto& t : pool) t.join();
  std::cout << "conflicts " << store.stats().conflicts_retried << std::endl;
  return 0;
}
#endif

#if SEGBLOOM_STORE_HAVE_LEVELDB
int crash_writer(const std::string& path, int users, int flush_every) {
  segbloom::SeenStoreOptions options;
  options.backend = segbloom::make_leveldb_backend({.path = path});
  if (flush_every > 0) {  // a write-back cache in front, flushed every flush_every batches
    options.backend = segbloom::make_memory_backend(
        {.byte_budget = std::uint64_t{1} << 20, .backing = options.backend});
  }
  segbloom::SeenStore store(options);
  std::vector<std::uint64_t> batch(segbloom::test::kCrashBatch);
  std::uint64_t batches = 0;
  for (std::uint64_t round = 0;; ++round) {
    for (int user = 0; user < users; ++user) {
      const std::uint64_t first = round * segbloom::test::kCrashBatch;
      for (std::size_t j = 0; j < batch.size(); ++j) batch[j] = segbloom::test::crash_id(user, first + j);
      store.mark_seen(static_cast<std::uint64_t>(user), batch);
      std::cout << "ack " << user << ' ' << first << '\n' << std::flush;
      if (flush_every > 0 && ++batches % static_cast<std::uint64_t>(flush_every) == 0) {
        store.flush();
        std::cout << "flushed\n" << std::flush;
      }
    }
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage();
  try {
#if SEGBLOOM_STORE_HAVE_LEVELDB
    if (args[0] == "hold-leveldb" && args.size() == 2) {
      auto backend = segbloom::make_leveldb_backend({.path = args[1]});
      std::cout << "ready" << std::endl;
      std::string ignored;
      while (std::getline(std::cin, ignored)) {
      }
      return 0;
    }
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
    if (args[0] == "redis-counter" && args.size() == 6) {
      return redis_counter(args[1], args[2], std::stoi(args[3]), std::stoi(args[4]),
                           std::stoi(args[5]));
    }
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
    if (args[0] == "redis-marker" && args.size() == 7) {
      return redis_marker(args[1], args[2], std::stoi(args[3]), std::stoi(args[4]),
                          std::stoi(args[5]), std::stoi(args[6]));
    }
#endif
#if SEGBLOOM_STORE_HAVE_LEVELDB
    if (args[0] == "crash-writer" && args.size() == 4) {
      return crash_writer(args[1], std::stoi(args[2]), std::stoi(args[3]));
    }
#endif
  } catch (const std::exception& e) {
    std::cerr << "store_worker: " << e.what() << '\n';
    return 1;
  }
  return usage();
}
