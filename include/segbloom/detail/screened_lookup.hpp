// segbloom: batched lookups of classic filters too large for the cache, in two steps.
//
// A classic lookup reads up to k random lines of each slice. While the filter stays in the
// L3 those reads are cheap, and the 8-key vector test (DoubleHashingScheme::all_set_many)
// reads 5 probes of every key before its first exit. Beyond the L3 each line is a read from
// memory, and what costs is how many lines a key reads: prefetching all k of every key
// read 7 lines where a negative needs about 2 (at half fill each probe is set with
// probability 1/2). So the batch screens each key first: the lines of its first two probes
// in every slice are prefetched one group ahead, then tested (Slice::screen). A negative
// passes a slice's screen with probability 1/4. Only the keys that pass get the lines of
// their other probes prefetched, and are answered one group later, when those have
// arrived, by the slice's whole lookup (Slice::contains_group, which tests all k probes
// again: the screen only decides who is asked). Lines read per slice per negative: 2 +
// 5/4, against the 7 a prefetching batch read or the 5 of the vector test.
//
// Measured on the AMD EPYC Zen 5 (L3 32 MiB), 29 Nov 2026. First a scratch program with the
// library's headers, batches of 1024 u64 keys over as many queries as the filter holds,
// p = 1 %, best of 5 passes, ns a key, screened / as before (negatives; positives):
//   one slice of 162 MB:                    16.3 / 31.7;  37.5 / 33.9
//   one slice of 32.5 MB:                   11.9 / 20.8;  26.1 / 21.5
//   a window of 4 slices of 8.1 MB:         53.0 / 105.9; 58.7 / 133.1
//   a window of 4 slices of 4.1 MB:         38.3 / 59.3;  42.1 / 94.6
//   a window of 4 slices of 2.0 MB:         32.5 / 20.9;  35.1 / 30.5
// Two probes in the screen measured better than one (negatives 14.2 at 32.5 MB) or three
// (12.8). Then the benchmark binaries alternating, 3 processes each, new / old: one slice
// of 10^8 keys at 1 % (126 MB), batched negatives 0.62 (23.4 -> 14.5 ns), positives 1.20x
// (23.3 -> 28.0); one slice of 10^7 keys at 0.1 % (18 MB) 0.63-0.70 and 1.32-1.55x. So
// worth_screening: filters of several slices from half the L3 in all (both kinds of key
// gain), a filter of one slice only from the whole L3 (its absent keys take 0.6 of the
// time, its present ones 1.2x: they read all k lines either way, and pay the screen too;
// the L3 counted: at most 64 MiB, detail::kLevel3CapBytes);
// so too a list whose slices but one fit in L2 (a transition pair just after a change).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/prefetch.hpp"

namespace segbloom::detail {

// How many of a key's first probes the screen tests (all k, if fewer).
inline constexpr unsigned kScreenProbes = 2;

// Scheme::ProbeCursor where the scheme has one (the screen needs it), else an empty type.
template <class Scheme>
struct ProbeCursorOf {
  struct type {};
};
template <class Scheme>
  requires requires { typename Scheme::ProbeCursor; }
struct ProbeCursorOf<Scheme> {
  using type = typename Scheme::ProbeCursor;
};

// A classic slice's three steps, written once for every slice that screens (Slice,
// ConcurrentSlice), given its size in cells and probes, where cell c's line is
// (line(c)) and whether c is set (test(c)).
template <class Scheme>
struct ScreenSteps {
  using Digest = typename Scheme::Digest;
  using Cursor = typename Scheme::ProbeCursor;

  // Prefetches the lines of the key's screened probes.
  template <class Line>
  static void prefetch_screen(const Digest& digest, std::uint64_t cells, unsigned probes, Line&& line) noexcept {
    Cursor cursor = Scheme::first_probe(digest, cells);
    walk_screen(cursor, cells, probes, [&line](std::uint64_t cell) { prefetch(line(cell)); });
  }

  // Whether the key's screened probes are all set; `rest` = the place of the probe after them.
  template <class Test>
  static bool screen(const Digest& digest, std::uint64_t cells, unsigned probes, Cursor& rest, Test&& test) noexcept {
    rest = Scheme::first_probe(digest, cells);
    bool all = true;
    walk_screen(rest, cells, probes, [&all, &test](std::uint64_t cell) { all &= test(cell); });
    return all;
  }

