#include "atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "exit_codes.hpp"

namespace segbloom::cli {

namespace detail {
std::function<void(const std::string&)> after_directory_flush_for_tests;
}  // namespace detail

namespace {

std::string system_error(const std::string& what, const std::string& path) {
  return path + ": " + what + ": " + std::strerror(errno);
}

// After a rename or link, the directory entry is on disk only once the directory is
// flushed: without it a crash can bring back the old file (or no file) after a command
// reported success. The rename has happened by then, so a failure here is not an error
// of the command (it must not exit non-zero for a file it changed): a warning.
void flush_directory(const std::string& path) {
  const std::string dir = directory_of(path);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  // EINVAL: a file system whose directories take no fsync (nothing to flush).
  if (fd < 0 || (::fsync(fd) != 0 && errno != EINVAL)) {
    std::fprintf(stderr, "segbloom: warning: %s: written, but its directory %s was not flushed: %s\n",
                 path.c_str(), dir.c_str(), std::strerror(errno));
  }
  if (fd >= 0) ::close(fd);
  if (detail::after_directory_flush_for_tests) detail::after_directory_flush_for_tests(dir);
}

// The temporary file a signal handler removes, while one exists.
const char* volatile g_temp_path = nullptr;
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

extern "C" void remove_temp_and_die(int signal) {
  // Async-signal-safe calls only. The signal is blocked while this runs: raise() delivers
  // it, with the default action, once the handler returns.
  if (const char* temp = g_temp_path) ::unlink(temp);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(signal, &default_action, nullptr);
  ::raise(signal);
}

// While a temporary file exists, a signal that kills the process removes it first (the
// README promises no half-written file). Created with the signals blocked, so that none
// lands between the file's creation and arm(); a signal the process ignores stays ignored.
class TempFileSignalGuard {
 public:
  TempFileSignalGuard() {
    sigset_t set;
    ::sigemptyset(&set);
    for (const int signal : kCleanupSignals) ::sigaddset(&set, signal);
    ::sigprocmask(SIG_BLOCK, &set, &blocked_before_);
    struct sigaction action {};
    action.sa_handler = remove_temp_and_die;
    ::sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < std::size(kCleanupSignals); ++i) {
      ::sigaction(kCleanupSignals[i], nullptr, &old_[i]);
      if (old_[i].sa_handler != SIG_IGN) ::sigaction(kCleanupSignals[i], &action, nullptr);
    }
  }
  // `temp` names the file from now on; it must outlive the guard.
  void arm(const std::string& temp) {
    g_temp_path = temp.c_str();
    ::sigprocmask(SIG_SETMASK, &blocked_before_, nullptr);
  }
  ~TempFileSignalGuard() {
    sigset_t all, before;
    ::sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, &before);
    g_temp_path = nullptr;
    for (std::size_t i = 0; i < std::size(kCleanupSignals); ++i) ::sigaction(kCleanupSignals[i], &old_[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &blocked_before_, nullptr);
  }
  TempFileSignalGuard(const TempFileSignalGuard&) = delete;
  TempFileSignalGuard& operator=(const TempFileSignalGuard&) = delete;

 private:
  sigset_t blocked_before_;
  struct sigaction old_[std::size(kCleanupSignals)];
};

}  // namespace

void check_replaceable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // absent; unreachable ones fail at the write
  // A rename over a device node or FIFO would put a regular file in its place (as root
  // even /dev/null). A symbolic link is replaced as the link it is, whatever it names.
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return;
  throw IoError(path + (S_ISDIR(st.st_mode) ? ": is a directory" : ": not a regular file") +
                " (not replaced)");
}

void write_output_file(const std::string& path, std::string_view bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    write_file_atomically(path, bytes, true);
    return;
  }
  // /dev/null, /dev/stdout, a shell's >(...): the user asked for the bytes to go there.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw IoError(system_error("cannot open", path));
  for (std::size_t written = 0; written < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string message = system_error("cannot write", path);
      ::close(fd);
      throw IoError(message);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw IoError(system_error("cannot close", path));
}

void check_output_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) return;
  check_replaceable(path);
}

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void write_file_atomically(const std::string& path, std::string_view bytes, bool overwrite,
                           const std::function<void()>& before_commit) {
  check_replaceable(path);
  // A file replaced keeps its mode, owner and group: a 0600 file stays private. The new
  // file is 0600 until then, so no other user can open it meanwhile.
  struct stat old {};
  const bool keep = ::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode);
  // Same directory as the target, so that rename() is atomic (one file system). A short
  // name of its own rather than FILE plus a suffix: a FILE of 250 bytes leaves no room
  // for one under NAME_MAX. Created new (O_EXCL, O_NOFOLLOW): never written through a
  // name planted in a shared directory, nor over a leftover of a killed run whose pid
  // came back; the next name is tried then.
  const std::string prefix = directory_of(path) + "/.segbloom-" + std::to_string(::getpid()) + "-";
  std::string temp;
  TempFileSignalGuard guard;
  int fd = -1;
  for (unsigned attempt = 0; fd < 0; ++attempt) {
    temp = prefix + std::to_string(attempt) + ".tmp";
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, keep ? 0600 : 0644);
    if (fd < 0 && (errno != EEXIST || attempt == 99)) throw IoError(system_error("cannot create", path));
  }
  guard.arm(temp);
  // Every failure names the user's file: the temporary name means nothing to them.
  const auto fail = [&](const std::string& what) {
    const std::string message = system_error(what, path);
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw IoError(message);
  };
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write");
    }
    written += static_cast<std::size_t>(n);
  }
  if (keep) {
    // Only root, or the owner to a group of their own, may set these: EPERM leaves the
    // new file the writer's (the mode is kept all the same).
    if (::fchown(fd, old.st_uid, old.st_gid) != 0 && errno != EPERM) fail("cannot keep the owner of");
    if (::fchmod(fd, old.st_mode & 07777) != 0) fail("cannot keep the mode of");
  }
  if (::fsync(fd) != 0) fail("cannot flush");
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) fail("cannot close");
  if (before_commit) {
    try {
      before_commit();
    } catch (...) {
      ::unlink(temp.c_str());
      throw;
    }
  }
  if (overwrite) {
    if (::rename(temp.c_str(), path.c_str()) != 0) fail("cannot replace");
  } else {
    move_into_place_without_replacing(temp, path);
  }
  flush_directory(path);
}

void move_into_place_without_replacing(const std::string& temp, const std::string& path, bool try_rename) {
  // No clobbering, atomically: both calls fail with EEXIST when the target appeared since
  // the caller's check. RENAME_NOREPLACE is refused (EINVAL) by file systems that do not
  // implement it; link() by those without hard links (EPERM, EOPNOTSUPP; FAT, some FUSE).
  const auto refuse_or_fail = [&](int error) {
    ::unlink(temp.c_str());
    if (error == EEXIST) throw RefusedError(path + ": file exists (use --force to replace it)");
    errno = error;
    throw IoError(system_error("cannot create", path));
  };
  if (try_rename) {
    if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return;
    if (errno != EINVAL && errno != ENOSYS) refuse_or_fail(errno);
  }
  if (::link(temp.c_str(), path.c_str()) == 0) {
    ::unlink(temp.c_str());
    return;
  }
  const int link_error = errno;
  if (link_error == EPERM || link_error == EOPNOTSUPP) {
    ::unlink(temp.c_str());
    throw IoError(path + ": cannot create it without replacing a file of that name: the file system "
                  "has neither RENAME_NOREPLACE nor hard links (--force writes it by a plain rename)");
  }
  refuse_or_fail(link_error);
}

}  // namespace segbloom::cli
