#include "segbloom/sizing.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <mutex>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace segbloom {
namespace {

constexpr double kLn2 = std::numbers::ln2;
constexpr double kSigmas = 6.0;
// Lowest fill a double-hashing slice closes at for its pattern floor. Taking its capacity
// before it needs ln 2 / -ln(1 - f) times the bits: 1.06x at 0.48, within the 1/16 by which
// the loaders let stored slices differ from planned ones, so slices stored before the floor
// was accounted for (1 Dec 2026) still load (a scan of 76 000 shapes, 1 to 3 * 10^6 items at
// 0.5 to 10^-12: none refused, at most 5.6 % more bits from 4 096 bits up). A slice whose
// floor would need a lower fill probes by triple hashing (sizing.hpp).
constexpr double kLowestFullFill = 0.48;
// Largest slice: 2^46 bits (8 TiB). Far beyond any real slice, far below overflow.
constexpr double kMaxSliceBits = 70368744177664.0;
// Most items blocked_capacity_bits sizes for, 2^46: every slice within kMaxSliceBits holds
// fewer, and its block counts stay far below 2^53, where the search's doubles stop
// holding every integer (4 10^18 items never finished).
constexpr std::uint64_t kMaxCapacityItems = std::uint64_t{1} << 46;

std::uint64_t round_up_to_words(double bits) {
  const auto whole = static_cast<std::uint64_t>(std::ceil(bits));
  const std::uint64_t words = (whole + 63) / 64;
  return (words == 0 ? 1 : words) * 64;
}

// Distance of the full point (fraction `full` of the bits set; 1/2 but where the pattern
// floor closes a classic slice earlier) beyond `items` inserts, in bits, minus the margin:
// m full - E[set] - z * sigma[set]. Increasing in m; we want the smallest m where >= 0.
double spare_bits(double items, double probes, double bits, double full = 0.5) {
  const double a = items * probes / bits;
  const double empty = std::exp(-a);
  const double variance = bits * empty * (1.0 - (1.0 + a) * empty);
  return bits * (empty - (1.0 - full)) - kSigmas * std::sqrt(variance > 0 ? variance : 0.0);
}

// The last 16 sizes one thread's searches found, by (items, probes). A service sizes the
// same few slices again and again: every user's filter has the same options, and every
// load plans its slices again to check the stored ones, so each search (capacity_bits,
// blocked_capacity_bits) keeps its own memo. Per thread, so no lock.
class SizeMemo {
 public:
  template <class Search>
  std::uint64_t bits(std::uint64_t items, unsigned probes, const Search& search, double rate = 0) {
    for (const Entry& e : entries_) {
      if (e.probes == probes && e.items == items && e.rate == rate && probes != 0) return e.bits;
    }
    const std::uint64_t found = search();
    entries_[next_++ % entries_.size()] = {items, probes, rate, found};
    return found;
  }

 private:
  struct Entry {
    std::uint64_t items = 0;
    unsigned probes = 0;  // 0: empty
    double rate = 0;      // the slice's p_i, for searches that depend on it
    std::uint64_t bits = 0;
  };
  std::array<Entry, 16> entries_{};
  std::size_t next_ = 0;
};

}  // namespace

double bits_per_element(double p) { return -std::log(p) / (kLn2 * kLn2); }

unsigned probes_for_rate(double p) {
  const double exact = kLn2 * bits_per_element(p);  // = -log2 p
  const double k = std::ceil(exact - 1e-9);
  return k < 1 ? 1u : static_cast<unsigned>(k);
}

std::uint64_t textbook_bits(std::uint64_t items, double p) {
  return round_up_to_words(static_cast<double>(items) * bits_per_element(p));
}

std::uint64_t capacity_bits(std::uint64_t items, unsigned probes) {
  // A bisection of about log2(n k / ln 2) - 2 steps (14 for a 2 000-item slice, at most
  // 80), each an exp and a sqrt: 9 % of a TransitionView request's samples (open a
  // 2-filter blob, 500 lookups) and 4 % more in exp, before this memo (Intel Xeon, 30 Nov
  // 2026).
  thread_local SizeMemo memo;
  return memo.bits(items, probes, [items, probes] {
    const double n = static_cast<double>(items);
    const double k = probes;
    double lo = n * k / kLn2;  // expected half-full exactly at n: spare < 0
    double hi = lo * 1.25 + 512;
    while (spare_bits(n, k, hi) < 0) hi *= 2;
    for (int i = 0; i < 80 && hi - lo > 1.0; ++i) {
      const double mid = (lo + hi) / 2;
      (spare_bits(n, k, mid) < 0 ? lo : hi) = mid;
    }
    return round_up_to_words(hi);
  });
}

double expected_fill(std::uint64_t items, unsigned probes, std::uint64_t bits) {
  // 1 - (1 - 1/m)^(k n), computed without cancellation.
  const double t = static_cast<double>(items) * probes;
  return -std::expm1(t * std::log1p(-1.0 / static_cast<double>(bits)));
}

