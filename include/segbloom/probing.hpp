// segbloom: where a digest's k probes land in a slice of m cells.
//
// A probing scheme is a type with
//   using Digest = ...;                          // what one key hashes to, once
//   static constexpr unsigned kMaxProbes;        // largest k it supports
//   template <Key K> static Digest hash(const K&, std::uint64_t seed);
//   template <Key K> static void hash_many(std::span<const K>, std::uint64_t seed,
//                                          Digest* out);      // optional: a batch
//   template <class Visit>                       // visit(cell) -> bool: go on?
//   static bool probe(const Digest&, std::uint64_t cells, unsigned k, Visit&&);
//                                                // optional: template <unsigned kFixedProbes,
//                                                // class Visit> probe, an instance for k
//   template <class Word>                      // optional: a bit array's lookup, its
//   static bool all_set_in(Word&&, const Digest&, std::uint64_t cells, unsigned k);
//   template <class Word>                      // words read by word(i); and the same
//   static std::size_t all_set_many(Word, const Digest*, std::size_t n,
//                                   std::uint64_t cells, unsigned k, bool* found,
//                                   bool only_missing);    // for a group of keys
//   static std::uint64_t set_many(std::uint64_t* words, const Digest*, std::size_t n,
//                                 std::uint64_t cells, unsigned k, const bool* write,
//                                 bool* changed, bool prefetch); // optional: a group's inserts
//   template <class MarkKey, class LineOf>     // optional: the same for any cells
//   static std::uint64_t mark_many(const Digest*, std::size_t n, std::uint64_t cells,
//                                  unsigned k, const bool* write, bool* changed,
//                                  const MarkKey&, const LineOf& line_of, bool prefetch);
// `probe` returns false as soon as a visit returns false, true otherwise. `all_set_in`
// and `all_set_many`, where present, answer a bit-array slice's lookups faster than
// probe() (the concurrent filter's slices need them); their forms for packed 4-bit counters,
// `all_set_in<4>` and `all_set_many<4>` (DoubleHashingScheme's first template parameter),
// where present, a counting slice's; `set_many`, where present, a bit-array slice's batched
// inserts, and `mark_many` a counting slice's.
// Slices of different sizes share one digest: probing derives all their positions.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/bits.hpp"
#include "segbloom/detail/double_hashing_simd.hpp"
#include "segbloom/detail/fixed_probes.hpp"
#include "segbloom/detail/prefetch.hpp"
#include "segbloom/detail/simd_level.hpp"
#include "segbloom/hashing.hpp"

