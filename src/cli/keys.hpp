// segbloom CLI: how an id on the command line or standard input becomes a filter key.
//
// Text (the default): the key is the id's bytes, exactly as given (a std::string_view),
// so `add f abc` and filter.insert(std::string_view{"abc"}) set the same cells, and a
// LevelDB-compatible filter's slices answer LevelDB's KeyMayMatch("abc").
// --u64: the id is an unsigned 64-bit decimal integer and the key is that integer
// (hashed from its 8 little-endian bytes), as SeenStore stores numeric item ids; so
// `check --u64 blob.sbf 4711` answers what store.filter_unseen(user, {4711}) would.
// "42" as text and 42 as --u64 are different keys.
//
// Ids come from the arguments, or, when there are none, from standard input, one per
// line: a trailing "\r" is dropped (CRLF files) and empty lines are skipped.
#pragma once

#include <cstdint>
#include <istream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "arguments.hpp"

namespace segbloom::cli {

enum class KeyMode { text, u64 };

// Hands out ids in batches, from a list or from a stream.
class IdSource {
 public:
  // Reads `ids` when not empty, `in` otherwise.
  IdSource(const std::vector<std::string>& ids, std::istream& in) : ids_(ids), in_(in) {}

  // Replaces `batch` with the next ids (at most `max`); false when there are none left.
  bool next(std::vector<std::string>& batch, std::size_t max);

 private:
  const std::vector<std::string>& ids_;
  std::istream& in_;
  std::size_t next_index_ = 0;
};

// Calls fn(std::span<const K>) once with the batch's keys: K = std::string_view (text)
// or std::uint64_t (u64; throws UsageError for an id that is not a u64).
template <class Fn>
void with_keys(const std::vector<std::string>& batch, KeyMode mode, Fn&& fn) {
  if (mode == KeyMode::u64) {
    std::vector<std::uint64_t> keys;
    keys.reserve(batch.size());
    for (const std::string& id : batch) keys.push_back(parse_u64_id(id));
    fn(std::span<const std::uint64_t>(keys));
  } else {
    std::vector<std::string_view> keys(batch.begin(), batch.end());
    fn(std::span<const std::string_view>(keys));
  }
}

}  // namespace segbloom::cli