double rate_at_fill(double fill, unsigned probes) { return std::pow(fill, probes); }

double pattern_floor(std::uint64_t items, std::uint64_t bits) {
  const double m = static_cast<double>(bits);
  return static_cast<double>(items) / (m * m);
}

namespace {
// A double-hashing slice's rate at fill f: it holds about -m ln(1 - f) / k items, so
// g(f) = f^k - ln(1 - f) / (k m), increasing in f.
double double_hashing_rate(double fill, unsigned probes, double bits) {
  const double f = std::min(fill, 1.0);
  return rate_at_fill(f, probes) - std::log1p(-f) / (probes * bits);
}
// The same after the insert that reaches f, which may set k - 1 more cells: g(f + (k - 1) / m).
double double_hashing_rate_after(double fill, unsigned probes, double bits) {
  return double_hashing_rate(fill + (probes - 1) / bits, probes, bits);
}
}  // namespace

bool needs_triple_hashing(double rate, unsigned probes, std::uint64_t bits) {
  return double_hashing_rate_after(kLowestFullFill, probes, static_cast<double>(bits)) > rate;
}

double classic_full_fill(double rate, unsigned probes, std::uint64_t bits) {
  // Half full unless g(1/2 + (k - 1) / m) > p_i (double_hashing_rate_after); then the f
  // below 1/2 where g(f + (k - 1) / m) = p_i, by bisection: room for the insert that fills
  // the slice, so a full slice is within its share (and a full filter passes merge's
  // check). Below kLowestFullFill: half full, the floor left in the rate.
  const double m = static_cast<double>(bits);
  const auto rate_after = [probes, m](double f) { return double_hashing_rate_after(f, probes, m); };
  if (rate_after(0.5) <= rate) return 0.5;
  if (rate_after(kLowestFullFill) > rate) return 0.5;
  double lo = kLowestFullFill, hi = 0.5;
  for (int i = 0; i < 50; ++i) {
    const double mid = (lo + hi) / 2;
    (rate_after(mid) <= rate ? lo : hi) = mid;
  }
  return lo;
}

namespace {

// The full point by which double-hashing slices are sized: classic_full_fill as it was on 1 Dec
// 2026, half full unless the floor takes g(1/2) itself past p_i. A slice where only the room
// for the last insert moves the full point (g(1/2) <= p_i < g(1/2 + (k - 1) / m)) closes those
// few cells earlier at its old size (up to about 30): its capacity still lies at least 4.5
// standard deviations of the set count before that point rather than 6, a chance below
// 4 * 10^-6 of closing before it, which only opens the next slice early (scans of 1 to
// 3 * 10^6 items at rates from 0.5 to 10^-15 and near every power of two: 1 111 of 30 985
// double-hashing shapes close earlier, by up to 24 cells, at 4.6 sigma or more; a review's
// grid found 24 items at 3.66e-4 at 4.5 sigma and 10^4 items at 2^-13 28 cells earlier).
double sized_full_fill(double rate, unsigned probes, std::uint64_t bits) {
  if (double_hashing_rate(0.5, probes, static_cast<double>(bits)) <= rate) return 0.5;
  return classic_full_fill(rate, probes, bits);
}

// Cells set at fill f of m bits, as full_cells counts them for double hashing.
std::uint64_t sized_cells(double fill, std::uint64_t bits) {
  if (fill == 0.5) return bits / 2;
  const auto cells = static_cast<std::uint64_t>(std::ceil(fill * static_cast<double>(bits)));
  return cells == 0 ? std::uint64_t{1} : cells;
}

// A classic slice that closes before half full (full_fill(bits): classic_full_fill or
// triple_full_fill) needs more bits than capacity_bits to take its capacity: the smallest
// whole-word size from `from` up whose full fill lies six sigma beyond `items`. The full
// fill rises with m, so the margin does too: a bisection. A few percent above `from` at
// most for double hashing (see sizing.hpp); per thread, remembered like capacity_bits (one
// memo per probing: `Fill` is a different type for each).
template <class Fill>
std::uint64_t early_close_capacity_bits(std::uint64_t items, unsigned probes, double rate, std::uint64_t from,
                                        Fill full_fill) {
  thread_local SizeMemo memo;
  return memo.bits(
      items, probes,
      [=] {
        const double n = static_cast<double>(items);
        const auto spare = [&](std::uint64_t words) {
          const std::uint64_t bits = words * 64;
          return spare_bits(n, probes, static_cast<double>(bits), full_fill(bits));
        };
        std::uint64_t lo = from / 64, hi = lo * 2;  // spare(lo) < 0 <= spare(hi)
        if (spare(lo) >= 0) return from;           // the six-sigma margin covers it already
        while (spare(hi) < 0) hi *= 2;
        while (hi - lo > 1) {
          const std::uint64_t mid = lo + (hi - lo) / 2;
          (spare(mid) < 0 ? lo : hi) = mid;
        }
        return hi * 64;
      },
      rate);
}

}  // namespace