namespace segbloom {

// out[i] = Scheme::hash(keys[i], seed) for every key: several at once where the scheme
// has hash_many, one by one otherwise. What every batch calls to hash its keys.
template <class Scheme, Key K>
void hash_keys_with(std::span<const K> keys, std::uint64_t seed, typename Scheme::Digest* out) {
  if constexpr (requires { Scheme::hash_many(keys, seed, out); }) {
    Scheme::hash_many(keys, seed, out);
  } else {
    for (std::size_t i = 0; i < keys.size(); ++i) out[i] = Scheme::hash(keys[i], seed);
  }
}

// hash_keys_with for the group keys[start, start + n) of a batch that takes its keys in
// order, after prefetching the key array kKeysAhead keys on (one prefetch a line): the
// hash kernels' loads of the keys had waited on memory, the hardware's own prefetches
// falling behind beside the slices' misses. (Keys that keep their bytes elsewhere, as
// std::string does, get their objects prefetched, not their bytes.) Twenty-seventh round,
// Zen 4, 10^6 16-byte keys (16 MB) at p = 1 %, batched lookups (benchmark binaries
// alternating, 3 processes each, medians): classic negatives 12.9 -> 9.4 ns, positives
// 14.3 -> 9.8; blocked 5.0 -> 4.2 and 4.4 -> 4.2; u64 keys (8 MB) within 2 %.
inline constexpr std::size_t kKeysAhead = 64;
template <class Scheme, Key K>
void hash_group(std::span<const K> keys, std::size_t start, std::size_t n, std::uint64_t seed,
                typename Scheme::Digest* out) {
  constexpr std::size_t kKeysPerLine = sizeof(K) >= 64 ? 1 : 64 / sizeof(K);
  const std::size_t end = std::min(keys.size(), start + n + kKeysAhead);
  for (std::size_t j = start + kKeysAhead; j < end; j += kKeysPerLine) detail::prefetch(&keys[j]);
  hash_keys_with<Scheme>(keys.subspan(start, n), seed, out);
}

// Maps a 64-bit hash uniformly into [0, range) with one multiplication (Lemire's
// multiply-shift) instead of a 20-40 cycle division. Uses the hash's high bits.
__extension__ using uint128 = unsigned __int128;  // GCC and Clang; one MUL on x86-64

inline std::uint64_t reduce_range(std::uint64_t hash, std::uint64_t range) noexcept {
  return static_cast<std::uint64_t>((static_cast<uint128>(hash) * range) >> 64);
}

// Triple hashing (Dillinger & Manolios 2004) in 64-bit space, for the small classic slices
// whose double-hashing pattern floor would take them past their share (sizing.hpp,
// SliceShape::probing): x = h1, y = h2, z = a mix of both; probe i at reduce_range(x, m),
// then x += y, y += z. So probe i is x_i = h1 + i h2 + i (i - 1) / 2 z (mod 2^64) reduced by
// its high bits: three 64-bit numbers decide a key's positions, where DoubleHashingScheme's
// two are reduced below m first (m^2 patterns). z's high bits come from every bit of h1 and
// h2 (an odd multiplier), most of which the reductions of h1 and h2 never look at. One
// multiplication a probe, key by key: the SIMD kernels stay double hashing's.
struct TripleHashing {
  template <class Visit>
  static bool probe(const Digest128& digest, std::uint64_t cells, unsigned k, Visit&& visit) {
    std::uint64_t x = digest.low;
    std::uint64_t y = digest.high;
    const std::uint64_t z = (digest.low ^ std::rotl(digest.high, 32)) * 0x9e3779b97f4a7c15;  // 2^64 / golden ratio, odd
    for (unsigned i = 0; i < k; ++i) {
      if (!visit(reduce_range(x, cells))) return false;
      x += y;
      y += z;
    }
    return true;
  }
};

// The default scheme: XXH3-128 digest and enhanced double hashing (Dillinger &
// Manolios 2004) carried out modulo m without a division: a = h1 mod' m, b = h2 mod' m
// (mod' = multiply-shift), then probe a, a += b, b += i + 1, each sum folded back into
// [0, m) by subtraction. The quadratic term keeps probes apart where plain double
// hashing would repeat a stride. (Stepping the 64-bit hashes before reducing would
// lose that term: it only touches low bits, which multiply-shift ignores.)
struct DoubleHashingScheme {
  using Digest = Digest128;
  static constexpr unsigned kMaxProbes = 255;

  template <Key K>
  static Digest hash(const K& key, std::uint64_t seed) {
    return hash_key(key, seed);
  }

  // out[i] = hash(keys[i], seed), several keys at once where it can (hash_keys).
  template <Key K>
  static void hash_many(std::span<const K> keys, std::uint64_t seed, Digest* out) {
    hash_keys(keys, seed, out);
  }

