// segbloom CLI: exit codes and the errors that map to them.
//
//   0  success (check exits 0 whether or not the ids are present)
//   1  unexpected internal error (a bug, or out of memory)
//   2  bad usage: unknown command or option, missing or malformed argument, options
//      out of range or that the kind refuses (whether or not the output file exists)
//   3  bad file: not a segbloom filter file, truncated, corrupt, or of a kind the tool
//      cannot read (segbloom::FormatError)
//   4  I/O error: a file cannot be opened, read (also part-way: EIO), written or renamed
//   5  operation refused: merge of filters that differ or hold too much together, a
//      conversion that does not exist, an output file that exists (without --force), a
//      growing filter at its slice limit
//
// Every error is one line on standard error starting with "segbloom: ".
#pragma once

#include <stdexcept>
#include <string>

namespace segbloom::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBadFile = 3;
inline constexpr int kExitIo = 4;
inline constexpr int kExitRefused = 5;

// Exit code 2. what() is the message without the "segbloom: " prefix.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

// Exit code 4.
class IoError : public std::runtime_error {
 public:
  explicit IoError(const std::string& what) : std::runtime_error(what) {}
};

// Exit code 1: memory ran out for a named file (a filter too large for this machine).
class OutOfMemoryError : public std::runtime_error {
 public:
  explicit OutOfMemoryError(const std::string& what) : std::runtime_error(what) {}
};

// Exit code 5.
class RefusedError : public std::runtime_error {
 public:
  explicit RefusedError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace segbloom::cli
