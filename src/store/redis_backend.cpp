// segbloom store: Redis as the blob store (see redis_backend.hpp).
#include "segbloom/redis_backend.hpp"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "redis_script.hpp"
#include "version_token.hpp"

namespace segbloom {
namespace {


struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// hiredis reports a timed-out connect or read as an I/O error carrying strerror(errno).
StoreErrc classify(const redisContext& c) {
  const std::string_view message(c.errstr);
  if (c.err == REDIS_ERR_IO && (message == std::strerror(EAGAIN) ||
                                message == std::strerror(ETIMEDOUT) ||
                                message.find("timed out") != std::string_view::npos)) {
    return StoreErrc::timeout;
  }
  return StoreErrc::unavailable;
}

// Writing to a connection the server closed raises SIGPIPE, whose default action ends
// the process. A library must not change the process's signal handling, so each call
// into hiredis blocks SIGPIPE for its own thread and afterwards discards a SIGPIPE that
// the call raised (one already pending before is left alone). The write then fails with
// EPIPE and is reported as a lost connection.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      const timespec no_wait{};
      while (sigtimedwait(&pipe_, nullptr, &no_wait) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_{}, old_{};
  bool was_pending_ = false;
};

// redisCommandArgv with SIGPIPE contained.
redisReply* command(redisContext* c, const std::vector<const char*>& argv,
                    const std::vector<std::size_t>& sizes) {
  SigpipeGuard guard;
  return static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), const_cast<const char**>(argv.data()), sizes.data()));
}

std::string to_decimal(std::uint64_t value) { return std::to_string(value); }

// One command's arguments, binary safe.
struct Args {
  std::vector<const char*> data;
  std::vector<std::size_t> sizes;
  Args& operator<<(std::string_view s) {
    data.push_back(s.data());
    sizes.push_back(s.size());
    return *this;
  }
};

class RedisBackend final : public StoreBackend {
 public:
  explicit RedisBackend(const RedisConfig& config) : config_(config) {
    // Connect once now so that a wrong address or password fails at construction.
    Lease lease(*this);
  }