double triple_full_fill(double rate, unsigned probes, std::uint64_t bits) {
  // (f + (k - 1) / m)^k <= p_i. p_i^(1/k) >= 1/2 (k >= -log2 p_i), so f reaches 1/2 as m
  // grows. Where k was clamped below -log2 p_i (255 probes: p_i < 2^-255) the root lies
  // below 1/2 and the slice closes there, still within its share: p_i^(1/255) >= 0.054 for
  // every positive double, so its bits stay under 3x bits_per_element(p_i).
  const double fill = std::pow(rate, 1.0 / probes) - (probes - 1) / static_cast<double>(bits);
  return std::clamp(fill, 0.0, 0.5);
}

std::uint64_t full_cells(const SliceShape& shape) {
  if (shape.layout == Layout::blocked) {
    // k is at most 48 in every blocked shape made or loaded (serialization.hpp checks).
    return blocked_full_cells(shape.false_positive_rate, shape.probes, shape.bits);
  }
  if (shape.probing == Probing::triple_hashing) {
    // The insert that fills the slice starts below full_cells and sets at most k cells, so
    // it ends at most k - 1 cells past floor(f m): floor, where the ceiling could be one more.
    const double fill = triple_full_fill(shape.false_positive_rate, shape.probes, shape.bits);
    if (fill == 0.5) return shape.bits / 2;
    const auto cells = static_cast<std::uint64_t>(std::floor(fill * static_cast<double>(shape.bits)));
    return cells == 0 ? std::uint64_t{1} : cells;
  }
  // Every slice made or loaded asks (a seen-store request loads a user's 8); a floored
  // slice's answer is a bisection of 50 pow and log1p, so it is remembered per thread.
  thread_local SizeMemo memo;
  return memo.bits(
      shape.bits, shape.probes,
      [&shape] {  // (bits are whole words: even)
        return sized_cells(classic_full_fill(shape.false_positive_rate, shape.probes, shape.bits), shape.bits);
      },
      shape.false_positive_rate);
}

// --- Blocked layout -------------------------------------------------------------

namespace {

constexpr double kBlockMiss = 1.0 - 1.0 / kBlockBits;  // q: a probe misses a given bit

// x^k for a small integer k, by squaring (k <= kMaxBlockedProbes: at most 11 products).
double power(double x, unsigned k) {
  double result = 1;
  for (; k != 0; k >>= 1, x *= x) {
    if (k & 1) result *= x;
  }
  return result;
}

// Poisson(j; lambda) for the j that matter (+-12 sigma), j from `first`. From the mode
// outward by P(j + 1) = P(j) lambda / (j + 1): one lgamma for the whole range, where a
// log, an lgamma and an exp per term (and a pow or three per term in the sums below) made
// building or loading a blocked filter cost 0.2-0.5 ms (AMD EPYC Zen 3: a 2 000-item
// filter at 0.1 %, 2 slices, loaded and asked 500 keys in 304-352 us against 10-11 us for
// the classic layout: BM_request_from_bytes_500). The same capacities as before for every
// k from 1 to 48 and 8 304 item counts from 1 to 2 10^10, rates within 2e-12; a search
// 240 -> 17 us on average. Terms too small for a double come out 0, as they did.
struct PoissonTerms {
  long first = 0;
  std::vector<double> weights;
};
PoissonTerms poisson_terms(double lambda) {
  const double spread = 12.0 * std::sqrt(lambda) + 40.0;
  PoissonTerms terms;
  terms.first = static_cast<long>(std::max(0.0, std::floor(lambda - spread)));
  const auto last = static_cast<long>(std::ceil(lambda + spread));
  terms.weights.resize(static_cast<std::size_t>(last - terms.first + 1));
  const long mode = std::clamp(static_cast<long>(std::floor(lambda)), terms.first, last);
  const double mode_d = static_cast<double>(mode);
  double& at_mode = terms.weights[static_cast<std::size_t>(mode - terms.first)];
  int sign = 0;  // lgamma_r: std::lgamma writes the global signgam, a race between threads
  const double log_mode =
      -lambda + (mode == 0 ? 0.0 : mode_d * std::log(lambda)) - ::lgamma_r(mode_d + 1, &sign);
  at_mode = std::exp(log_mode);
  for (long j = mode; j < last; ++j) {
    const auto i = static_cast<std::size_t>(j - terms.first);
    terms.weights[i + 1] = terms.weights[i] * lambda / static_cast<double>(j + 1);
  }
  for (long j = mode; j > terms.first; --j) {
    const auto i = static_cast<std::size_t>(j - terms.first);
    terms.weights[i - 1] = terms.weights[i] * static_cast<double>(j) / lambda;
  }
  // The range holds all but ~1e-33 of the mass, so the weights should sum to 1; the mode's
  // weight does not quite, being e to a small difference of terms of size lambda log lambda
  // (relative error ~1e-10 at lambda = 9 10^4, as each term had before). Normalised.
  double total = 0;
  for (const double w : terms.weights) total += w;
  for (double& w : terms.weights) w /= total;
  return terms;
}

// Keys per block where the mean fill reaches 1/2: 1 - exp(-lambda (1 - q^k)) = 1/2.
double blocked_half_fill_load(unsigned k) { return kLn2 / (1.0 - std::pow(kBlockMiss, k)); }

// Expected set bits of one block, and their variance, at mean load lambda. A block
// with j keys has kj uniform probes over 512 bits: occupancy mean and variance exact.
// The chance that a given bit (a given pair of bits) is still clear after j keys is
// empty1^j (empty2^j), taken step by step along the terms.
void blocked_block_moments(double lambda, unsigned k, double& mean, double& variance) {
  const double b = kBlockBits;
  const PoissonTerms terms = poisson_terms(lambda);
  const double step1 = power(kBlockMiss, k), step2 = power(1.0 - 2.0 / b, k);
  double empty1 = std::pow(step1, static_cast<double>(terms.first));
  double empty2 = std::pow(step2, static_cast<double>(terms.first));
  double sum = 0, sum_squares = 0;
  for (const double weight : terms.weights) {
    const double mu = b * (1.0 - empty1);
    const double var = std::max(0.0, b * empty1 + b * (b - 1) * empty2 - b * b * empty1 * empty1);
    sum += weight * mu;
    sum_squares += weight * (var + mu * mu);
    empty1 *= step1;
    empty2 *= step2;
  }
  mean = sum;
  variance = std::max(0.0, sum_squares - mean * mean);
}

}  // namespace