  // Prefetches the lines of the probes from `rest` on.
  template <class Line>
  static void prefetch_rest(Cursor rest, std::uint64_t cells, unsigned probes, Line&& line) noexcept {
    Scheme::walk(rest, cells, probes, [&line](std::uint64_t cell) { prefetch(line(cell)); });
  }

 private:
  template <class Visit>
  static void walk_screen(Cursor& cursor, std::uint64_t cells, unsigned probes, Visit&& visit) noexcept {
    if (probes >= kScreenProbes) [[likely]] {
      Scheme::template walk_n<kScreenProbes>(cursor, cells, visit);
    } else {
      Scheme::walk(cursor, cells, probes, visit);
    }
  }
};

// worth_screening for `slices` (pointers to slices with memory_bytes()).
template <class SliceT>
bool worth_screening(std::span<const SliceT* const> slices) noexcept {
  std::uint64_t bytes = 0, largest = 0;
  for (const SliceT* s : slices) {
    const std::uint64_t slice_bytes = s->memory_bytes();
    bytes += slice_bytes;
    largest = std::max(largest, slice_bytes);
  }
  return worth_screening(bytes, largest);
}

// found[i] = whether any of `slices` holds key i, for i < count; returns how many keys are
// found. hash(start, n, digests) writes the digests of keys start .. start + n - 1. The
// slices are classic ones of a type with the screen (kScreenable: Slice, ConcurrentSlice).
template <class SliceT, class Digest, class Hash>
std::size_t screened_lookup(std::span<const SliceT* const> slices, std::size_t count, bool* found, Hash&& hash) {
  constexpr std::size_t kGroup = kLookupGroup;
  static_assert(kGroup <= 256);  // a key's place in its group fits a byte
  const std::size_t slice_count = slices.size();
  // Two groups are in flight: one being screened, the one before it being answered. For
  // each, per slice, the keys that passed: their digests and places in the group.
  std::vector<Digest> passed(2 * slice_count * kGroup);
  std::vector<std::uint8_t> passed_at(2 * slice_count * kGroup);
  std::vector<std::size_t> passed_count(2 * slice_count);
  std::array<Digest, kGroup> digests[2];
  std::array<typename SliceT::ProbeCursor, kGroup> rest{};  // (a triple-hashed slice's screen leaves it as it is)
  std::array<bool, kGroup> answers;
  std::fill_n(found, count, false);

  const std::size_t groups = (count + kGroup - 1) / kGroup;
  const auto prepare = [&](std::size_t g) {  // hashes group g, prefetches its screens' lines
    const std::size_t start = g * kGroup, n = std::min(kGroup, count - start);
    Digest* const d = digests[g & 1].data();
    hash(start, n, d);
    for (const SliceT* slice : slices) {
      for (std::size_t i = 0; i < n; ++i) slice->prefetch_screen(d[i]);
    }
  };
  if (groups > 0) prepare(0);
  for (std::size_t g = 0; g <= groups; ++g) {
    if (g + 1 < groups) prepare(g + 1);
    if (g < groups) {  // screen group g; prefetch the rest of the keys that pass
      const std::size_t n = std::min(kGroup, count - g * kGroup);
      const Digest* const d = digests[g & 1].data();
      for (std::size_t s = 0; s < slice_count; ++s) {
        const std::size_t at = ((g & 1) * slice_count + s) * kGroup;
        std::size_t kept = 0;
        for (std::size_t i = 0; i < n; ++i) {  // no branch: a negative passes 1 in 4
          const bool pass = slices[s]->screen(d[i], rest[kept]);
          passed[at + kept] = d[i];
          passed_at[at + kept] = static_cast<std::uint8_t>(i);
          kept += pass;
        }
        passed_count[(g & 1) * slice_count + s] = kept;
        for (std::size_t j = 0; j < kept; ++j) slices[s]->prefetch_rest(rest[j]);
      }
    }
    if (g > 0) {  // answer group g - 1
      const std::size_t prior = (g - 1) & 1;
      bool* const out = found + (g - 1) * kGroup;
      for (std::size_t s = 0; s < slice_count; ++s) {
        const std::size_t kept = passed_count[prior * slice_count + s];
        if (kept == 0) continue;
        const std::size_t at = (prior * slice_count + s) * kGroup;
        slices[s]->contains_group(passed.data() + at, kept, answers.data(), false);
        for (std::size_t j = 0; j < kept; ++j) out[passed_at[at + j]] |= answers[j];
      }
    }
  }
  return static_cast<std::size_t>(std::count(found, found + count, true));
}

}  // namespace segbloom::detail
