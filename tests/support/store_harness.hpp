// Test harness for the store tests: temporary directories, child processes, and a real
// redis-server on a Unix socket.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace segbloom::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/segbloom-store-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A child process started with posix_spawn (safe in a threaded process), with its
// stdin and stdout connected to pipes when asked.
class Child {
 public:
  Child(const std::vector<std::string>& argv, bool pipe_stdin, bool pipe_stdout) {
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (pipe_stdin && ::pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    if (pipe_stdout && ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (pipe_stdin) posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    if (pipe_stdout) posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = ::posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (pipe_stdin) {
      ::close(in[0]);
      stdin_ = in[1];
    }
    if (pipe_stdout) {
      ::close(out[1]);
      stdout_ = ::fdopen(out[0], "r");
    }
    if (rc != 0) {
      pid_ = -1;
      throw std::runtime_error("cannot start " + argv[0]);
    }
  }
  ~Child() {
    close_stdin();
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (stdout_) std::fclose(stdout_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // One line of the child's stdout without its newline; false at end of output.
  bool read_line(std::string& line) {
    line.clear();
    for (int c; (c = std::fgetc(stdout_)) != EOF;) {
      if (c == '\n') return true;
      line.push_back(static_cast<char>(c));
    }
    return !line.empty();
  }
  void close_stdin() {
    if (stdin_ >= 0) ::close(stdin_);
    stdin_ = -1;
  }
  void kill(int signal) {
    if (pid_ > 0) ::kill(pid_, signal);
  }
  // Waits for the child; returns its exit code, or 128 + signal when killed.
  int wait() {
    if (pid_ <= 0) return status_;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return status_;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  std::FILE* stdout_ = nullptr;
  int status_ = -1;
};

// The Unix socket of a redis-server for the tests: $SEGBLOOM_REDIS_SOCKET (scripts/test.sh
// starts one), else one started here on first use and stopped when the tests exit,
// else "" when redis-server is not installed (the caller skips with a warning).
// The server runs under a small shell watchdog that stops it when this process ends,
// however it ends (a crash or SIGKILL included), so no server outlives the tests.
inline std::string redis_socket_for_tests() {
  if (const char* env = std::getenv("SEGBLOOM_REDIS_SOCKET"); env && *env) return env;
  struct OwnServer {
    TempDir dir;
    std::string socket;
    std::unique_ptr<Child> watchdog;
    OwnServer() {
      socket = dir / "redis.sock";
      const std::string script =
          "exec >/dev/null 2>&1 </dev/null; command -v redis-server || exit 1; "
          "redis-server \"$@\" & srv=$!; trap 'kill $srv; wait $srv; exit 0' TERM; "
          "while kill -0 $PPID && kill -0 $srv; do sleep 0.2; done; kill $srv; wait $srv";
      watchdog = std::make_unique<Child>(
          std::vector<std::string>{"/bin/sh", "-c", script, "sh", "--port", "0", "--unixsocket",
                                   socket, "--save", "", "--appendonly", "no", "--dir",
                                   dir.path(), "--logfile", dir / "redis.log"},
          false, false);
      struct stat st {};
      for (int i = 0; i < 500 && ::stat(socket.c_str(), &st) != 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (::stat(socket.c_str(), &st) != 0) socket.clear();
    }
    ~OwnServer() {
      watchdog->kill(SIGTERM);
      watchdog->wait();
    }
  };
  static OwnServer own;
  return own.socket;
}

}  // namespace segbloom::test