namespace {
thread_local std::uint64_t blocked_rate_calls = 0;  // detail::blocked_rate_evaluations
}  // namespace

std::uint64_t detail::blocked_rate_evaluations() noexcept { return blocked_rate_calls; }

double blocked_rate(double lambda, unsigned k) {
  if (!(lambda >= 0)) throw std::invalid_argument("segbloom: blocked_rate needs keys_per_block >= 0");
  ++blocked_rate_calls;
  // From 10^5 keys a block, every term that matters is 1 to double precision (the
  // smallest, j = lambda - 12 sigma - 40, leaves a bit clear with chance e^-187 at k = 1),
  // and the sum, over 7 600 terms and more, would only add rounding.
  if (lambda >= 1e5) return 1.0;
  // A block holding j keys has taken kj uniform probes; with X of its bits set, an absent
  // key's k probes (uniform, independent) all hit with chance (X / 512)^k. So the rate is
  // E_j E[(X_kj / 512)^k], with the distribution of X_n (set bits after n probes) carried
  // probe by probe: X stays with chance X / 512, else grows by one.
  //
  // Until 2 Dec 2026 the inner term was (E[X_kj] / 512)^k = (1 - q^(kj))^k, which leaves out
  // the spread of X: crowded blocks within crowded blocks. At half fill, against this exact
  // term: k 7 0.940 % vs 0.951 %; k 11 9.67e-4 vs 9.95e-4; k 16 9.54e-5 vs 1.011e-4; k 24
  // 6.9e-6 vs 7.7e-6; k 48 2.5e-7 vs 3.4e-7. So slices full at half were over their share
  // wherever p fell between the two (p = 10^-4, k 16: 1.011e-4 by this term, 1.006e-4
  // measured); they now close just before (blocked_full_cells).
  const PoissonTerms terms = poisson_terms(lambda);
  std::array<double, kBlockBits + 1> hits{};  // (x / 512)^k
  for (unsigned x = 0; x <= kBlockBits; ++x) hits[x] = power(x / double(kBlockBits), k);
  std::array<double, kBlockBits + 1> set_bits{};  // P(X_n = x) for x in [lo, hi]
  std::array<double, kBlockBits + 1> stays{}, grows{};  // P(a probe hits a set bit | x set), P(it misses | x - 1 set)
  for (unsigned x = 0; x <= kBlockBits; ++x) {
    stays[x] = x / double(kBlockBits);
    grows[x] = (kBlockBits - (x - 1.0)) / double(kBlockBits);
  }
  set_bits[0] = 1;
  unsigned lo = 0, hi = 0;
  std::uint64_t probes_made = 0;
  double rate = 0;
  for (std::size_t i = 0; i < terms.weights.size(); ++i) {
    const std::uint64_t probes = std::uint64_t(k) * std::uint64_t(terms.first + long(i));
    // Once every bit is set with all the mass (lo == 512), further probes change nothing.
    for (; probes_made < probes && lo < kBlockBits; ++probes_made) {
      if (hi < kBlockBits) ++hi;
      for (unsigned x = hi; x > lo; --x) {  // descending: set_bits[x - 1] is still X_n's
        set_bits[x] = set_bits[x] * stays[x] + set_bits[x - 1] * grows[x];
      }
      set_bits[lo] *= stays[lo];
      // Drop the tails below 1e-43. The mass sums to 1 over at most 513 values, so the
      // largest is above 1.9e-3 and these are under 1e-40 of it: even multiplied by
      // (512/256)^48 ~ 3e14 in the sum below they stay under 1e-25 of it. (Until 3 Dec
      // 2026 the cut was 1e-40 of the largest, found by a pass over the values after every
      // probe: a chain of maxima that took about half of the time.)
      constexpr double kNegligible = 1e-43;
      while (lo < hi && set_bits[lo] < kNegligible) set_bits[lo++] = 0;
      while (hi > lo && set_bits[hi] < kNegligible) set_bits[hi--] = 0;
    }
    double total = 0, hit = 0;
    for (unsigned x = lo; x <= hi; ++x) {
      total += set_bits[x];
      hit += set_bits[x] * hits[x];
    }
    rate += terms.weights[i] * (hit / total);  // total: 1 less the dropped tails
  }
  return std::min(rate, 1.0);
}

