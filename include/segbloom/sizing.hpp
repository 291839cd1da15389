// segbloom: the sizing maths, in one place.
//
// A slice sized for n items at rate p uses k = ceil(-log2 p) probes; the textbook
// size is m = n * bpe bits with bpe = -ln p / ln^2 2 (p = 1 %: bpe 9.585, k 7;
// p = 0.1 %: bpe 14.378, k 10).
//
// A slice counts as full when half of its cells are set. With k probes per item the
// expected fill after n items is 1 - exp(-k n / m), which reaches 1/2 at
// n = m ln 2 / k. Because k is rounded up, the textbook m reaches half-full a little
// before n items (p = 1 %: at 0.95 n). segbloom therefore sizes a slice so that the
// half-full point lies six standard deviations of the fill beyond n items: a slice
// then takes its full capacity except with probability about 1e-9. That costs
// +5.3 % bits over the textbook at p = 1 % (k rounding) and +0.4 % at p = 0.1 %, plus
// the six-sigma margin: +2.8 % at 2 000 items, +0.9 % at 20 000, +0.1 % at 10^6.
//
// At the half-full trigger a slice's false-positive rate is (1/2)^k <= p by the
// choice of k, so the rate guarantee holds at every load, not only at design load.
//
// Pattern floor (classic layout). A key's k probes come from two numbers below m, the
// start a and the step b (enhanced double hashing, probing.hpp), so there are only m^2
// probe patterns: an absent key that draws an inserted key's (a, b) is found whatever the
// fill. A slice of n items adds about n / m^2 to fill^k, which the model above leaves
// out. It matters in small slices at low rates: at half fill n / m^2 = ln 2 / (k m), and
// (1/2)^k sits just under p_i. Measured (window of 8 slices, 20x capacity inserted, 5 * 10^7
// absent keys, double hashing throughout): capacity 2 000 at p = 0.1 % (250-item slices,
// k 13, 5 056 bits): 0.105 %, fill^k alone 0.095 %, n / m^2 0.0084 %; capacity 500 at
// 0.01 % and 4 slices: 0.0107 %; at the fullest moment (every slice full) 0.108 % and
// 0.0122 %.
//
// So such a slice stops taking writes at the fill f where the rate after the insert that
// fills it (up to k - 1 cells past f), fill^k + ln(1 - fill) / (-k m), reaches p_i, when
// that comes before half full (classic_full_fill: f = 0.4953 of 5 120 bits in the first
// case), and gets the bits to take its capacity before f (up to 6 % more; whole words, so
// up to one word more for slices of a word or two); estimates add n / m^2. Measured after
// (test_false_positives.cpp, "[floor]"): 0.098 % and 0.0094 % with every slice full.
// Slices of 10^4 items or more at p_i >= 10^-4 are never affected, but where p_i lies from a
// power of two to about 0.2 % above it ((1/2)^k leaves little or no room: they close up to about
// 30 cells early, with a word or two more).
//
// Triple hashing. A floor that would need a close below 0.48 of the bits (kLowestFullFill
// in sizing.cpp; more bits than the loaders' 1/16 tolerance) is left to the probing: such a
// slice (needs_triple_hashing) probes by triple hashing (SliceShape::probing, TripleHashing
// in probing.hpp), positions from three 64-bit numbers reduced probe by probe rather than
// two numbers below m. Slices take it up to 8 items at p_i = 10^-2, 33 at 10^-3, 253 at 10^-5,
// 1 941 at 10^-6, 8 * 10^4 at 10^-8 and 4.6 * 10^6 (27 MiB) at 10^-10, where double hashing's
// floor would be a large multiple of the share. Its probes are computed key by key, out of
// line (no SIMD kernels; BM_small_slice_lookup on a 576-bit slice: 1.6-1.8x double hashing's
// time for absent keys, 1.3-1.9x for present ones). It too leaves room for
// the insert that fills it: full at the fill f <= 1/2 where (f + (k - 1) / m)^k = p_i
// (triple_full_fill), with the bits to take its capacity before f; that matters in slices
// of a few words, where k - 1 cells are a large part of the bits. Measured ("[floor]", every
// slice of the window full): 125-item slices at 1.25e-5 (k 17; double hashing's rate at half
// fill 1.6x the share), 6.6e-5 for a target of
// 10^-4; 25-item slices at 2.5e-4 (k 12, 576 bits), 0.079 % for 0.1 % (full at half, as a
// first version had it, 0.118 %); each within 5 % of its estimate, fill^k with no floor
// term. Before (double hashing, floor in the rate): up to 1.1x the share for slices of up
// to 33 items at p_i = 10^-3, 1.4x up to 253 items at 10^-5, 1.6x up to 1 941 items at
// 10^-6, 1.6x up to 8 * 10^4 items at 10^-8 (more below those sizes).
// Slices stored before 2 Dec 2026 keep double hashing, and their answers.
// The blocked layout has (m / 512) 2^32 patterns: no floor to speak of.
//
// Blocked layout. All k probes of a key fall in one 512-bit block, chosen by the key.
// Blocks receive Poisson(lambda) keys, lambda = n * 512 / m. A block holding j keys has
// taken kj uniform probes, and with X of its bits set it answers "yes" to an absent key
// with chance (X / 512)^k; so the rate is E_j E[(X_kj / 512)^k] (blocked_rate), above the
// classic fill^k because crowded blocks answer "yes" more often, and above
// E_j[(1 - q^(kj))^k], q = 511/512, the rate of each block's mean fill, because X varies
// too. k is the smallest whose rate at half fill, by that mean-fill formula, is <= p
// (p = 1 %: k 7; 0.1 %: 11; 0.01 %: 16), and below the rate k = 48 reaches there (2.5e-7)
// a slice falls back to the classic layout: both as since 26 Nov 2026, because neither
// is stored. A slice closes at half fill unless the exact rate after the insert that fills
// it (up to k - 1 cells past the full count) would pass p_i: then k - 1 cells before the
// fill where the exact rate is p_i (blocked_full_cells; k 7: 0.951 % at half, p reached at
// 0.5038, so only slices of a few blocks close early; k 16 at 10^-4: 1.011e-4 at half, full
// at 0.4995 less 15 cells; k 48 at 2.545e-7: 0.4915 less 47 cells), and gets the bits to take
// its capacity before that point. Until 2 Dec 2026 blocked slices closed at half whatever
// the exact rate, so by the model a slice could end up to 1.32x its share (k 48); measured,
// a full slice at p_i = 10^-4 (k 16) had 1.006e-4 (now 0.986e-4). At large k the 48 salts
// keep a key's probes apart more than independent probes would, so the model bounds the
// measured rate from above (growing at 10^-5, k 30-48: 6.56e-6 measured, 8.80e-6 estimated;
// README "Blocked layout"). Stored slices sized for half full still load
// (serialization.hpp). Bits per item at the full point, before the six-sigma margin: 10.0 at
// 1 % (rate there 0.951 %), 15.7 at 0.1 % (0.0995 %), 22.8 at 0.01 % (0.0100 %).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "segbloom/options.hpp"

