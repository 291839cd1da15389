// segbloom: the exception thrown for stored data that cannot be trusted.
#pragma once

#include <stdexcept>
#include <string>

namespace segbloom {

// A serialized filter (envelope blob, Cereal archive or FilterView input) was refused:
// wrong magic, another kind, a newer format, truncation, a checksum mismatch, a value
// out of range, or a declared size above the caller's LoadLimits. what() says which.
// Thrown before any allocation proportional to a size the data declares.
class FormatError : public std::runtime_error {
 public:
  explicit FormatError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace segbloom
