// segbloom: one slice, an ordinary Bloom filter = cells + a probing scheme + a shape.
//
// Written once for every cell type: `Cells` is BitCells (plain filters) or a counter
// array (counting filters); it provides size(), set_count(), test(i), clear(),
// memory_bytes() and mark_all(for_each), which marks every cell i that for_each(mark)
// passes to mark(i) and returns how many went from zero to non-zero. (BitCells also
// takes a whole-block SIMD kernel: mark_words.) A read-only slice may also sit over a
// view of stored cells (FilterView), which only answers contains: test(i), and for bit
// arrays word(w) and data(), so that it runs a loaded slice's lookups (kStoredWords).
// The shape's layout picks where a key's k cells are: anywhere (classic, the scheme's
// probing) or inside one 512-cell block (blocked.hpp).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "segbloom/bit_cells.hpp"
#include "segbloom/blocked.hpp"
#include "segbloom/clock.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/fixed_probes.hpp"
#include "segbloom/detail/screened_lookup.hpp"
#include "segbloom/probing.hpp"
#include "segbloom/sizing.hpp"

namespace segbloom {

namespace detail {
// Cells of packed 4-bit counters whose words can be read directly (CounterCells).
template <class Cells>
concept PackedCounterWords = requires(const Cells& c) {
  requires Cells::kBitsPerCounter == 4;
  { c.words().data() } -> std::same_as<const std::uint64_t*>;
};

// The fewest counted inserts that can have set `set_cells` cells of a slice of k = `probes`:
// each sets at most k (a merge sums both counts). The loaders refuse bit slices that count
// fewer (check_items_cover_cells); copies whose counts may trail their bits (a counting
// filter's after removes, a concurrent one's taken during writes) count at least this.
inline std::uint64_t fewest_items(std::uint64_t set_cells, unsigned probes) noexcept {
  return set_cells / probes + (set_cells % probes != 0);
}

// full_cells_of(shape) for a slice's scheme, planned by the caller.
struct PlannedFullCells {
  std::uint64_t cells;
};

}  // namespace detail

template <class Cells, class Scheme>
class Slice {
 public:
  using cells_type = Cells;
  using scheme_type = Scheme;
  using Digest = typename Scheme::Digest;

  explicit Slice(const SliceShape& shape)
      : shape_(shape), full_cells_(detail::full_cells_of<Scheme>(shape)), cells_(shape.bits) {}

  // Restores a slice from stored parts; the caller checks cells.size() == shape.bits.
  Slice(const SliceShape& shape, Cells cells, std::uint64_t items, UnixSeconds opened_at = 0)
      : shape_(shape),
        full_cells_(detail::full_cells_of<Scheme>(shape)),
        cells_(std::move(cells)),
        items_(items),
        opened_at_(opened_at) {}

  // A slice over cells whose full point the caller planned already (full_cells_of for this
  // scheme): a read-only view's slices (FilterView), made at every lookup.
  Slice(const SliceShape& shape, Cells cells, std::uint64_t items, detail::PlannedFullCells full) noexcept
      : shape_(shape), full_cells_(full.cells), cells_(std::move(cells)), items_(items) {}

  bool contains(const Digest& digest) const noexcept {
    if constexpr (kWordCells) {  // a bit array, loaded or stored
      if constexpr (kBlockable) {
        if (shape_.layout == Layout::blocked) {  // one cache line, SIMD where compiled in
          return blocked::contains<BlockLoads>(blocked::block_in(slice_ref(), digest), blocked::in_block_hash(digest),
                                               shape_.probes);
        }
      }
      if constexpr (requires { Scheme::all_set_in(word_reader(), digest, std::uint64_t{64}, 1u); }) {
        // Triple hashing out of line, so that this test stays small enough to inline into
        // the per-key loops (with the probe loop here, per-key lookups took 1.07-1.22x).
        if (shape_.probing != Probing::scheme) [[unlikely]] return contains_by_probes_out_of_line(digest);
        return Scheme::all_set_in(word_reader(), digest, shape_.bits, shape_.probes);
      }
    }
    if constexpr (kCounterWords) {  // packed counters: the same test, a set cell a non-zero counter
      if constexpr (requires { Scheme::template all_set_in<4>(word_reader(), digest, std::uint64_t{64}, 1u); }) {
        if (classic_by_scheme()) {
          return Scheme::template all_set_in<4>(word_reader(), digest, shape_.bits, shape_.probes);
        }
      }
    }
    return contains_by_probes(digest);
  }

