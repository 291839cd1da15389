// Golden values: the exact cells a few fixed keys set. A change of hashing, probing or
// sizing would make stored filters answer wrongly, so it must fail here first.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "segbloom/segbloom.hpp"

using namespace segbloom;

namespace {

template <class K>
std::vector<std::uint64_t> cells_of(const K& key, const Options& o) {
  ScalableBloomFilter f(o);
  f.insert(key);
  std::vector<std::uint64_t> cells;
  const auto words = f.slices().front().cells().words();
  for (std::uint64_t i = 0; i < words.size() * 64; ++i) {
    if ((words[i / 64] >> (i % 64)) & 1) cells.push_back(i);
  }
  return cells;
}

std::string show(const std::vector<std::uint64_t>& v) {
  std::string s;
  for (auto x : v) s += std::to_string(x) + ", ";
  return s;
}

}  // namespace

TEST_CASE("golden cells for fixed keys and options", "[golden]") {
  Options o;
  o.capacity = 2000;
  o.false_positive_rate = 0.001;
  // First slice of a growing filter: p_0 = 0.001 * (1 - 0.8) = 2e-4, so k = 13.
  const SliceShape shape = slice_shape(o, 0);
  CHECK(shape.bits == 38464);
  CHECK(shape.probes == 13);
  CHECK(cells_of(std::uint64_t{4711}, o) ==
        std::vector<std::uint64_t>{471, 4747, 4907, 9033, 13287, 17603, 17605, 21831, 26139, 26182,
                                   30380, 34674, 34771});
  CHECK(cells_of(std::string_view{"video:abc"}, o) ==
        std::vector<std::uint64_t>{3270, 7690, 10990, 12114, 15354, 16541, 19729, 20970, 24114,
                                   25400, 28508, 32910, 37319});
  Options s = o;
  s.seed = 42;
  s.max_slices = 4;  // window slices: 500 items at 2.5e-4, k = 12
  CHECK(slice_shape(s, 0).bits == 9152);
  CHECK(slice_shape(s, 0).probes == 12);
  CHECK(cells_of(std::uint32_t{7}, s) ==
        std::vector<std::uint64_t>{581, 849, 1502, 2425, 3351, 4281, 5216, 6157, 7105, 8061, 8813,
                                   9026});
  INFO(show(cells_of(std::uint64_t{4711}, o)));
}
