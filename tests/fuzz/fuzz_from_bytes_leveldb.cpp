// libFuzzer target: from_bytes<LevelDbCompatibleFilter>, FilterView and the bare Cereal archive on
// arbitrary bytes (see fuzz_from_bytes.hpp); also the input as a raw LevelDB filter blob, read
// by leveldb_format::key_may_match (any answer, no crash) and by
// LevelDbCompatibleFilter::from_blobs (a filter that answers as key_may_match, or
// std::invalid_argument). Run by scripts/fuzz.sh.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_from_bytes.hpp"
#include "segbloom/leveldb_compatible_filter.hpp"
#include "segbloom/leveldb_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace segbloom;
  fuzz::from_bytes_one_input<LevelDbCompatibleFilter>(data, size);
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  const std::string keys[] = {"", "a", "user:42", std::string(40, 'k')};
  for (const std::string& key : keys) (void)leveldb_format::key_may_match(key, raw);
  // One slice of a growing filter at p = 1 %, with the capacity whose first slice has the
  // blob's length (from a table of capacities 1-4096, built once), so that the blob gets
  // past from_blobs' length check and its probe count and bits are what is fuzzed; and
  // capacity 1 for every input, which checks the length.
  static const std::vector<std::uint64_t> capacity_of_size = [] {
    std::vector<std::uint64_t> table;
    for (std::uint64_t capacity = 4096; capacity >= 1; --capacity) {
      Options o;
      o.capacity = capacity;
      o.false_positive_rate = 0.01;
      const std::size_t bytes = LevelDbCompatibleFilter(o).slice_blob(0).size();
      if (table.size() <= bytes) table.resize(bytes + 1, 0);
      table[bytes] = capacity;  // the smallest capacity of that length
    }
    return table;
  }();
  const std::uint64_t fitting = size < capacity_of_size.size() ? capacity_of_size[size] : 0;
  for (const std::uint64_t capacity : {std::uint64_t{1}, fitting}) {
    if (capacity == 0) continue;
    Options o;
    o.capacity = capacity;
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