  // found[i] = contains(digests[i]) for i < n; with `only_missing`, only for the i with
  // !found[i] (a batch asks older slices only about keys no newer one holds). Returns
  // how many it set true. A classic slice of bits or packed counters answers the group at
  // once where its scheme can (DoubleHashingScheme::all_set_many: SIMD on AVX2 and AVX-512
  // CPUs), others (and triple-hashed slices) key by key.
  std::size_t contains_group(const Digest* digests, std::size_t n, bool* found, bool only_missing) const noexcept {
    if constexpr (kWordCells) {
      if constexpr (requires { Scheme::all_set_many(word_reader(), digests, n, std::uint64_t{64}, 1u, found, true); }) {
        if (classic_by_scheme()) {
          return Scheme::all_set_many(word_reader(), digests, n, shape_.bits, shape_.probes, found, only_missing);
        }
      }
    }
    if constexpr (kCounterWords) {
      if constexpr (requires {
                      Scheme::template all_set_many<4>(word_reader(), digests, n, std::uint64_t{64}, 1u, found, true);
                    }) {
        if (classic_by_scheme()) {
          return Scheme::template all_set_many<4>(word_reader(), digests, n, shape_.bits, shape_.probes, found,
                                                  only_missing);
        }
      }
    }
    return detail::answer_group(found, n, only_missing, [this, digests](std::size_t i) { return contains(digests[i]); });
  }

  // Marks the key's k cells and counts one item.
  void add(const Digest& digest) noexcept {
    mark_cells(digest);
    ++items_;
  }

  // Test-and-set in one pass: marks the key's k cells; when that set a cell, counts
  // one item and returns true; when all were set already, changed nothing: false.
  bool add_if_new(const Digest& digest) noexcept {
    const bool changed = mark_cells(digest) != 0;
    items_ += changed;
    return changed;
  }

  // Slices whose batches hand them a group of writes (kGroupWrites): add_if_new for each
  // key i < n with write[i], in order; changed[i] = its result (false where !write[i]).
  void add_group_if_new(const Digest* digests, std::size_t n, const bool* write, bool* changed) noexcept {
    mark_group(digests, n, write, changed);
    items_ += detail::count_true(changed, n);
  }

  // The same with add (a counting filter's inserts count every key they write): each
  // key i < n with write[i] counts one item; changed[i] = that set a clear cell (the
  // slice did not report the key before it).
  void add_group(const Digest* digests, std::size_t n, const bool* write, bool* changed) noexcept {
    mark_group(digests, n, write, changed);
    items_ += detail::count_true(write, n);
  }

  // True when none of `keys` more inserts would find the slice full: each sets at most k
  // cells, so before the last of them at most (keys - 1) k more are set.
  bool has_room_for(std::size_t keys) const noexcept {
    const std::uint64_t before_last = keys == 0 ? 0 : (keys - 1) * shape_.probes;
    return cells_.set_count() + before_last < full_cells_;
  }

  // Visits the key's k cells, in either layout and probing (stops when visit returns
  // false). For cell types with more operations than mark/test, such as counters.
  template <class Visit>
  bool probe(const Digest& digest, Visit&& visit) const {
    if constexpr (kBlockable) {
      if (shape_.layout == Layout::blocked) {
        const std::uint64_t base = block_of(digest) * kBlockBits;
        return blocked::probe(blocked::in_block_hash(digest), shape_.probes,
                              [&visit, base](unsigned bit) { return visit(base + bit); });
      }
      if (shape_.probing == Probing::triple_hashing) return probe_triple(digest, visit);
    }
    return Scheme::probe(digest, shape_.bits, shape_.probes, std::forward<Visit>(visit));
  }