namespace {

// A blocked rate by load (blocked_rate, mean_fill_blocked_rate) taken at a fill: the load is
// blocked_expected_fill solved for lambda. 0 at fill 0 and below, 1 from fill 1 on (where
// the load is infinite).
template <class RateAtLoad>
double rate_at_fill(double fill, unsigned k, RateAtLoad rate_at_load) {
  if (!(fill > 0)) return 0;
  if (fill >= 1) return 1;
  return rate_at_load(-std::log1p(-fill) / (1.0 - std::pow(kBlockMiss, k)), k);
}

}  // namespace

double blocked_rate_at_fill(double fill, unsigned k) { return rate_at_fill(fill, k, blocked_rate); }

double blocked_expected_fill(std::uint64_t items, unsigned k, std::uint64_t bits) {
  const double lambda = static_cast<double>(items) * kBlockBits / static_cast<double>(bits);
  return -std::expm1(-lambda * (1.0 - std::pow(kBlockMiss, k)));
}

namespace {

// The rate by the mean fill of a block holding j keys, E_j[(1 - q^(kj))^k]: the formula
// blocked slices were sized by until 2 Dec 2026 (see blocked_rate), kept for one job, the
// choice of k and of the blocked floor, because a slice's k and layout are not stored:
// they are planned from the options on every load. Changing the choice of k would move
// stored slices' sizes by up to 6 % (k 16 -> 17), at the edge of the loaders' tolerance,
// and moving the floor would read old blocked slices as classic ones.
double mean_fill_blocked_rate(double lambda, unsigned k) {
  const PoissonTerms terms = poisson_terms(lambda);
  const double step = power(kBlockMiss, k);
  double empty = std::pow(step, static_cast<double>(terms.first));  // a bit still clear
  double rate = 0;
  for (const double weight : terms.weights) {
    rate += weight * power(1.0 - empty, k);
    empty *= step;
  }
  return rate;
}

// The fill at which a blocked slice's exact rate reaches `rate`; returns a fill whose rate
// is within `rate`, less than 1e-12 below the root. Each evaluation of the exact rate costs
// 0.02-0.3 ms (blocked_rate), the mean-fill rate a few microseconds. The mean-fill rate is
// never above the exact one (Jensen: E[(X/512)^k] >= (E[X]/512)^k), so its root, found by
// bisection, bounds the exact root from above; and it is close (their logs differ by at
// most about 0.28, at k 48 near half fill, where the log of the rate climbs about 33 per
// unit of fill: the two roots are 0.0085 apart).
// From it, Newton steps on the log of the exact rate with the mean-fill rate's slope, each 10 %
// longer than Newton's, until one lands below the root; then regula falsi (Illinois) on that
// bracket, where the log of the rate is nearly linear. Until 3 Dec 2026 the bracket started at
// [0.4, 0.5]. Measured on the Zen 4 guest of that day, 100 solves (k 1-48, fills 0.05-0.95; a
// stored blob may ask 64): 615 evaluations, at most 7 a solve, 0.10 s; from [0.4, 0.5], 1 292
// evaluations, 6-14 a solve and 60 in 7 of the 100 (the bracket no longer narrowing), 0.18 s.
// With blocked_rate as it was before that day (a pass for the largest value after every probe),
// 0.28 s and 0.51 s; at k 48, 2 ms a solve against 6-8.5 ms.
double solve_blocked_fill(double rate, unsigned k) {
  const auto excess = [rate, k](double fill) { return std::log(blocked_rate_at_fill(fill, k) / rate); };
  const auto mean_excess = [rate, k](double fill) {
    return std::log(rate_at_fill(fill, k, mean_fill_blocked_rate) / rate);
  };
  double below = 0, above = 1;  // the mean-fill root, to 1e-7: a start
  for (int i = 0; i < 60 && above - below > 1e-7; ++i) {
    const double mid = (below + above) / 2;
    (mean_excess(mid) > 0 ? above : below) = mid;
  }
  double hi = above, at_hi = excess(hi);
  double lo = hi, at_lo = at_hi;
  if (at_hi <= 0) {  // the two rates agree here (k 1: the rate is linear in the set bits)
    for (double step = 1e-12; at_hi <= 0 && hi < 1; step *= 4) {
      lo = hi, at_lo = at_hi;
      hi = std::min(1.0, hi + step);
      at_hi = hi < 1 ? excess(hi) : std::log(1 / rate);
    }
  } else {
    const double h = std::min(1e-4, hi / 4);
    const double slope = std::max(1e-3, (mean_excess(hi) - mean_excess(hi - h)) / h);
    while (at_lo > 0) {  // ends by fill 0 at the latest, whose rate is 0
      hi = lo, at_hi = at_lo;
      // A root below 1e-12, the solve's precision (rates no planned slice asks: k 1 below
      // 1e-12, k 7 below about 1e-30), answers 0 rather than a fill whose rate is above p.
      lo = hi < 1e-12 ? 0.0 : std::max(hi / 2, hi - 1.1 * at_hi / slope);
      at_lo = excess(lo);
    }
  }
  if (at_lo >= 0) return lo;
  // Illinois: an end kept twice in a row has its value halved (the weights below), so that
  // the other end moves too. Done when the bracket is 1e-12 wide, or when the rate at lo is
  // within a relative 1e-12 of `rate` (then lo is within 1e-12 of the root, the log of the
  // rate climbing at least 1 per unit of fill), as close as the evaluation can tell.
  int side = 0;
  double weight_lo = 1, weight_hi = 1;
  for (int i = 0; i < 60 && hi - lo > 1e-12 && at_lo < -1e-12; ++i) {
    const double w_lo = weight_lo * at_lo, w_hi = weight_hi * at_hi;
    // A hair below the secant's root, and at least a hair above lo: a root found at either
    // end (a common case) then leaves a bracket under 1e-12 wide in one more step.
    double mid = std::max(hi - w_hi * (hi - lo) / (w_hi - w_lo) - 5e-13, lo + 9e-13);
    if (!(mid < hi)) mid = lo + (hi - lo) / 2;
    const double at_mid = excess(mid);
    if (at_mid > 0) {
      hi = mid, at_hi = at_mid, weight_hi = 1;
      if (side == 1) weight_lo /= 2;
      side = 1;
    } else {
      lo = mid, at_lo = at_mid, weight_lo = 1;
      if (side == -1) weight_hi /= 2;
      side = -1;
    }
  }
  return lo;
}

}  // namespace