  bool read(std::string_view key, Visitor visit) override {
    reads_.fetch_add(1, std::memory_order_relaxed);
    const std::string redis = redis_key(config_, key);
    Args args;
    args << "HMGET" << redis << "v" << "d";
    Reply reply = run(args, "HMGET");
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
      throw StoreError(StoreErrc::io, "segbloom: Redis HMGET of '" + redis +
                                          "' returned an unexpected reply");
    }
    const redisReply* version = reply->element[0];
    const redisReply* data = reply->element[1];
    if (version->type == REDIS_REPLY_NIL && data->type == REDIS_REPLY_NIL) return false;
    // Only a version as write() stores it counts (the script's rule); anything else, a
    // missing 'v' included, reads as kForeignVersion, which write() sends as "foreign".
    std::uint64_t parsed = kForeignVersion;
    if (version->type == REDIS_REPLY_STRING && version->len > 0 && version->str[0] != '0') {
      const char* end = version->str + version->len;
      std::uint64_t value = 0;
      auto [ptr, ec] = std::from_chars(version->str, end, value);
      if (ec == std::errc() && ptr == end) parsed = value;  // 2^64 - 1 is kForeignVersion itself
    }
    const std::string_view bytes = data->type == REDIS_REPLY_STRING
                                       ? std::string_view(data->str, data->len)
                                       : std::string_view();
    visit(bytes, parsed);  // straight from the reply buffer: no copy
    return true;
  }

  std::uint64_t write(std::string_view key, std::string_view bytes,
                      std::uint64_t expected) override {
    const std::string redis = redis_key(config_, key);
    std::uint64_t version = store_detail::new_version_token();
    while (version == kForeignVersion) version = store_detail::new_version_token();
    const std::string expected_text = expected == 0                 ? std::string()
                                      : expected == kForeignVersion ? std::string("foreign")
                                                                    : to_decimal(expected);
    const std::string version_text = to_decimal(version);
    const std::string ttl_text = std::to_string(config_.ttl.count());
    // One EVALSHA on a leased connection, after SCRIPT LOAD on the same connection when the
    // script's SHA is not known yet or the server lost the script (NOSCRIPT: a restart,
    // SCRIPT FLUSH). Repeated by run() on a fresh connection after a failure.
    Reply reply = run("compare-and-set", [&](redisContext* c) -> Reply {
      std::string sha = cached_sha();
      for (bool again = false;; again = true) {
        if (sha.empty()) {
          std::optional<std::string> fresh = load_script(c);
          if (!fresh) return nullptr;  // the connection failed
          sha = std::move(*fresh);
        }
        Args args;
        args << "EVALSHA" << sha << "1" << redis << expected_text << version_text << bytes << ttl_text;
        Reply sent(command(c, args.data, args.sizes));
        if (!sent || sent->type != REDIS_REPLY_ERROR || again ||
            std::string_view(sent->str, sent->len).rfind("NOSCRIPT", 0) != 0) {
          return sent;  // an error reply throws StoreErrc::io in run()
        }
        forget_sha(sha);
        sha.clear();
      }
    });
    if (reply->type != REDIS_REPLY_INTEGER) {
      throw StoreError(StoreErrc::io, "segbloom: Redis compare-and-set of '" + redis +
                                          "' returned an unexpected reply");
    }
    if (reply->integer == 0) {
      write_conflicts_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    writes_.fetch_add(1, std::memory_order_relaxed);
    return version;
  }

  void remove(std::string_view key) override {
    const std::string redis = redis_key(config_, key);
    Args args;
    args << "DEL" << redis;
    run(args, "DEL");
  }

  BackendStats stats() const override {
    BackendStats s;
    s.reads = reads_.load(std::memory_order_relaxed);
    s.writes = writes_.load(std::memory_order_relaxed);
    s.write_conflicts = write_conflicts_.load(std::memory_order_relaxed);
    s.reconnects = reconnects_.load(std::memory_order_relaxed);
    return s;
  }

  std::string name() const override { return "redis"; }

 private:
  // Version reported when the stored one is missing or not a number.
  static constexpr std::uint64_t kForeignVersion = ~std::uint64_t{0};

  // A connection and the pool generation it was opened in.
  struct Pooled {
    Context context;
    std::uint64_t generation = 0;
  };

  // A pooled connection, returned to the pool when healthy and closed otherwise.
  class Lease {
   public:
    explicit Lease(RedisBackend& owner) : owner_(owner), connection_(owner.acquire()) {}
    ~Lease() { owner_.release(std::move(connection_), healthy_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    redisContext* get() const { return connection_.context.get(); }
    std::uint64_t generation() const { return connection_.generation; }
    void mark_broken() { healthy_ = false; }

   private:
    RedisBackend& owner_;
    Pooled connection_;
    bool healthy_ = true;
  };

  Pooled acquire() {
    std::uint64_t generation = 0;
    {
      std::unique_lock lock(pool_mutex_);
      pool_ready_.wait(lock, [&] { return !idle_.empty() || open_ < config_.max_connections; });
      if (!idle_.empty()) {
        Pooled c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
      ++open_;
      generation = generation_;
    }
    try {
      return Pooled{connect(), generation};
    } catch (...) {
      std::lock_guard lock(pool_mutex_);
      --open_;
      pool_ready_.notify_one();
      throw;
    }
  }

  void release(Pooled c, bool healthy) {
    std::lock_guard lock(pool_mutex_);
    if (healthy && c.context && c.generation == generation_) {
      idle_.push_back(std::move(c));
    } else {
      --open_;
    }
    pool_ready_.notify_one();
  }

  // A connection of generation `failed` was lost: the others opened before it most
  // likely died with it (a server restart, CLIENT KILL, an idle timeout), and a retry that
  // took one of them would fail again while the server is up. So the loss starts a new
  // generation: idle connections are closed now, those in use when they come back. A retry
  // then connects afresh, or takes a connection opened after the loss. A loss on a
  // connection of an earlier generation starts none: its purge happened, and another would
  // close the fresh connections other threads opened since.
  void close_connections_opened_before_failure(std::uint64_t failed) {
    std::vector<Pooled> stale;  // closed when this returns, outside the lock
    std::lock_guard lock(pool_mutex_);
    if (failed != generation_) return;
    ++generation_;
    open_ -= idle_.size();
    stale.swap(idle_);
    pool_ready_.notify_all();
  }

  std::uint64_t pool_generation() {
    std::lock_guard lock(pool_mutex_);
    return generation_;
  }

  std::string where() const {
    return config_.unix_socket.empty()
               ? "Redis at " + config_.host + ":" + std::to_string(config_.port)
               : "Redis at unix:" + config_.unix_socket;
  }

  Context connect() {
    const timeval connect_tv = to_timeval(config_.connect_timeout);
    Context c(config_.unix_socket.empty()
                  ? redisConnectWithTimeout(config_.host.c_str(), config_.port, connect_tv)
                  : redisConnectUnixWithTimeout(config_.unix_socket.c_str(), connect_tv));
    if (!c) throw StoreError(StoreErrc::unavailable, "segbloom: cannot allocate a Redis context");
    if (c->err) {
      throw StoreError(classify(*c), "segbloom: cannot connect to " + where() + ": " + c->errstr);
    }
    if (redisSetTimeout(c.get(), to_timeval(config_.command_timeout)) != REDIS_OK) {
      throw StoreError(StoreErrc::unavailable,
                       "segbloom: cannot set the command timeout on " + where());
    }
    if (!config_.password.empty()) {
      Args args;
      args << "AUTH" << config_.password;
      setup_command(c.get(), args, "AUTH");
    }
    if (config_.database != 0) {
      const std::string db = std::to_string(config_.database);
      Args args;
      args << "SELECT" << db;
      setup_command(c.get(), args, "SELECT");
    }
    return c;
  }

  void setup_command(redisContext* c, Args& args, const char* name) {
    Reply reply(command(c, args.data, args.sizes));
    if (!reply) throw StoreError(classify(*c), "segbloom: " + where() + ": " + name + ": " + c->errstr);
    if (reply->type == REDIS_REPLY_ERROR) {
      throw StoreError(StoreErrc::io, "segbloom: " + where() + " refused " + name + ": " +
                                          std::string(reply->str, reply->len));
    }
  }

  // The SHA1 under which Redis knows the compare-and-set script (SCRIPT LOAD returns it;
  // it is the same for every connection and server, so it is loaded once and cached), or ""
  // when not loaded yet. The mutex guards only the cached string, never a network call:
  // held across a SCRIPT LOAD to a hung server, it made each writer queued on it wait for
  // the load of every writer before it as well as its own (until 4 Dec 2026).
  std::string cached_sha() {
    std::lock_guard lock(sha_mutex_);
    return sha_;
  }

  // The server no longer knows `sha`: cleared unless another writer has published a new one.
  void forget_sha(const std::string& sha) {
    std::lock_guard lock(sha_mutex_);
    if (sha_ == sha) sha_.clear();
  }

  // SCRIPT LOAD on `c`; the SHA, published for the other writers, or nothing when the
  // connection failed (c->err). Writers that find no SHA at once each load the script:
  // SCRIPT LOAD is idempotent and returns the same SHA.
  std::optional<std::string> load_script(redisContext* c) {
    Args args;
    args << "SCRIPT" << "LOAD" << store_detail::kCompareAndSetScript;
    Reply reply(command(c, args.data, args.sizes));
    if (!reply) return std::nullopt;
    if (reply->type != REDIS_REPLY_STRING) {
      throw StoreError(StoreErrc::io, "segbloom: " + where() + ": SCRIPT LOAD failed" +
                                          (reply->type == REDIS_REPLY_ERROR
                                               ? ": " + std::string(reply->str, reply->len)
                                               : std::string()));
    }
    std::string sha(reply->str, reply->len);
    std::lock_guard lock(sha_mutex_);
    sha_ = sha;
    return sha;
  }

  // Runs a command on a pooled connection, on a fresh one after a connection failure,
  // `attempts` times at most. An error reply throws StoreErrc::io.
  Reply run(Args& args, const char* name) {
    return run(name, [&](redisContext* c) { return Reply(command(c, args.data, args.sizes)); });
  }

  // The same for `send`, which makes its commands on the connection it is given and returns
  // the last reply, or null when the connection failed.
  template <class Send>
  Reply run(const char* name, Send&& send) {
    for (int attempt = 1;; ++attempt) {
      std::uint64_t generation = pool_generation();  // the lease's, once it has one
      try {
        Lease lease(*this);
        generation = lease.generation();
        Reply reply = send(lease.get());
        if (!reply) {
          lease.mark_broken();
          throw StoreError(classify(*lease.get()), "segbloom: " + where() + ": " + name + " failed after " +
                                                       std::to_string(attempt) + " attempt(s): " +
                                                       lease.get()->errstr);
        }
        if (reply->type == REDIS_REPLY_ERROR) {
          throw StoreError(StoreErrc::io, "segbloom: " + where() + " refused " + name + ": " +
                                              std::string(reply->str, reply->len));
        }
        return reply;
      } catch (const StoreError& e) {
        // Error replies go to the caller. A connection that failed, or could not be
        // opened, is tried again while attempts remain.
        if (e.code() == StoreErrc::io) throw;
        // Not after a timeout: a slow server's other connections are most likely alive,
        // and closing them under load would add connects to the overload.
        if (e.code() == StoreErrc::unavailable) close_connections_opened_before_failure(generation);
        if (attempt >= config_.attempts) throw;
        reconnects_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  RedisConfig config_;
  std::mutex pool_mutex_;
  std::condition_variable pool_ready_;
  std::vector<Pooled> idle_;
  std::size_t open_ = 0;            // idle and in use
  std::uint64_t generation_ = 0;    // failures seen; see close_connections_opened_before_failure
  std::mutex sha_mutex_;
  std::string sha_;
  std::atomic<std::uint64_t> reads_{0}, writes_{0}, write_conflicts_{0}, reconnects_{0};
};

}  // namespace

std::string redis_key(const RedisConfig& config, std::string_view user) {
  std::string key = config.key_prefix;
  if (config.hash_tag) {
    key += '{';
    key += user;
    key += '}';
  } else {
    key += user;
  }
  return key;
}

std::shared_ptr<StoreBackend> make_redis_backend(const RedisConfig& config) {
  if (config.attempts < 1) throw std::invalid_argument("segbloom: RedisConfig::attempts must be >= 1");
  if (config.max_connections < 1) {
    throw std::invalid_argument("segbloom: RedisConfig::max_connections must be >= 1");
  }
  if (config.connect_timeout.count() <= 0 || config.command_timeout.count() <= 0) {
    throw std::invalid_argument("segbloom: RedisConfig timeouts must be > 0");
  }
  if (config.ttl < std::chrono::milliseconds::zero() || config.ttl > kMaxRedisTtl) {
    throw std::invalid_argument("segbloom: RedisConfig::ttl must be in [0, 100 years]");
  }
  return std::make_shared<RedisBackend>(config);
}

}  // namespace segbloom