  // True when all k probes are set in a bit array (bit i is bit i % 64 of word i / 64),
  // its words read by word(i) (a loaded slice's array, a stored blob's little-endian words,
  // or relaxed atomic loads of a shared array): the classic lookup. kCellBits = 4: the
  // cells are packed 4-bit counters (counter i in bits 4 (i % 16) and up of word i / 16, a
  // counting filter's), and a probe is set when its counter is not 0.
  //
  // Step i is b + i (i + 1) / 2 (b = the first step, in [0, m)). When b + k (k - 1) / 2 < m,
  // which holds for all but a share k (k - 1) / 2m of keys (b is uniform), no step reaches
  // m, so steps need no folding and each position + step < 2m folds with one subtraction:
  // probes 1..3 are p0 + b, p1 + b + 1, p2 + b + 3, each one add and one fold. Those first
  // 4 probes are followed by the only branch: a negative lookup at half fill passes it
  // with probability 1/16, so it is well predicted and most negatives read 4 lines; the
  // rest are tested without a branch. (An exit at the first clear bit would mispredict on
  // most negatives. A fifth probe before the branch, as the 8-key vectors take, measured
  // 1.03-1.15x the time per key on the Zen 5, 29 Nov 2026.) Other keys, and k < 4, take the
  // general sequence, with no early exit.
  // Each test adds the probe's bit to a count (detail::count_bit: BT and ADC on x86-64
  // without BMI2).
  // At 10^6 keys, p = 1 %, k = 7, one slice: against groups of 4 through probe(),
  // contains_many 12-17 % faster; against the same test folding every step, per-key
  // negatives 10.4 -> 8.6 ns and positives 14.3 -> 12.5 ns (the lookup alone).
  template <unsigned kCellBits = 1, class Word>
  static bool all_set_in(Word&& word, const Digest& digest, std::uint64_t cells, unsigned k) {
    static_assert(kCellBits == 1 || kCellBits == 4);
    std::uint64_t position = reduce_range(digest.low, cells);
    std::uint64_t step = reduce_range(digest.high, cells);
    unsigned set = 0;  // probes found set
    const auto test = [&word, &set](std::uint64_t cell) {
      if constexpr (kCellBits == 1) {
        detail::count_bit(set, word(cell >> 6), cell);
      } else {
        set += ((word(cell >> 4) >> ((cell & 15) * 4)) & 15) != 0;
      }
      return true;
    };
    if (k < 4 || !steps_stay_below(step, cells, k)) {
      probe_sequence<true>(position, step, 0, cells, k, test);
      return set == k;
    }
    const std::uint64_t p1 = fold(position + step, cells);
    const std::uint64_t p2 = fold(p1 + step + 1, cells);
    const std::uint64_t p3 = fold(p2 + step + 3, cells);
    test(position);
    test(p1);
    test(p2);
    test(p3);
    if (set != 4) return false;
    probe_sequence<false>(fold(p3 + step + 6, cells), step + 10, 4, cells, k, test);
    return set == k;
  }

  // found[i] = all_set_in(word, digests[i], cells, k) for i < n; with `only_missing`, only
  // for the i with !found[i] (keys a newer slice does not hold). Returns how many it set
  // true. For 4 <= k and m < 2^32, the same probes in vectors (detail/double_hashing_simd.hpp):
  // 8 keys at a time on AVX-512 CPUs, 4 on AVX2 CPUs; all_set_in takes the rest.
  template <unsigned kCellBits = 1, class Word>
  static std::size_t all_set_many(Word word, const Digest* digests, std::size_t n, std::uint64_t cells,
                                  unsigned k, bool* found, bool only_missing) {
    const auto one = [word, digests, cells, k](std::size_t i) {
      return all_set_in<kCellBits>(word, digests[i], cells, k);
    };
#ifdef SEGBLOOM_DOUBLE_HASHING_SIMD
    if (k >= 4 && cells < (std::uint64_t{1} << 32)) {
      if (detail::avx512_allowed()) {
        return detail::all_set_many_avx512<kCellBits>(word, digests, n, cells, k, found, only_missing, one);
      }
      if (detail::avx2_allowed()) {
        return detail::all_set_many_avx2<kCellBits>(word, digests, n, cells, k, found, only_missing, one);
      }
    }
#endif
    return detail::answer_group(found, n, only_missing, one);
  }

  // Classic inserts of a group of keys into a slice of m cells: marks the k probes of
  // each key i < n with write[i], in order, through mark_key(positions), which marks one
  // key's cells (positions(visit) calls visit(p) for each of its k positions, in probe()'s
  // order) and returns how many it took from clear to set; changed[i] = that count is not
  // 0 (false where !write[i]); returns the sum. The cells, results and count are those of
  // inserting the keys one after the other. On AVX-512 CPUs (set_many_in_vectors: k <= 32,
  // m < 2^32) the positions of 8 keys at a time come from vectors
  // (detail::mark_many_avx512), and with `prefetch` the lines holding the next 8 keys'
  // cells (line_of(p)) are prefetched before these 8 are marked; elsewhere key by key,
  // which still skips the filter's checks per key that a call per key makes. A counting
  // slice marks its counters through it.
  template <class MarkKey, class LineOf>
  static std::uint64_t mark_many(const Digest* digests, std::size_t n, std::uint64_t cells, unsigned k,
                                 const bool* write, bool* changed, const MarkKey& mark_key, const LineOf& line_of,
                                 bool prefetch) {
    const auto one = [&](std::size_t i) {
      return mark_key([&](auto&& visit) {
        probe(digests[i], cells, k, [&visit](std::uint64_t cell) {
          visit(cell);
          return true;
        });
      });
    };
    return mark_many_with<false>(digests, n, cells, k, write, changed, mark_key, one, line_of, prefetch);
  }