unsigned blocked_probes_for_rate(double p) {
  // The rate at half fill falls with k (by the mean fill: 0.0094 at k 7, 9.7e-4 at 11,
  // 2.5e-7 at 48), so the first k that reaches p is the cheapest. Computed once, then
  // looked up.
  static const auto half_fill_rates = [] {
    std::array<double, kMaxBlockedProbes + 1> rates{};
    for (unsigned k = 1; k <= kMaxBlockedProbes; ++k) {
      rates[k] = mean_fill_blocked_rate(blocked_half_fill_load(k), k);
    }
    return rates;
  }();
  for (unsigned k = 1; k <= kMaxBlockedProbes; ++k) {
    if (half_fill_rates[k] <= p) return k;
  }
  return 0;
}

double blocked_fill_at_rate(double rate, unsigned probes) {
  if (probes < 1 || probes > kMaxBlockedProbes) {
    throw std::invalid_argument("segbloom: blocked_fill_at_rate needs probes in [1, 48]");
  }
  if (!(rate > 0 && rate < 1)) throw std::invalid_argument("segbloom: blocked_fill_at_rate needs a rate in (0, 1)");
  // One solve per (p_i, k) and process (about 2 ms at k 48), shared by every thread: every
  // slice made or loaded asks, and a growing filter has a p_i per slice (a per-thread memo of
  // 16 alone missed every time for filters of more slices). Each thread keeps its last 16
  // answers in front of the table, so that loads on many threads do not meet on its mutex.
  struct Recent {
    double rate = 0;
    unsigned probes = 0;  // 0: empty
    double fill = 0;
  };
  thread_local std::array<Recent, 16> recent{};
  thread_local std::size_t next = 0;
  for (const Recent& r : recent) {
    if (r.probes == probes && r.rate == rate) return r.fill;
  }
  static std::mutex mutex;
  static std::map<std::pair<double, unsigned>, double> solved;
  const std::pair<double, unsigned> key{rate, probes};
  double fill = -1;
  {
    std::lock_guard lock(mutex);
    if (const auto it = solved.find(key); it != solved.end()) fill = it->second;
  }
  if (fill < 0) {
    fill = solve_blocked_fill(rate, probes);
    std::lock_guard lock(mutex);
    if (solved.size() >= 4096) solved.clear();  // options from untrusted blobs: bounded
    solved.emplace(key, fill);
  }
  recent[next++ % recent.size()] = {rate, probes, fill};
  return fill;
}