namespace segbloom {

// Bits per element of the textbook sizing: -ln p / (ln 2)^2.
double bits_per_element(double false_positive_rate);

// Probes k = ceil(ln 2 * bpe) = ceil(-log2 p). Exact powers of two are not rounded up
// by floating-point noise: p = 1/8 gives k = 3.
unsigned probes_for_rate(double false_positive_rate);

// Textbook size: ceil(n * bpe) rounded up to whole 64-bit words.
std::uint64_t textbook_bits(std::uint64_t items, double false_positive_rate);

// Size that lets `items` items with `probes` probes each be inserted before half of
// the bits are set, with a six-sigma margin; whole 64-bit words, at least one word.
std::uint64_t capacity_bits(std::uint64_t items, unsigned probes);

// Expected fraction of cells set after `items` items with `probes` probes each.
double expected_fill(std::uint64_t items, unsigned probes, std::uint64_t bits);

// False-positive rate of one slice whose fraction `fill` of cells is set: fill^k.
double rate_at_fill(double fill, unsigned probes);

// The classic layout's pattern floor (top of this file): items / bits^2.
double pattern_floor(std::uint64_t items, std::uint64_t bits);

// The fill at which a classic slice probed by double hashing stops taking writes: 1/2, or
// below it the fill f where the rate after the insert that fills the slice (up to k - 1
// cells past f), fill^k plus the pattern floor of the items that fill holds,
// ln(1 - fill) / (-k m), reaches `rate` (p_i), when f is 0.48 or more (else 1/2: such a
// slice, stored before 2 Dec 2026, keeps its floor in its rate; top of this file).
double classic_full_fill(double rate, unsigned probes, std::uint64_t bits);

// Whether a new classic slice of `bits` bits and k probes at `rate` probes by triple
// hashing: double hashing's floor would need a close below 0.48 (classic_full_fill).
bool needs_triple_hashing(double rate, unsigned probes, std::uint64_t bits);

// The fill at which a triple-hashed slice stops taking writes: the f <= 1/2 where the rate
// after the insert that fills it, (f + (k - 1) / m)^k, reaches `rate` (0 if none does).
// Below 1/2 by more than (k - 1) / m only where k was clamped below -log2 `rate`.
double triple_full_fill(double rate, unsigned probes, std::uint64_t bits);

// Compound rate of independent slices: 1 - prod(1 - p_i). Accumulate with
// `combine_rates(acc, p_i)` starting from acc = 0.
double combine_rates(double accumulated, double slice_rate);

// --- Blocked layout (512-bit blocks) -----------------------------------------

inline constexpr unsigned kBlockBits = 512;
inline constexpr unsigned kMaxBlockedProbes = 48;

// Rate of a blocked slice at mean Poisson load `keys_per_block` with k probes, exact for
// uniform independent probes; 1 from 10^5 keys a block up. Throws std::invalid_argument
// when keys_per_block is negative or NaN. 0.02-0.3 ms (a distribution of set bits carried
// probe by probe).
double blocked_rate(double keys_per_block, unsigned probes);

// Rate of a blocked slice whose fraction `fill` of bits is set.
double blocked_rate_at_fill(double fill, unsigned probes);

// Expected fraction of bits set in a blocked slice after `items` items:
// 1 - exp(-lambda (1 - q^k)), lambda = items * 512 / bits (below the classic fill).
double blocked_expected_fill(std::uint64_t items, unsigned probes, std::uint64_t bits);

// Smallest k <= 48 whose blocked rate at half fill, by the mean fill of a block (see the
// top of this file), is <= p; 0 when none is (the slice is then classic).
unsigned blocked_probes_for_rate(double false_positive_rate);

// The fill f in [0, 1) at which blocked_rate_at_fill(f, k) reaches p_i: its rate is at most
// p_i, and f + 2e-12 passes it (0 where that root is below 1e-12). Solved once per (p_i, k)
// and process (a few ms), then looked up. Throws std::invalid_argument when probes is
// outside [1, 48] or p_i outside (0, 1).
double blocked_fill_at_rate(double false_positive_rate, unsigned probes);

// Set cells from which a blocked slice of m bits is full: m / 2, or fewer where the insert
// that fills it (up to k - 1 cells past the count) could take the exact rate past p_i:
// floor(f m) - (k - 1), f = blocked_fill_at_rate(p_i, k); at least 1.
std::uint64_t blocked_full_cells(double false_positive_rate, unsigned probes, std::uint64_t bits);

// Blocked counterpart of capacity_bits: a multiple of 512 bits that takes `items`
// items before the fraction `full_fill` of its bits is set (blocked_full_cells), with the
// same six-sigma margin. Throws std::length_error above 2^46 items (no slice within the
// 2^46-bit limit holds so many), std::invalid_argument for a full fill outside (0, 1/2].
std::uint64_t blocked_capacity_bits(std::uint64_t items, unsigned probes, double full_fill = 0.5);

// How a classic slice places a key's k probes: by its scheme's own probing (DoubleHashingScheme's
// enhanced double hashing, LevelDB's format's own), or by triple hashing, which new slices
// take where double hashing's pattern floor is too large (top of this file; XXH3 scheme only).
// Blocked slices: always `scheme`. Stored in a slice's record (serialization.hpp).
enum class Probing : std::uint8_t { scheme = 0, triple_hashing = 1 };

// "scheme" or "triple hashing", for messages.
constexpr const char* probing_name(Probing probing) noexcept {
  return probing == Probing::triple_hashing ? "triple hashing" : "scheme";
}

// The plan for one slice of a filter.
struct SliceShape {
  Layout layout = Layout::classic;
  std::uint64_t capacity = 0;      // items it takes before it fills
  double false_positive_rate = 0;  // p_i, its share of the filter's target
  unsigned probes = 0;             // k_i
  std::uint64_t bits = 0;          // m_i, a multiple of 64 (blocked: of 512)
  // i, the place in the growing sequence this shape was planned for (window mode: 0).
  // Distinct among a growing filter's slices, so their rates sum to less than p.
  std::uint32_t index = 0;
  Probing probing = Probing::scheme;