  // Whether a batch of `op`s prefetches this slice's lines: detail::worth_prefetching (by
  // layout and op), for cells that have addresses. Batch loops ask once per slice, not per
  // key. BatchOp::group_insert's rule (detail::group_insert_prefetch) is for the slice
  // mark_group marks in vectors: the newest, not full, classic one; the other slices of a
  // group insert (asked, and in a counting filter incremented, key by key) take the
  // insert rule, as before the thirty-sixth round.
  bool worth_prefetching(detail::BatchOp op) const noexcept {
    if constexpr (requires { cells_.address_of(std::uint64_t{0}); }) {
      constexpr bool kBits = std::is_same_v<Cells, BitCells>;  // counting blocks span 4 lines
      using enum detail::PrefetchedLines;
      using enum detail::BatchOp;
      const bool in_block = kBlockable && shape_.layout == Layout::blocked;
      if (op == group_insert && (full() || in_block || !marks_group_in_vectors())) op = insert;
      return detail::worth_prefetching(cells_.memory_bytes(), in_block ? (kBits ? block : block_first_line) : probe_lines,
                                       op);
    } else {
      return false;
    }
  }

  // Asks the CPU to start loading the lines n keys' lookups or inserts touch, so that a
  // batch overlaps its memory latency: a blocked slice's blocks; all k lines of a classic
  // one (prefetch_probes). The caller asks worth_prefetching first, once per slice.
  void prefetch(const Digest* digests, std::size_t n) const noexcept {
    if constexpr (requires { cells_.address_of(std::uint64_t{0}); }) {
      if (kBlockable && shape_.layout == Layout::blocked) {
        for (std::size_t i = 0; i < n; ++i) detail::prefetch(cells_.address_of(block_of(digests[i]) * kBlockBits));
      } else {
        for (std::size_t i = 0; i < n; ++i) prefetch_probes(digests[i]);
      }
    }
  }

  // The lines of all k probes. With detail::prefetch: written as __builtin_prefetch in a
  // probe loop, as until 27 Nov 2026, GCC 12 deleted the whole loop (a prefetch counts as
  // free of side effects), so classic batches prefetched nothing. Measured once they did
  // (AMD EPYC, batched u64 lookups, alternating builds, 2 runs of 3 repetitions): at 10^8
  // keys negatives 54.4-54.9 -> 24.2-24.3 ns, positives 82.9-83.6 -> 25.9-26.0 ns; at 10^7
  // keys (12.6 MB, within this CPU's L3) they cost instead, negatives 8.9-10.4 -> 10.4-10.9
  // ns, positives 10.0-10.7 -> 11.8-12.3 ns. Only the first 4 lines (every negative reads
  // them): negatives as all k at 10^8 and 8.0-8.9 ns at 10^7, but positives at 10^8 lose
  // it all (80-83 ns).
  void prefetch_probes(const Digest& digest) const noexcept {
    if constexpr (requires { cells_.address_of(std::uint64_t{0}); }) {
      probe(digest, [this](std::uint64_t cell) {
        segbloom::detail::prefetch(cells_.address_of(cell));
        return true;
      });
    }
  }

  // Classic lookups in two steps, for batches of filters too large for the cache
  // (detail/screened_lookup.hpp): the lines of a key's first detail::kScreenProbes probes are
  // prefetched (prefetch_screen) and those probes tested (screen); only for a key that
  // passes are the lines of the others prefetched (prefetch_rest) before the whole lookup.
  // Slices that can: a scheme with a probe cursor (DoubleHashingScheme), cells with addresses.
  static constexpr bool kScreenable =
      requires { typename Scheme::ProbeCursor; } && requires(const Cells& c) { c.address_of(std::uint64_t{0}); };
  using ProbeCursor = typename detail::ProbeCursorOf<Scheme>::type;