std::uint64_t blocked_full_cells(double rate, unsigned probes, std::uint64_t bits) {
  // Half of the bits, unless the exact rate after the insert that fills the slice would pass
  // p_i: that insert starts below the full count and sets at most k cells, so it ends at
  // most k - 1 past it; then floor(f m) - (k - 1), f the fill where the rate is p_i.
  if (probes < 1 || probes > kMaxBlockedProbes) {
    throw std::invalid_argument("segbloom: blocked_full_cells needs probes in [1, 48]");
  }
  // Most slices are far from their share at half (p = 1 %, k 7: 0.951 % there, p reached
  // at 0.5038), and large enough that k cells are under 1/1000 of them: the rate at 0.501,
  // once per k and process, answers them without a solve, which costs 0.3-2 ms for each
  // (p_i, k) a load meets. (f >= 0.501 and m >= 1000 k give floor(f m) - (k - 1) >= m / 2.)
  static std::array<std::atomic<double>, kMaxBlockedProbes + 1> rate_past_half{};  // 0: not yet
  double past_half = rate_past_half[probes].load(std::memory_order_relaxed);
  if (past_half == 0) {
    past_half = blocked_rate_at_fill(0.501, probes);
    rate_past_half[probes].store(past_half, std::memory_order_relaxed);
  }
  if (past_half <= rate && probes * 1000ull <= bits) return bits / 2;
  const double fill = blocked_fill_at_rate(rate, probes);
  const double cells = std::floor(fill * static_cast<double>(bits)) - (probes - 1);
  if (cells >= static_cast<double>(bits / 2)) return bits / 2;
  return cells < 1 ? std::uint64_t{1} : static_cast<std::uint64_t>(cells);
}

namespace {

// blocked_capacity_bits without its memo: a search over the block count, each step one
// sum over the Poisson load of a block.
std::uint64_t search_blocked_capacity_bits(std::uint64_t items, unsigned k, double full_fill) {
  const double n = static_cast<double>(items);
  const auto spare = [&](double blocks) {  // the full point's bits - E[set] - 6 sigma
    double mean = 0, variance = 0;
    blocked_block_moments(n / blocks, k, mean, variance);
    return blocks * (kBlockBits * full_fill - mean) - kSigmas * std::sqrt(blocks * variance);
  };
  // lo: a block count taken as too small (spare < 0 from 2 blocks up); hi: one large
  // enough. Both integers, so that every midpoint lies strictly between them: with
  // hi = lo * 1.25 + 8 not rounded up, the search never ended when floor(hi) was still too
  // small (168 items at k = 48 did this). Counts stay far below 2^53 (kMaxCapacityItems),
  // where doubles hold every integer.
  double lo = std::max(1.0, std::floor(n / blocked_half_fill_load(k)));
  double hi = std::ceil(lo * 1.25 + 8);
  while (spare(hi) < 0) hi *= 2;
  while (hi - lo > 1.0) {
    const double mid = std::floor((lo + hi) / 2);
    (spare(mid) < 0 ? lo : hi) = mid;
  }
  return static_cast<std::uint64_t>(hi) * kBlockBits;
}

}  // namespace

std::uint64_t blocked_capacity_bits(std::uint64_t items, unsigned k, double full_fill) {
  if (items > kMaxCapacityItems) {
    throw std::length_error("segbloom: blocked_capacity_bits for " + std::to_string(items) +
                            " items: above the largest slice's " + std::to_string(kMaxCapacityItems));
  }
  // The search costs 5-35 us (up to ~20 steps of ~150 terms), a look-up in the memo
  // (SizeMemo) nothing. On an AMD EPYC Zen 3, BM_request_from_bytes_500/blocked (a 2-slice
  // filter loaded, 500 lookups): 24-28 -> 6.3-7.9 us (classic: 10.1-10.8 us); before the
  // Poisson terms were computed by recurrence (poisson_terms), 304-352 us.
  thread_local SizeMemo memo;
  if (!(full_fill > 0 && full_fill <= 0.5)) {
    throw std::invalid_argument("segbloom: blocked_capacity_bits needs a full fill in (0, 1/2]");
  }
  return memo.bits(
      items, k, [items, k, full_fill] { return search_blocked_capacity_bits(items, k, full_fill); }, full_fill);
}

