// The check shared by the sizing searches' per-thread memos (capacity_bits,
// blocked_capacity_bits; src/sizing.cpp's SizeMemo keeps 16 answers a thread).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

namespace segbloom::test {

// 40 sizes asked of size(items, probes), then asked again in the opposite order: the
// last ones come from the memo, the first from the search again after their eviction;
// each also on a thread of its own, whose memo starts empty, so its answer is the search's.
template <class Size>
void check_memo_answers_as_search(const Size& size) {
  std::vector<std::pair<std::uint64_t, unsigned>> asked;
  std::vector<std::uint64_t> first;
  for (unsigned i = 0; i < 40; ++i) {
    asked.emplace_back(1000 + 977 * (i / 2), 1 + i % 20);  // pairs share an item count
    first.push_back(size(asked.back().first, asked.back().second));
  }
  for (unsigned i = 40; i-- > 0;) {
    INFO("n = " << asked[i].first << ", k = " << asked[i].second);
    CHECK(size(asked[i].first, asked[i].second) == first[i]);
    CHECK(size(asked[i].first, asked[i].second) == first[i]);  // from the memo
    std::uint64_t fresh = 0;
    std::thread([&] { fresh = size(asked[i].first, asked[i].second); }).join();
    CHECK(fresh == first[i]);
  }
}

}  // namespace segbloom::test