  friend bool operator==(const SliceShape&, const SliceShape&) = default;
};

// Shape of slice `index` (0 = first) for `options`, which must be valid.
// Growing mode: n_i = ceil(n * growth^i), p_i = p * (1 - r) * r^i (sum of all p_i = p).
// Window mode (W slices): n_i = ceil(n / W), p_i = p / W. Classic slices that the
// pattern floor closes before half full get the bits to take n_i before that point; those
// it would close below 0.48 probe by triple hashing (Probing::triple_hashing) instead.
// `max_probes` clamps k (LevelDB's format stores at most 30).
// Options::layout == blocked gives blocked slices, except where the slice's rate is
// below the blocked floor (see above): that slice is classic.
// Throws std::length_error when the slice would exceed the representable size.
SliceShape slice_shape(const Options& options, std::uint32_t index, unsigned max_probes = 255);

// Rate of a slice of this shape holding `items` items with the fraction `fill` of its
// cells set (either layout; classic: fill^k, plus double hashing's pattern floor).
double slice_rate_at_fill(const SliceShape& shape, double fill, std::uint64_t items);

// Rate of a slice of this shape with `cells` of its cells set, holding the items that
// leave that fill on average (for the pattern floor): slice_rate_at_fill.
double slice_rate_at_cells(const SliceShape& shape, std::uint64_t cells);

// Items a slice of this shape holds on average when `cells` of its cells are set:
// -m ln(1 - f) / k (expected_fill solved for n).
std::uint64_t items_at_cells(const SliceShape& shape, std::uint64_t cells);

// Set cells at which a slice of this shape is full and stops taking writes: half of its
// cells, or fewer for a slice that closes earlier (classic_full_fill, triple_full_fill,
// blocked_full_cells).
std::uint64_t full_cells(const SliceShape& shape);

namespace detail {
// How many times this thread has evaluated blocked_rate (0.02-0.3 ms each), for the tests
// to bound the work of blocked_fill_at_rate's solve.
std::uint64_t blocked_rate_evaluations() noexcept;

// Set cells from which a slice of this probing scheme is full: full_cells, or half of
// them for a scheme whose shapes are planned otherwise (LevelDB's: kFullAtHalf).
template <class Scheme>
std::uint64_t full_cells_of(const SliceShape& shape) {
  if constexpr (requires { Scheme::kFullAtHalf; }) {
    if constexpr (Scheme::kFullAtHalf) return shape.bits / 2;
  }
  return full_cells(shape);
}

// A scheme whose probes all derive from one digest of Scheme::kDigestBits bits (LevelDB's
// 32-bit hash) finds an absent key that shares a held key's digest whatever the fill, so
// its floor is items / min(m^2, 2^bits): slice_rate_at_fill counts items / m^2, this adds
// the rest (from 2^16 bits up for a 32-bit digest; 10^6 items: 2.3e-4).
template <class Scheme>
double digest_floor_excess(const SliceShape& shape, double items) {
  if constexpr (requires { Scheme::kDigestBits; }) {
    const double m = static_cast<double>(shape.bits);
    const double digests = std::ldexp(1.0, static_cast<int>(Scheme::kDigestBits));
    if (m * m > digests) return items / digests - items / (m * m);
  }
  return 0.0;
}

// slice_rate_at_fill and slice_rate_at_cells for a slice probed by this scheme.
template <class Scheme>
double scheme_rate_at_fill(const SliceShape& shape, double fill, std::uint64_t items) {
  return std::min(1.0, slice_rate_at_fill(shape, fill, items) +
                           digest_floor_excess<Scheme>(shape, static_cast<double>(items)));
}
template <class Scheme>
double scheme_rate_at_cells(const SliceShape& shape, std::uint64_t cells) {
  return std::min(1.0, slice_rate_at_cells(shape, cells) +
                           digest_floor_excess<Scheme>(shape, static_cast<double>(items_at_cells(shape, cells))));
}

// Set cells a slice of this scheme reaches by its own inserts, with one writer: the insert
// that fills it starts below its full count and sets at most k cells, so k - 1 past it.
template <class Scheme>
std::uint64_t reach_cells_of(const SliceShape& shape) {
  return std::min(shape.bits, full_cells_of<Scheme>(shape) + shape.probes - 1);
}
}  // namespace detail

}  // namespace segbloom