  // A triple-hashed slice has no cursor: its screen prefetches all k lines and passes every
  // key (the whole lookup decides); nothing is left for prefetch_rest.
  void prefetch_screen(const Digest& digest) const noexcept
    requires kScreenable
  {
    if (shape_.probing == Probing::scheme) {
      Screen::prefetch_screen(digest, shape_.bits, shape_.probes, line_of());
    } else {
      prefetch_probes(digest);
    }
  }

  // Whether the key's first detail::kScreenProbes probes (all, if k is smaller) are set;
  // `rest` = the place of the probe after them.
  bool screen(const Digest& digest, ProbeCursor& rest) const noexcept
    requires kScreenable
  {
    if (shape_.probing != Probing::scheme) return true;
    return Screen::screen(digest, shape_.bits, shape_.probes, rest, [this](std::uint64_t cell) { return cells_.test(cell); });
  }

  // The lines of the probes from `rest` on.
  void prefetch_rest(ProbeCursor rest) const noexcept
    requires kScreenable
  {
    if (shape_.probing == Probing::scheme) Screen::prefetch_rest(rest, shape_.bits, shape_.probes, line_of());
  }

  // Blocked layout needs the 128-bit digest (block from one half, bits from the other).
  static constexpr bool kBlockable = std::is_same_v<Digest, Digest128>;
  // Cells that read a bit array's stored words in place (word(w), as BitCells::words()[w];
  // data(), the first word's address, read through blocked::StoredLoads): FilterView's
  // slices over a blob (filter_kinds.hpp).
  static constexpr bool kStoredWords = requires(const Cells& c) {
    { c.word(std::uint64_t{0}) } -> std::same_as<std::uint64_t>;
    { c.data() } -> std::same_as<const void*>;
  };
  // Bit arrays, whose lookups read whole words (Scheme::all_set_in, the blocked kernels),
  // and the policy the kernels load a block with: in place from a blob, or as words.
  static constexpr bool kWordCells = std::is_same_v<Cells, BitCells> || kStoredWords;
  // Packed 4-bit counters whose words a classic lookup reads directly (CounterCells:
  // words(); DoubleHashingScheme::all_set_in<4>, all_set_many<4>).
  static constexpr bool kCounterWords = detail::PackedCounterWords<Cells>;
  // Bit arrays and packed counters of 128-bit digests, whose batches hand a group of
  // inserts to the slice at once (add_group_if_new, add_group; mark_group says which
  // layouts take it in one call and which key by key).
  static constexpr bool kGroupWrites = kBlockable && (std::is_same_v<Cells, BitCells> || kCounterWords);
  // Slices whose classic contains_group tests the group at once (Scheme::all_set_many over
  // bit words, loaded or stored, or packed counters), not key by key: batches
  // (detail::lookup_slices) hand them groups of keys.
  static constexpr bool kGroupTest = (kWordCells || kCounterWords) && requires(const Digest* d, bool* f) {
    Scheme::all_set_many([](std::uint64_t) { return std::uint64_t{0}; }, d, std::size_t{1}, std::uint64_t{64}, 1u, f,
                         false);
  };
  using BlockLoads = std::conditional_t<kStoredWords, blocked::StoredLoads, blocked::PlainLoads>;

  // A blocked bit slice as blocked/lookup_group.hpp's batch kernels see it (read with BlockLoads).
  blocked::SliceRef slice_ref() const noexcept
    requires(kWordCells && kBlockable)
  {
    return {cells_.data(), shape_.bits / kBlockBits, shape_.probes};
  }

  // Full once half of the cells are set, the fill where its rate is (1/2)^k <= p_i (or
  // a little before, where the pattern floor needs it: full_cells in sizing.hpp).
  bool full() const noexcept { return cells_.set_count() >= full_cells_; }

  const SliceShape& shape() const noexcept { return shape_; }
  std::uint64_t items() const noexcept { return items_; }
  const Cells& cells() const noexcept { return cells_; }
  Cells& cells() noexcept { return cells_; }
  void set_items(std::uint64_t items) noexcept { items_ = items; }

  // When the slice was opened (or cleared for reuse) as the one taking writes, in
  // wall-clock seconds; 0 in filters without Options::slice_lifetime.
  UnixSeconds opened_at() const noexcept { return opened_at_; }
  void set_opened_at(UnixSeconds t) noexcept { opened_at_ = t; }

