#include "filter_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <new>
#include <optional>
#include <type_traits>

#include "atomic_file.hpp"
#include "exit_codes.hpp"
#include "segbloom/envelope.hpp"
#include "segbloom/errors.hpp"
#include "segbloom/filter_kinds.hpp"
#include "segbloom/serialization.hpp"
#include "segbloom/transition_serialization.hpp"

namespace segbloom::cli {
namespace {

std::string system_error(const std::string& what, const std::string& path) {
  return path + ": " + what + ": " + std::strerror(errno);
}

// Reads up to `max` bytes at the end of `bytes`; false at the end of the file. Plain
// read(): a stream would report a failed read (EIO) as an early end of file, and the file
// as truncated (exit 3) rather than unreadable (exit 4).
bool read_up_to(int fd, const std::string& path, std::string& bytes, std::size_t max) {
  char chunk[1 << 16];
  while (max > 0) {
    const ssize_t n = ::read(fd, chunk, std::min(sizeof chunk, max));
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(system_error("cannot read", path));
    }
    bytes.append(chunk, static_cast<std::size_t>(n));
    max -= static_cast<std::size_t>(n);
  }
  return true;
}

// The file's bytes, if its envelope header is good: the header is read and checked first,
// and then at most the length it declares, so a large file that is no filter (or a filter
// with much after it) is refused without reading it into memory. `limits` as load_blob's.
std::string read_envelope(int fd, const std::string& path, std::uint64_t file_size) {
  std::string bytes;
  read_up_to(fd, path, bytes, envelope::kHeaderBytes);
  LoadLimits limits;
  limits.max_bytes = std::max<std::uint64_t>(limits.max_bytes, file_size);
  const envelope::Header header = envelope::read_header(bytes, 0, limits);  // truncated, magic, version
  const std::uint64_t total = envelope::kHeaderBytes + header.payload_bytes;
  if (file_size > total) {
    throw FormatError("segbloom: " + std::to_string(file_size - total) + " unexpected bytes after the payload");
  }
  try {
    bytes.reserve(static_cast<std::size_t>(total));
  } catch (const std::bad_alloc&) {
    throw OutOfMemoryError(path + ": out of memory reading a filter of " + std::to_string(total) + " bytes");
  }
  // One byte past the declared length, to see bytes that appeared since fstat.
  if (read_up_to(fd, path, bytes, static_cast<std::size_t>(header.payload_bytes) + 1) &&
      bytes.size() > total) {
    throw FormatError("segbloom: unexpected bytes after the payload");
  }
  return bytes;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

LoadedFilter load_blob(const std::string& blob) {
  LoadLimits limits;
  limits.max_bytes = std::max<std::uint64_t>(limits.max_bytes, blob.size());
  // Header first: it names the kind to load (and refuses a foreign or truncated file).
  const envelope::Header header = envelope::read_header(blob, 0, limits);
  std::optional<AnyFilter> filter;
  const auto load = [&]<class F>() {
    if constexpr (std::is_constructible_v<AnyFilter, F>) filter.emplace(from_bytes<F>(blob, limits));
  };
  visit_kind(FilterKinds{}, header.kind, load);
  visit_kind(KindList<TransitionFilter<ScalableBloomFilter>, TransitionFilter<CountingBloomFilter>,
                      TransitionFilter<LevelDbCompatibleFilter>>{},
             header.kind, load);
  if (!filter) {
    throw FormatError("segbloom: filter kind " + std::to_string(header.kind) + " (" +
                      std::string(kind_name(header.kind)) + ") is not supported by this tool");
  }
  return {std::move(*filter), blob.size()};
}

}  // namespace

std::string_view cli_kind_name(const AnyFilter& filter) {
  constexpr std::string_view kNames[] = {"scalable",           "counting",           "leveldb",
                                         "transition-scalable", "transition-counting", "transition-leveldb"};
  static_assert(std::size(kNames) == std::variant_size_v<AnyFilter>);
  return kNames[filter.index()];
}

LoadedFilter read_filter_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw IoError(system_error("cannot open", path));
  if (S_ISDIR(st.st_mode)) throw IoError(path + ": is a directory");
  // Devices, FIFOs and sockets: /dev/zero would be read for ever, and add would rename
  // a file over a FIFO.
  if (!S_ISREG(st.st_mode)) throw IoError(path + ": not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(system_error("cannot open", path));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  try {
    if (::fstat(fd, &st) != 0) throw IoError(system_error("cannot read", path));
    const std::string blob = read_envelope(fd, path, static_cast<std::uint64_t>(st.st_size));
    return load_blob(blob);
  } catch (const FormatError& e) {
    std::string message = e.what();
    if (message.rfind("segbloom: ", 0) == 0) message.erase(0, 10);
    throw FormatError(path + ": not a valid segbloom filter file: " + message);
  } catch (const std::bad_alloc&) {  // the cells of a genuinely huge filter
    throw OutOfMemoryError(path + ": out of memory loading a filter of " + std::to_string(st.st_size) + " bytes");
  }
}

void check_writable(const std::string& path, bool overwrite) {
  check_replaceable(path);  // exit 4 for a device or FIFO, with or without --force
  if (!overwrite && exists(path)) throw RefusedError(path + ": file exists (use --force to replace it)");
}

void check_updatable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // the read reports it
  // The rename needs only the directory's permission: without this check a file its
  // owner made read-only would be rewritten. Root passes access(), so no write bit at
  // all counts as read-only for everyone.
  if (::access(path.c_str(), W_OK) != 0 || (st.st_mode & 0222) == 0) {
    throw IoError(path + ": read-only (not changed)");
  }
}

std::uint64_t write_filter_file(const std::string& path, const AnyFilter& filter, bool overwrite,
                                const std::function<void(std::uint64_t)>& announce) {
  check_writable(path, overwrite);
  const std::string blob = std::visit([](const auto& f) { return to_bytes(f); }, filter);
  std::function<void()> before_commit;
  if (announce) before_commit = [&] { announce(blob.size()); };
  write_file_atomically(path, blob, overwrite, before_commit);
  return blob.size();
}

void print_before_commit(std::ostream& out, const std::string& line, const std::string& path) {
  // "Exit non-zero = the file was not changed": a retried add must not count its ids twice.
  out << line;
  out.flush();
  if (!out) throw IoError("cannot write to standard output (" + path + " not changed)");
}

}  // namespace segbloom::cli