  // mark_many for a bit array: sets the probes' bits in `words`; returns how many it set.
  // (Its key-by-key form is written out rather than taken from mark_many: through the
  // generic marker GCC 12 kept the count of new bits in memory, and batched bit inserts
  // where the vectors are not taken measured 1.08-1.13x the time.)
  static std::uint64_t set_many(std::uint64_t* words, const Digest* digests, std::size_t n, std::uint64_t cells,
                                unsigned k, const bool* write, bool* changed, bool prefetch) {
    const auto set_bits = [words](auto&& positions) {
      std::uint64_t newly = 0;
      positions([words, &newly](std::uint64_t cell) { detail::set_bit(words[cell >> 6], cell, newly); });
      return newly;
    };
    const auto one = [=](std::size_t i) {
      std::uint64_t newly = 0;
      probe(digests[i], cells, k, [words, &newly](std::uint64_t cell) {
        detail::set_bit(words[cell >> 6], cell, newly);
        return true;
      });
      return newly;
    };
    const auto line_of = [words](std::uint64_t cell) { return words + (cell >> 6); };
    return mark_many_with<true>(digests, n, cells, k, write, changed, set_bits, one, line_of, prefetch);
  }

  // Whether mark_many (set_many) takes a slice of m cells and k probes 8 keys at a time in
  // vectors on this CPU (within SEGBLOOM_SIMD's cap), rather than key by key.
  static bool set_many_in_vectors(std::uint64_t cells, unsigned k) noexcept {
#ifdef SEGBLOOM_DOUBLE_HASHING_SIMD
    return k <= detail::kSetManyMaxProbes && cells < (std::uint64_t{1} << 32) && detail::avx512_allowed();
#else
    return false;
#endif
  }

  // The k probes: where no step reaches m (nearly every key), only positions are folded
  // (classic inserts at 10^6 keys, p = 1 %, alternating runs: 22.2 -> 20.8 ns).
  // kFixedProbes != 0: k must be that constant (detail/fixed_probes.hpp), and the probes of
  // a key whose steps stay below m are unrolled, each step's increment an immediate (the
  // same positions, in the same order, as with 0).
  template <unsigned kFixedProbes = 0, class Visit>
  static bool probe(const Digest& digest, std::uint64_t cells, unsigned k, Visit&& visit) {
    std::uint64_t position = reduce_range(digest.low, cells);
    std::uint64_t step = reduce_range(digest.high, cells);
    if (!steps_stay_below(step, cells, k)) return probe_sequence<true>(position, step, 0, cells, k, visit);
    if constexpr (kFixedProbes != 0) {
#pragma GCC unroll 16
      for (unsigned i = 0; i < kFixedProbes; ++i) {
        if (!visit(position)) return false;
        advance<false>(position, step, i, cells);
      }
      return true;
    } else {
      return probe_sequence<false>(position, step, 0, cells, k, visit);
    }
  }

  // A place in a key's probe sequence: probe `index`'s position, and the step to the next.
  // For lookups that test a key's probes in two parts (Slice::screen, Slice::prefetch_rest).
  struct ProbeCursor {
    std::uint64_t position;
    std::uint64_t step;
    unsigned index;
  };

  static ProbeCursor first_probe(const Digest& digest, std::uint64_t cells) noexcept {
    return {reduce_range(digest.low, cells), reduce_range(digest.high, cells), 0};
  }

  // Visits probes cursor.index .. end - 1 (the positions probe() visits), leaving the cursor
  // at probe `end`.
  template <class Visit>
  static void walk(ProbeCursor& cursor, std::uint64_t cells, unsigned end, Visit&& visit) {
    while (cursor.index < end) walk_one(cursor, cells, visit);
  }

  // The same for the next kCount probes, unrolled.
  template <unsigned kCount, class Visit>
  static void walk_n(ProbeCursor& cursor, std::uint64_t cells, Visit&& visit) {
    [&]<unsigned... I>(std::integer_sequence<unsigned, I...>) {
      (((void)I, walk_one(cursor, cells, visit)), ...);
    }(std::make_integer_sequence<unsigned, kCount>{});
  }