  double fill_ratio() const noexcept {
    return static_cast<double>(cells_.set_count()) / static_cast<double>(shape_.bits);
  }
  double estimated_false_positive_rate() const noexcept {
    return detail::scheme_rate_at_fill<Scheme>(shape_, fill_ratio(), items_);
  }
  std::uint64_t memory_bytes() const noexcept { return cells_.memory_bytes(); }

  void clear() noexcept {
    cells_.clear();
    items_ = 0;
  }

  friend bool operator==(const Slice& a, const Slice& b) noexcept {
    return a.shape_ == b.shape_ && a.items_ == b.items_ && a.opened_at_ == b.opened_at_ &&
           a.cells_ == b.cells_;
  }

 private:
  // Marks the key's k cells; returns how many were unset (Cells::mark_all).
  std::uint64_t mark_cells(const Digest& digest) noexcept {
    if constexpr (kBlockable && std::is_same_v<Cells, BitCells>) {
      if (shape_.layout == Layout::blocked) {  // the whole block at once, SIMD where compiled in
        return cells_.mark_words([this, &digest](std::uint64_t* words) {
          return blocked::set(words + block_of(digest) * blocked::kWordsPerBlock,
                              blocked::in_block_hash(digest), shape_.probes);
        });
      }
    }
    // Classic bits: the probe loop's instance for k, inlined (detail::with_fixed_probes; k up
    // to 16 unrolled). Forty-first round, Intel Xeon, benchmark binaries alternating, 4-6
    // processes each, two series: per-key inserts 0.87-0.95 of the time in the second (u64
    // at 10^6 keys 16.8 -> 15.5 ns; the unchanged lookups 0.96-1.00), 0.68-1.06 in the
    // noisier first; about 11 KB more code in the benchmark binary.
    if constexpr (std::is_same_v<Cells, BitCells> && requires(const Digest& d) {
                    Scheme::template probe<1>(d, std::uint64_t{64}, 1u, [](std::uint64_t) { return true; });
                  }) {
      if (shape_.probing != Probing::scheme) [[unlikely]] return mark_by_probes_out_of_line(digest);
      return detail::with_fixed_probes(shape_.probes, [this, &digest](auto fixed) {
        return cells_.mark_all([this, &digest](auto&& mark) {
          return Scheme::template probe<decltype(fixed)::value>(digest, shape_.bits, shape_.probes, mark);
        });
      });
    } else {
      return cells_.mark_all([this, &digest](auto&& mark) { return this->probe(digest, mark); });
    }
  }

  // Marks the k cells of each key i < n with write[i], in order; changed[i] = that set a
  // clear cell. In one call where it can: blocked::set_group (blocked bits),
  // Scheme::set_many (classic bits) or Scheme::mark_many (classic counters, each key's
  // increments through CounterCells::mark_all); else (and triple hashing) key by key.
  void mark_group(const Digest* digests, std::size_t n, const bool* write, bool* changed) noexcept {
    static_assert(kGroupWrites);
    // Asked only where used: blocked groups, which do not prefetch here, had called two
    // functions a group for it.
    const auto prefetch = [this] {
      return detail::group_insert_prefetch(cells_.memory_bytes()) == detail::GroupInsertPrefetch::by_marks;
    };
    if constexpr (std::is_same_v<Cells, BitCells>) {
      if (shape_.layout == Layout::blocked) {
        cells_.mark_words([&](std::uint64_t* words) {
          return blocked::set_group(words, shape_.bits / kBlockBits, digests, n, shape_.probes, write, changed);
        });
        return;
      }
      if constexpr (requires(std::uint64_t* w) { Scheme::set_many(w, digests, n, shape_.bits, 1u, write, changed, true); }) {
        if (shape_.probing == Probing::scheme) {
          cells_.mark_words([&](std::uint64_t* words) {
            return Scheme::set_many(words, digests, n, shape_.bits, shape_.probes, write, changed, prefetch());
          });
          return;
        }
      }
    } else {
      const auto mark_key = [this](auto&& positions) {
        return cells_.mark_all([&positions](auto&& mark) { positions(mark); });
      };
      if constexpr (requires { Scheme::mark_many(digests, n, shape_.bits, 1u, write, changed, mark_key, line_of(), true); }) {
        if (classic_by_scheme()) {
          Scheme::mark_many(digests, n, shape_.bits, shape_.probes, write, changed, mark_key, line_of(), prefetch());
          return;
        }
      }
    }
    for (std::size_t i = 0; i < n; ++i) changed[i] = write[i] && mark_cells(digests[i]) != 0;
  }

