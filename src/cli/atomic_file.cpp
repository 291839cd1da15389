#include "atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "exit_codes.hpp"

namespace segbloom::cli {
namespace {

std::string system_error(const std::string& what, const std::string& path) {
  return path + ": " + what + ": " + std::strerror(errno);
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view bytes, bool overwrite) {
  // Same directory as the target, so that rename() is atomic (one file system). Created
  // new (O_EXCL, O_NOFOLLOW): never written through a name planted in a shared directory,
  // nor over a leftover of a killed run whose pid came back; the next name is tried then.
  std::string temp;
  int fd = -1;
  for (unsigned attempt = 0; fd < 0; ++attempt) {
    temp = path + ".tmp-" + std::to_string(::getpid()) + (attempt == 0 ? "" : "-" + std::to_string(attempt));
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && (errno != EEXIST || attempt == 99)) throw IoError(system_error("cannot create", temp));
  }
  const auto fail = [&](const std::string& what) {
    const std::string message = system_error(what, temp);
    ::close(fd);
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
  if (::fsync(fd) != 0) fail("cannot flush");
  if (::close(fd) != 0) {
    const std::string message = system_error("cannot close", temp);
    ::unlink(temp.c_str());
    throw IoError(message);
  }
  if (overwrite) {
    if (::rename(temp.c_str(), path.c_str()) != 0) {
      const std::string message = system_error("cannot rename to " + path, temp);
      ::unlink(temp.c_str());
      throw IoError(message);
    }
  } else {
    // No clobbering, atomically: link() fails with EEXIST when the target appeared since
    // the caller's check; the temporary name is then removed.
    const int linked = ::link(temp.c_str(), path.c_str());
    const int link_errno = errno;
    ::unlink(temp.c_str());
    if (linked != 0) {
      if (link_errno == EEXIST) throw RefusedError(path + ": file exists (use --force to replace it)");
      errno = link_errno;
      throw IoError(system_error("cannot create", path));
    }
  }
}

}  // namespace segbloom::cli