 private:
  // mark_many's walk, given how to mark one key from its positions (mark_key) and how to
  // mark key i alone (one(i)): 8 keys at a time in vectors where set_many_in_vectors, the
  // rest key by key. kByProbes: the vector walk's instance for k up to 16
  // (detail/fixed_probes.hpp), whose marks of a key are unrolled; else the one for k at
  // run time. Bit arrays (set_many) take it: 8 instructions a probe where the loop took 11
  // (counted in the disassembly; the timings are in mark_many_avx512's notes). Counters
  // (mark_many) do not: their increments cost more than the loop, and the 16 instances
  // (about 53 KB of code) measured 0.93 of the time at 10^4 keys and 1.01 at 10^6
  // (forty-first round, Intel Xeon, alternating, 6 processes each).
  template <bool kByProbes, class MarkKey, class One, class LineOf>
  static std::uint64_t mark_many_with(const Digest* digests, std::size_t n, std::uint64_t cells, unsigned k,
                                      const bool* write, bool* changed, const MarkKey& mark_key, const One& one,
                                      const LineOf& line_of, bool prefetch) {
#ifdef SEGBLOOM_DOUBLE_HASHING_SIMD
    if (set_many_in_vectors(cells, k)) {
      if constexpr (kByProbes) {
        using Fn = std::uint64_t (*)(const Digest*, std::size_t, std::uint64_t, unsigned, const bool*, bool*,
                                     const MarkKey&, const One&, const LineOf&, bool);
        static constexpr auto kByK = detail::table_by_probes<Fn>(
            []<unsigned K>() { return &detail::mark_many_avx512<K, MarkKey, One, LineOf>; });
        return detail::by_probes(kByK, k)(digests, n, cells, k, write, changed, mark_key, one, line_of, prefetch);
      } else {
        return detail::mark_many_avx512<0>(digests, n, cells, k, write, changed, mark_key, one, line_of, prefetch);
      }
    }
#else
    (void)digests;
    (void)cells;
    (void)k;
    (void)mark_key;
    (void)line_of;
    (void)prefetch;
#endif
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t newly = write[i] ? one(i) : 0;
      changed[i] = newly != 0;
      total += newly;
    }
    return total;
  }

  template <class Visit>
  static void walk_one(ProbeCursor& cursor, std::uint64_t cells, Visit& visit) {
    visit(cursor.position);
    cursor.position = fold(cursor.position + cursor.step, cells);
    cursor.step += ++cursor.index;
    while (cursor.step >= cells) cursor.step -= cells;  // at most 4 times: k <= 255, cells >= 64
  }

  // Steps b + i (i + 1) / 2, i < k, all below m: no step needs folding (see all_set_in).
  // (Probe k - 1 is reached with step k - 2; testing one step further keeps all_set_in,
  // which computes the step after probe 3 for k = 4 too, and probe() on the same keys.)
  static bool steps_stay_below(std::uint64_t step, std::uint64_t cells, unsigned k) noexcept {
    return step + k * (k - 1) / 2 < cells;
  }

  // sum < 2m folded into [0, m): the subtraction's sign picks (sub + cmov). Needs
  // m <= 2^63; slices have m <= 2^46.
  static std::uint64_t fold(std::uint64_t sum, std::uint64_t cells) noexcept {
    const std::uint64_t less = sum - cells;
    return static_cast<std::int64_t>(less) < 0 ? sum : less;
  }

  // Probes first .. k - 1, from probe `first`'s position and step. kFoldSteps: fold the
  // steps too (any key); without it, only for keys whose steps stay below m.
  template <bool kFoldSteps, class Visit>
  static bool probe_sequence(std::uint64_t position, std::uint64_t step, unsigned first,
                             std::uint64_t cells, unsigned k, Visit&& visit) {
    for (unsigned i = first; i < k; ++i) {
      if (!visit(position)) return false;
      advance<kFoldSteps>(position, step, i, cells);
    }
    return true;
  }

  // From probe `index` to the next: position + step, folded; the step grows by index + 1
  // (enhanced double hashing). kFoldSteps: fold the step too (needed once a step can
  // reach m; see steps_stay_below). walk_one spells the same move out on its cursor.
  template <bool kFoldSteps>
  static void advance(std::uint64_t& position, std::uint64_t& step, unsigned index, std::uint64_t cells) noexcept {
    position = fold(position + step, cells);
    step += index + 1;
    if constexpr (kFoldSteps) {
      while (step >= cells) step -= cells;  // at most 4 times: k <= 255, cells >= 64
    }
  }
};

}  // namespace segbloom
