// libFuzzer target: from_bytes<LevelDbCompatibleFilter>, FilterView and the bare Cereal archive on
// arbitrary bytes (see fuzz_from_bytes.hpp); also the input as a raw LevelDB filter blob, read
// by leveldb_format::key_may_match (any answer, no crash) and by
// LevelDbCompatibleFilter::from_blobs (a filter that answers as key_may_match, or
// std::invalid_argument). Run by scripts/fuzz.sh.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fuzz_from_bytes.hpp"
#include "segbloom/leveldb_compatible_filter.hpp"
#include "segbloom/leveldb_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace segbloom;
  fuzz::from_bytes_one_input<LevelDbCompatibleFilter>(data, size);
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  const std::string keys[] = {"", "a", "user:42", std::string(40, 'k')};
  for (const std::string& key : keys) (void)leveldb_format::key_may_match(key, raw);
  // One slice of a growing filter, p = 1 %, capacity from the blob's length (bits = 8 *
  // (size - 1) when the length is one the options give).
  for (const std::uint64_t capacity : {std::uint64_t{1}, std::uint64_t{100}, (size > 1 ? size - 1 : 1) * 8 / 10}) {
    Options o;
    o.capacity = capacity == 0 ? 1 : capacity;
    o.false_positive_rate = 0.01;
    try {
      const std::string_view blobs[] = {raw};
      const LevelDbCompatibleFilter f = LevelDbCompatibleFilter::from_blobs(o, blobs);
      for (const std::string& key : keys) {
        if (f.contains(std::string_view(key)) != leveldb_format::key_may_match(key, raw)) {
          fuzz::fail("from_blobs answers differently from key_may_match");
        }
      }
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}