  // Whether mark_group marks a classic slice's keys in vectors (Scheme::set_many_in_vectors),
  // which prefetch their own lines.
  bool marks_group_in_vectors() const noexcept {
    if constexpr (kGroupWrites && requires { Scheme::set_many_in_vectors(std::uint64_t{64}, 1u); }) {
      return shape_.probing == Probing::scheme && Scheme::set_many_in_vectors(shape_.bits, shape_.probes);
    } else {
      return false;
    }
  }

  // contains for other slices (LevelDB's probing, triple hashing, blocked counters,
  // FilterView's counter views): probes in groups of 4 with one branch per group. An exit at
  // the first clear bit mispredicts on most negative lookups; never exiting reads all k lines
  // of a large slice. (Measured at 1 %, 10^6 keys: 38 -> 23 ns per negative.)
  bool contains_by_probes(const Digest& digest) const noexcept {
    bool all = true;
    unsigned n = 0;
    return probe(digest, [this, &all, &n](std::uint64_t cell) {
             all &= cells_.test(cell);
             return (++n & 3) != 0 || all;
           }) && all;
  }
  [[gnu::noinline]] bool contains_by_probes_out_of_line(const Digest& digest) const noexcept {
    return contains_by_probes(digest);
  }

  // mark_cells for a triple-hashed bit slice, out of line for the same reason as
  // contains_by_probes_out_of_line.
  [[gnu::noinline]] std::uint64_t mark_by_probes_out_of_line(const Digest& digest) noexcept {
    return cells_.mark_all([this, &digest](auto&& mark) { return this->probe(digest, mark); });
  }

  // probe() for a triple-hashed slice, out of line: inlined, its loop made probe() too large
  // for GCC 12 to inline into its callers (prefetch_probes became a call per key).
  template <class Visit>
  [[gnu::noinline]] bool probe_triple(const Digest& digest, Visit& visit) const {
    return TripleHashing::probe(digest, shape_.bits, shape_.probes, visit);
  }

  // A classic slice whose probes the scheme's kernels place (not triple hashing).
  bool classic_by_scheme() const noexcept {
    return shape_.layout == Layout::classic && shape_.probing == Probing::scheme;
  }

  using Screen = detail::ScreenSteps<Scheme>;
  auto line_of() const noexcept {
    return [this](std::uint64_t cell) { return cells_.address_of(cell); };
  }

  // Word w of a bit array or of packed counters: BitCells' or CounterCells' words, or a
  // view's stored words (by a copy of the view's pointer, which the probe loop then keeps
  // in a register).
  auto word_reader() const noexcept {
    if constexpr (kStoredWords) {
      return [cells = cells_](std::uint64_t w) { return cells.word(w); };
    } else if constexpr (kCounterWords) {
      return [words = cells_.words().data()](std::uint64_t w) { return words[w]; };
    } else {
      return [words = cells_.data()](std::uint64_t w) { return words[w]; };
    }
  }

  std::uint64_t block_of(const Digest& digest) const noexcept {
    if constexpr (kBlockable) {
      return blocked::block_of(digest, shape_.bits / kBlockBits);
    } else {
      return 0;
    }
  }

  SliceShape shape_;
  std::uint64_t full_cells_;  // full() from this many set cells on (sizing.hpp, full_cells)
  Cells cells_;
  std::uint64_t items_ = 0;
  UnixSeconds opened_at_ = 0;
};

}  // namespace segbloom