double slice_rate_at_fill(const SliceShape& shape, double fill, std::uint64_t items) {
  if (shape.layout == Layout::blocked) return blocked_rate_at_fill(fill, shape.probes);
  // Triple hashing has no floor the tests can measure (sizing.hpp).
  const double rate = rate_at_fill(fill, shape.probes);
  return shape.probing == Probing::triple_hashing ? rate : rate + pattern_floor(items, shape.bits);
}

std::uint64_t items_at_cells(const SliceShape& shape, std::uint64_t cells) {
  const double m = static_cast<double>(shape.bits);
  const double fill = static_cast<double>(std::min(cells, shape.bits)) / m;
  if (fill >= 1) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(std::llround(-m * std::log1p(-fill) / shape.probes));
}

double slice_rate_at_cells(const SliceShape& shape, std::uint64_t cells) {
  const double m = static_cast<double>(shape.bits);
  const double fill = static_cast<double>(std::min(cells, shape.bits)) / m;
  if (fill >= 1) return 1;
  return slice_rate_at_fill(shape, fill, items_at_cells(shape, cells));
}

double combine_rates(double accumulated, double slice_rate) {
  return 1.0 - (1.0 - accumulated) * (1.0 - slice_rate);
}

SliceShape slice_shape(const Options& options, std::uint32_t index, unsigned max_probes) {
  SliceShape shape;
  shape.index = options.max_slices == 0 ? index : 0;
  double items = 0;
  if (options.max_slices == 0) {
    items = std::ceil(static_cast<double>(options.capacity) * std::pow(options.growth, index));
    shape.false_positive_rate = options.false_positive_rate * (1.0 - options.tightening) *
                                std::pow(options.tightening, index);
  } else {
    items = std::ceil(static_cast<double>(options.capacity) / options.max_slices);
    shape.false_positive_rate = options.false_positive_rate / options.max_slices;
  }
  if (!(shape.false_positive_rate > 0)) {
    throw std::length_error("segbloom: slice " + std::to_string(index) +
                            " would need a false-positive rate below the smallest double");
  }
  shape.probes = probes_for_rate(shape.false_positive_rate);
  if (options.layout == Layout::blocked) {
    if (const unsigned k = blocked_probes_for_rate(shape.false_positive_rate); k != 0) {
      shape.layout = Layout::blocked;
      shape.probes = k;
    }
  }
  if (shape.probes > max_probes) shape.probes = max_probes;
  // Bits grow as n * k / -ln(1 - f) for a slice full at fill f: n * k / ln 2 at half full,
  // more where a clamped k closes it earlier (triple_full_fill); check before converting
  // to integers.
  const double full_fill = shape.layout == Layout::blocked
                               ? 0.5
                               : std::min(std::pow(shape.false_positive_rate, 1.0 / shape.probes), 0.5);
  if (!(items * shape.probes / -std::log1p(-full_fill) * 1.5 < kMaxSliceBits)) {
    std::ostringstream message;
    message << "segbloom: slice " << index << " for " << std::setprecision(4) << items
            << " items exceeds the 2^46-bit slice limit";
    throw std::length_error(message.str());
  }
  shape.capacity = static_cast<std::uint64_t>(items);
  if (shape.layout == Layout::blocked) {
    // Sized for half full; where the slice closes earlier (blocked_full_cells), sized again
    // for that point, as a fraction of the first size: the fraction only grows with the
    // size (k - 1 cells weigh less), so the capacity still comes first.
    shape.bits = blocked_capacity_bits(shape.capacity, shape.probes);
    const std::uint64_t full = blocked_full_cells(shape.false_positive_rate, shape.probes, shape.bits);
    if (full < shape.bits / 2) {
      shape.bits = blocked_capacity_bits(shape.capacity, shape.probes,
                                         static_cast<double>(full) / static_cast<double>(shape.bits));
    }
    return shape;
  }
  shape.bits = capacity_bits(shape.capacity, shape.probes);
  const double rate = shape.false_positive_rate;
  const unsigned k = shape.probes;
  if (needs_triple_hashing(rate, k, shape.bits)) {
    shape.probing = Probing::triple_hashing;
    if (triple_full_fill(rate, k, shape.bits) < 0.5) {
      shape.bits = early_close_capacity_bits(shape.capacity, k, rate, shape.bits, [rate, k](std::uint64_t bits) {
        return triple_full_fill(rate, k, bits);
      });
    }
  } else if (double_hashing_rate(0.5, k, static_cast<double>(shape.bits)) > rate &&
             full_cells(shape) < shape.bits / 2) {
    // Double hashing: sized by 1 Dec 2026's full point (sized_full_fill), so that its plans,
    // and merges with filters stored since, stay as they were. Where g(1/2) > p_i that point is
    // full_cells' (remembered per thread: every load plans its slices again).
    shape.bits = early_close_capacity_bits(shape.capacity, k, rate, shape.bits, [rate, k](std::uint64_t bits) {
      return sized_full_fill(rate, k, bits);
    });
  }
  return shape;
}

}  // namespace segbloom
