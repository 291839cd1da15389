// segbloom: a scalable Bloom filter that many threads insert into and query at once.
//
//   segbloom::Options opts;
//   opts.capacity = 1'000'000;
//   opts.false_positive_rate = 0.01;
//   segbloom::ConcurrentScalableBloomFilter seen(opts);
//   // from any number of threads at once:
//   bool is_new = seen.insert(std::uint64_t{4711});
//   bool was_seen = seen.contains(std::uint64_t{4711});
//   // when the writers are done, for serialization:
//   segbloom::ScalableBloomFilter plain = seen.to_plain();
//
// Same options, slice shapes, hashing and answers as ScalableBloomFilter: a single thread
// inserting the same keys into both leaves the same bits, and to_plain() of the one
// compares equal (==) to the other. Both layouts (Options::layout classic and blocked),
// and time windows (Options::slice_lifetime, with the Clock given to the constructor).
//
// Concurrency. Every member function may be called from any number of threads at once
// (except construction, destruction and clear(), which need exclusive use). No lock is taken by contains(), nor by an
// insert() that writes into the newest slice: bits are set with atomic fetch_or on
// 64-bit words (or, where the CPU has RTM, a key's words in one hardware transaction:
// detail/transaction.hpp), and the slice list is an array of slots published with release/acquire.
// Only the insert that finds the newest slice full takes a mutex, to open the next slice
// (growing mode) or to clear the oldest and reuse it (window mode; a slot stored under an
// earlier sizing gets a new slice instead, its old one kept until clear(): replace_slot);
// inserts that need the new slice wait for it; readers and other inserts do not.
//
// Guarantees under concurrency:
//   - No false negatives: a key whose insert() returned is found by every contains()
//     that starts afterwards (in any thread that synchronises with the inserter, e.g.
//     through a join, a mutex or an atomic flag), unless window rotation dropped it.
//   - Window mode keeps the plain filter's promise: a key stays found until W - 1
//     further slices have been opened after its insert returned, i.e. during at least
//     the next capacity * (W - 1) / W inserts. An insert that raced with the opening of
//     a slice writes its key again into the newest slice before returning, so a slice
//     being recycled under it never takes its key away, for W >= 2. With W = 1 the one
//     slice is the newest and the oldest at once: an insert racing with its clearing may
//     return true and still lose its key to the clear (the plain filter's W = 1 drops
//     every key at each rotation anyway).
//   - Time windows keep the plain filter's promise too: a key inserted at time t is found
//     while the clock reads less than t + L (see "Timed filters" below).
//   - A contains() or contains_many() racing with the clearing (or replacement) of the
//     oldest slice (window mode) or of an expired one (timed) may miss the keys held only
//     by that slice: they are being dropped anyway.
//   - insert() returns true when it found no slice reporting the key and wrote it. Two
//     threads inserting the same new key at once may both get true (and both count in
//     size()); in growing mode a key inserted once from one thread is counted once (in
//     window mode an insert that raced with an opening counts in both slices it wrote).
//   - Half-full trigger: a slice may end up past half full by at most (T - 1)(B + k) + Tk
//     cells for T writer threads (B = bits / 2^16: 175 cells for 2 threads at 10^6 items,
//     about 15 000 for 2 threads at 10^8; the rate effect in detail/concurrent_slice.hpp),
//     because other threads' inserts in flight when it fills still land in it.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "segbloom/bit_cells.hpp"
#include "segbloom/clock.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/concurrent_slice.hpp"
#include "segbloom/detail/timed_slots.hpp"
#include "segbloom/detail/lookup_slices.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/options.hpp"
#include "segbloom/probing.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "segbloom/sizing.hpp"

namespace segbloom {

class ConcurrentScalableBloomFilter {
 public:
  using Scheme = DoubleHashingScheme;
  using Digest = Scheme::Digest;

  // Throws std::invalid_argument when `options` are out of range (see options.hpp).
  // `clock` (which must outlive the filter and may be read from any thread) times slices
  // when options.slice_lifetime > 0, as the plain filter's.
  explicit ConcurrentScalableBloomFilter(const Options& options = {}, const Clock& clock = system_clock())
      : options_(checked(options)), clock_(&clock) {
    publish(0, std::make_unique<slice_type>(shape_of(0)));
    if (timed()) start_timed();
    set_opened(1);
  }

  // A concurrent copy of a plain filter (e.g. one just deserialized), with its clock.
  // Throws std::invalid_argument when its rotation count disagrees with its slices (a
  // window filter without a lifetime rotates only with all W slices) or passes 2^58 - 65
  // (kMaxRotations: the count shares a word with a slot number).
  explicit ConcurrentScalableBloomFilter(const ScalableBloomFilter& plain)
      : options_(checked(plain.options())), clock_(&plain.clock()) {
    const auto& slices = plain.slices();
    const std::uint64_t rotations = plain.rotations();
    if (timed()) {
      copy_timed(slices, rotations);
      return;
    }
    if (rotations != 0 && slices.size() != options_.max_slices) {
      throw std::invalid_argument("segbloom: " + std::to_string(rotations) +
                                  " rotations stored with " + std::to_string(slices.size()) +
                                  " slices; rotations need all max_slices slices");
    }
    if (rotations > kMaxRotations) {
      throw std::invalid_argument("segbloom: " + std::to_string(rotations) +
                                  " rotations stored; a concurrent filter counts at most " +
                                  std::to_string(kMaxRotations));
    }
    const std::uint64_t opened = rotations + slices.size();
    for (std::size_t j = 0; j < slices.size(); ++j) {
      const auto& s = slices[j];
      const std::uint64_t n = opened - slices.size() + j;
      publish(n, std::make_unique<slice_type>(s.shape(), s.cells().words(),
                                              s.cells().set_count(), s.items()));
    }
    set_opened(opened);
  }

  ConcurrentScalableBloomFilter(const ConcurrentScalableBloomFilter&) = delete;
  ConcurrentScalableBloomFilter& operator=(const ConcurrentScalableBloomFilter&) = delete;

  // --- Writes -------------------------------------------------------------------

  // Test-and-set, as ScalableBloomFilter::insert: returns false when some slice already
  // reports the key; otherwise sets the key's cells in the newest slice and returns true.
  // Window mode and timed filters copy a key reported only by an older slice into the newest one (and
  // returns false). Throws std::length_error when a growing filter would need more than
  // 64 slices, and std::bad_alloc when the slice it must open cannot be allocated (growing
  // mode; window mode only when it replaces a slot stored under an earlier sizing; timed
  // filters when a slot is used for the first time), leaving the filter as it was.
  template <Key K>
  bool insert(const K& key) {
    return insert_digest(digest(key));
  }

  bool insert_digest(const Digest& d) {
    if (timed()) [[unlikely]] return insert_timed(d);
    return insert_loop<false>(d, 0);
  }

  // Inserts every key in order; `inserted`, if not empty, must have keys.size()
  // elements and receives each insert's result. Returns the number inserted. Keys go in
  // groups of 16: hashed together, their lines prefetched one group ahead, then inserted in
  // order, with the same results as insert() key by key (exact with one writer; a race that
  // answers otherwise, and keys written before a throw: insert_group), where the CPU has RTM and the
  // filter has no lifetime, up to 8 keys a hardware transaction (insert_group: blocked and
  // classic on an Intel Xeon, 2 Dec 2026: 0.65-0.75 and 0.83-0.89 of the time), else
  // one by one. Prefetched: the older live slices of the moment where
  // worth it (ConcurrentSlice::worth_prefetching, by size, as the plain filter's), and the
  // newest one there too or while other threads write into concurrent filters
  // (detail::other_writer_threads). The newest slice takes every thread's writes, and a
  // write takes the line into the writing core's cache: a slice that fits in a core's L2,
  // which one writer finds there, then has its lines spread over the cores, and about half
  // of a key's lines are in the other core. Measured (Intel Xeon, Emerald Rapids, 2 cores,
  // 10^6 keys, p = 1 %, insert_many in calls of 1 000 keys, both versions in one process):
  // 2 threads 0.69-0.74 of the time (blocked; 42.6 -> 32.5 ns a key) and 0.75 (classic),
  // one thread 1.00-1.01. (Prefetching always, one thread: classic 1.10, its k lines taking
  // k probe positions to find; hence the test for other writers.) The test counts any live
  // thread that has inserted into a concurrent filter, even one now idle: a lone writer
  // beside such threads prefetches too.
  template <Key K>
  std::size_t insert_many(std::span<const K> keys, std::span<bool> inserted = {}) {
    detail::check_batch_output(keys.size(), inserted.size(), true);
    if (keys.empty()) return 0;
    const unsigned stripe = detail::this_thread_stripe();
    std::size_t count = 0;
    detail::for_each_group_ahead<Digest>(
        keys.size(),
        [&](std::size_t start, std::size_t n, Digest* digests, bool) {
          digest_group(keys, start, n, digests);
          detail::SliceList<slice_type> older;  // the live slices of the moment but the newest
          const Opened now = load_opened();
          any_live_slice(now, 1, [&older](const slice_type& s) {
            older.add(s);
            return false;
          });
          detail::prefetch_group(older.span(), detail::BatchOp::insert, static_cast<const Digest*>(digests), n);
          const slice_type& newest = *slots_[now.newest_slot].load(std::memory_order_acquire);
          if (newest.worth_prefetching(detail::BatchOp::insert) || detail::other_writer_threads(stripe)) {
            newest.prefetch(digests, n);
          }
        },
        [&](std::size_t start, std::size_t n, const Digest* digests, std::span<const Digest>) {
          const auto answer = [&](std::size_t i, bool added) { count += detail::record(inserted, start + i, added); };
          if (timed() || !detail::writes_in_groups()) {
            for (std::size_t i = 0; i < n; ++i) answer(i, insert_digest(digests[i]));
          } else {
            insert_group(digests, n, stripe, answer);
          }
        });
    return count;
  }

  // --- Reads --------------------------------------------------------------------

  template <Key K>
  bool contains(const K& key) const {
    return contains_digest(digest(key));
  }

  bool contains_digest(const Digest& d) const noexcept {
    const Opened now = load_opened();
    return slots_[now.newest_slot].load(std::memory_order_acquire)->contains(d) ||
           contains_before_newest(d, now);
  }

  // found[i] = contains(keys[i]); `found` must have keys.size() elements. Returns the
  // number found. The live slices are read once, as the call begins. That keeps this
  // method's promise, a key whose insert happened-before the call is found: such a key is
  // in a slice live at the start, slices are never moved, and freed only by clear() and
  // the destructor, which need the filter to themselves (rotation clears a slice in
  // place, or retires it: replace_slot), and a slice opened during the call holds only keys inserted during it. The
  // batch asks them as the plain filter's batches ask its slices (detail::lookup_slices:
  // the blocked kernel, the classic group walk, or the screen beyond the cache), reading
  // their words with relaxed loads (ConcurrentSlice, detail::RelaxedLoads).
  template <Key K>
  std::size_t contains_many(std::span<const K> keys, std::span<bool> found) const {
    detail::check_batch_output(keys.size(), found.size(), false);
    const slice_type* newest_first[kMaxSlices];
    std::size_t live = 0;
    any_live_slice(load_opened(), 0, [&](const slice_type& s) {
      newest_first[live++] = &s;
      return false;
    });
    detail::SliceList<slice_type> list;  // oldest first
    while (live > 0) list.add(*newest_first[--live]);
    return detail::lookup_slices(list.span(), keys.size(), found.data(),
                                 [&](std::size_t start, std::size_t n, Digest* digests) {
                                   digest_group(keys, start, n, digests);
                                 });
  }

  template <Key K>
  Digest digest(const K& key) const {
    return Scheme::hash(key, options_.seed);
  }

  // --- Statistics ---------------------------------------------------------------
  // Exact when no insert is in progress; a consistent-enough estimate otherwise. (Window
  // mode: an insert that raced with the clearing of its slot may have left that slot's
  // counts up to B cells and a few items high until it is cleared again; see the top of
  // detail/concurrent_slice.hpp.)

  // Items held, as ScalableBloomFilter::size(): in growing mode the number of inserts
  // that returned true (a new key inserted by two threads at once may count twice). In
  // window mode items of recycled slices are gone, refreshed keys count again, and an
  // insert that raced with a slice opening counts in both slices it wrote.
  std::uint64_t size() const noexcept {
    std::uint64_t total = 0;
    for_each_live([&total](std::size_t, const slice_type& s) { total += s.items(); });
    return total;
  }

  std::size_t slice_count() const noexcept {
    if (timed()) return static_cast<std::size_t>(std::popcount(timed_->live()));
    const std::uint64_t opened = opened_count();
    return static_cast<std::size_t>(opened - first_live(opened));
  }

  // Slices cleared and reused (window) or expired (timed) so far.
  std::uint64_t rotations() const noexcept {
    return timed() ? timed_->rotations() : first_live(opened_count());
  }

  // Heap bytes of the slices (cells and counting stripes) plus the filter itself. Slices
  // kept though no longer live count without the whole pages they gave back to the kernel
  // (at most two partial pages of cells each, and their stripes): in a timed filter the
  // expired slices kept for their slots' next openings, and the slices a window retired
  // (slots stored under an earlier sizing, kept until clear(): replace_slot).
  std::uint64_t memory_bytes() const noexcept {
    std::uint64_t total = sizeof(*this) + retired_bytes_.load(std::memory_order_relaxed) +
                          (timed_ ? sizeof(detail::TimedSlots) : 0);
    for (const auto& slot : slots_) {
      if (const slice_type* s = slot.load(std::memory_order_acquire)) total += s->memory_bytes();
    }
    return total;
  }

  // 1 - prod(1 - rate_i), each slice's rate from its fill and items (slice_rate_at_fill).
  double estimated_false_positive_rate() const noexcept {
    double rate = 0;
    for_each_live([&rate](std::size_t, const slice_type& s) {
      const double fill = static_cast<double>(s.set_count()) / static_cast<double>(s.shape().bits);
      rate = combine_rates(rate, slice_rate_at_fill(s.shape(), fill, s.items()));
    });
    return rate;
  }

  // Timed filters: the clock that times slices (Options::slice_lifetime).
  const Clock& clock() const noexcept { return *clock_; }

  // Timed filters: drops the slices whose lifetime is over as of the clock's now, as
  // ScalableBloomFilter::expire() (inserts do it first themselves). Returns the number
  // dropped. Without Options::slice_lifetime: does nothing. Takes the opening mutex.
  std::size_t expire() { return timed() ? expire_at(detail::filter_time(*clock_)) : 0; }

  const Options& options() const noexcept { return options_; }

  // Statistics of the whole filter and of each slice, oldest first, as
  // ScalableBloomFilter::stats() gives them (memory_bytes as this filter's own
  // memory_bytes()). Safe at any time, like the counts above: exact when writers are
  // quiescent, each slice's counts a few inserts apart from its bits otherwise.
  FilterStats stats() const {
    FilterStats stats;
    stats.memory_bytes = memory_bytes();
    stats.rotations = for_each_live([&](std::size_t slot, const slice_type& s) {
      const SliceShape& shape = s.shape();
      const std::uint64_t set = s.set_count();
      const double fill = static_cast<double>(set) / static_cast<double>(shape.bits);
      const double rate = slice_rate_at_fill(shape, fill, s.items());
      stats.slices.push_back({shape.capacity, shape.false_positive_rate, shape.probes, shape.bits, s.items(), set,
                              fill, rate, s.memory_bytes(), shape.index, opened_at_of(slot), shape.probing});
      stats.size += s.items();
      stats.estimated_false_positive_rate = combine_rates(stats.estimated_false_positive_rate, rate);
    });
    return stats;
  }

  // --- Clearing -------------------------------------------------------------------

  // Back to the state of a new filter with the same options (one empty slice; rotations
  // count from 0 again). NOT safe while any other thread uses the filter: it frees the
  // slices other calls may be reading. Call it, like the destructor, when every other
  // thread is done with the filter (e.g. after joining them, or under a lock of your own
  // that all users of the filter take).
  void clear() {
    std::lock_guard<std::mutex> lock(open_mutex_);
    auto first = std::make_unique<slice_type>(shape_of(0));  // may throw: nothing changed yet
    for (std::size_t slot = 0; slot < owned_.size(); ++slot) {
      slots_[slot].store(nullptr, std::memory_order_relaxed);
      owned_[slot].reset();
    }
    retired_.clear();
    retired_bytes_.store(0, std::memory_order_relaxed);
    publish(0, std::move(first));
    if (timed()) start_timed();
    set_opened(1);
  }

  // --- Conversion -----------------------------------------------------------------

  // A plain copy (for serialization, stats(), equality). Exact when no insert runs
  // during the call. Taken while inserts run, it never blocks them, and it contains
  // every key whose insert returned before the call began, except (window mode) keys
  // of a slice recycled during the call; later keys may or may not be in it, and its
  // per-slice counts may be a few inserts off from its bits (never below set bits / k,
  // which loaders require). (Timed: a copy taken while
  // a slice opens may carry the new slice's first open-time reading, the moment before
  // open_in moves it to the closing one, and close the old slice that much earlier.)
  ScalableBloomFilter to_plain() const {
    std::vector<ScalableBloomFilter::slice_type> slices;
    std::vector<std::uint64_t> words;
    const std::uint64_t rotations = for_each_live([&](std::size_t slot, const slice_type& s) {
      words.resize(s.shape().bits / 64);
      s.copy_words(words);
      BitCells cells = BitCells::from_words(words);
      // Items counted after the cells set may trail the bits read during writes: at least
      // what the bits need, as the loaders require (detail::fewest_items).
      const std::uint64_t items = std::max(s.items(), detail::fewest_items(cells.set_count(), s.shape().probes));
      slices.emplace_back(s.shape(), std::move(cells), items);
      slices.back().set_opened_at(opened_at_of(slot));
    });
    return ScalableBloomFilter(from_parts, options_, std::move(slices), rotations, *clock_);
  }

 private:
  using slice_type = detail::ConcurrentSlice<Scheme>;

  static const Options& checked(const Options& options) {
    validate(options);
    return options;
  }

  bool timed() const noexcept { return options_.slice_lifetime.count() > 0; }

  // Open number n (0 = the first slice ever opened) lives in slot n (growing mode) or
  // n mod W (window mode: slots are reused round-robin, oldest first).
  std::size_t slot_of(std::uint64_t n) const noexcept {
    return static_cast<std::size_t>(options_.max_slices == 0 ? n : n % options_.max_slices);
  }
  // Oldest live open number when `opened` slices have been opened = rotations so far.
  std::uint64_t first_live(std::uint64_t opened) const noexcept {
    const std::uint64_t window = options_.max_slices;
    return window != 0 && opened > window ? opened - window : 0;
  }

  template <Key K>
  void digest_group(std::span<const K> keys, std::size_t start, std::size_t n, Digest* out) const {
    hash_group<Scheme>(keys, start, n, options_.seed, out);
  }

  // opened_ holds how many slices have been opened so far (the newest is number count - 1)
  // and, in its low kSlotBits bits, the newest one's slot, so that one load gives both and
  // lookups find the newest slice without computing (count - 1) mod W: that division cost
  // 1 to 2 ns a lookup (1 thread, 10^6 keys, window of 1 slice).
  struct Opened {
    std::uint64_t count;
    std::size_t newest_slot;
  };
  static constexpr unsigned kSlotBits = 6;
  static_assert(kMaxSlices <= (std::size_t{1} << kSlotBits));
  // The most rotations the count has room for (with a window of kMaxSlices on top).
  static constexpr std::uint64_t kMaxRotations = (~std::uint64_t{0} >> kSlotBits) - kMaxSlices;
  Opened load_opened() const noexcept {
    const std::uint64_t packed = opened_.load(std::memory_order_acquire);
    return {packed >> kSlotBits, static_cast<std::size_t>(packed & ((1u << kSlotBits) - 1))};
  }
  std::uint64_t opened_count() const noexcept { return load_opened().count; }
  void set_opened(std::uint64_t count) noexcept { set_opened(count, slot_of(count - 1)); }
  void set_opened(std::uint64_t count, std::size_t newest_slot) noexcept {
    opened_.store(count << kSlotBits | newest_slot, std::memory_order_release);
  }

  // Calls visit(slice) for the live slices, newest first, but the newest `skip`, until
  // it returns true; returns whether it did. Slots are walked down from the newest's,
  // round-robin in window mode: no division on the lookup path.
  // (Timed filters: the newest, then the other live slots in slot order; skip is 0 or 1.)
  template <class Visit>
  bool any_live_slice(const Opened& now, std::uint64_t skip, Visit&& visit) const noexcept {
    if (timed()) [[unlikely]] return any_live_slot(now, skip, visit);
    const std::uint64_t live = now.count - first_live(now.count);
    std::size_t slot = now.newest_slot;
    for (std::uint64_t j = 0; j < live; ++j) {
      if (j != 0) slot = (slot == 0 ? options_.max_slices : slot) - 1;  // only window mode wraps
      if (j >= skip && visit(*slots_[slot].load(std::memory_order_acquire))) return true;
    }
    return false;
  }

  // any_live_slice for timed filters, out of line (the lookup paths of the others stay as
  // small as before).
  template <class Visit>
  [[gnu::noinline]] bool any_live_slot(const Opened& now, std::uint64_t skip, Visit& visit) const noexcept {
    if (skip == 0 && visit(*slots_[now.newest_slot].load(std::memory_order_acquire))) return true;
    std::uint64_t others = timed_->live() & ~(std::uint64_t{1} << now.newest_slot);
    for (; others != 0; others &= others - 1) {
      if (visit(*slots_[std::countr_zero(others)].load(std::memory_order_acquire))) return true;
    }
    return false;
  }

  bool contains_before_newest(const Digest& d, const Opened& now) const noexcept {
    return any_live_slice(now, 1, [&d](const slice_type& s) { return s.contains(d); });
  }

  SliceShape shape_of(std::uint64_t n) const {
    return slice_shape(options_, options_.max_slices == 0 ? static_cast<std::uint32_t>(n) : 0,
                       Scheme::kMaxProbes);
  }

  void publish(std::uint64_t n, std::unique_ptr<slice_type> slice) { publish_at(slot_of(n), std::move(slice)); }
  void publish_at(std::size_t slot, std::unique_ptr<slice_type> slice) {
    owned_[slot] = std::move(slice);
    slots_[slot].store(owned_[slot].get(), std::memory_order_release);
  }

  // Window mode: an insert's writes into the newest slice come before its re-check of the
  // count (insert_digest), as the rule "a slice opened since means write again" needs: a
  // re-check that read the count from before the write could miss an opening whose
  // recycling then clears the key. On x86-64 every write of set() is a locked instruction
  // or a committed RTM transaction, which the CPU orders before every later load, and a
  // set() that found all the key's bits set wrote nothing but read them, and x86-64 keeps
  // loads in order: only the compiler must keep the order (a signal fence). Elsewhere a
  // full fence (a relaxed read-modify-write may complete after a later acquire load on
  // ARMv8 or POWER).
  static void write_before_recheck() noexcept {
#if defined(__x86_64__) && !SEGBLOOM_TSAN
    std::atomic_signal_fence(std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
  }

  // Opens slice number `opened` (the slow path): only the first thread that found slice
  // `opened - 1` full does it, under the mutex; the others wait, then retry. Readers and
  // inserts into a not-full newest slice never wait. Growing mode allocates a new slice
  // and publishes it before the count; window mode clears the oldest slot in place (or,
  // sized by an earlier rule, replaces it: replace_slot).
  void open_after(std::uint64_t opened, UnixSeconds time) {
    std::lock_guard<std::mutex> lock(open_mutex_);
    if (opened_count() != opened) return;  // opened by another thread
    if (timed()) {
      open_timed(opened, time);
      return;
    }
    const std::uint64_t window = options_.max_slices;
    if (window == 0 || opened < window) {
      if (window == 0 && opened >= kMaxSlices) {
        throw std::length_error("segbloom: a growing filter reached " +
                                std::to_string(kMaxSlices) +
                                " slices; raise Options::capacity or Options::growth");
      }
    } else if (opened + 1 - window > kMaxRotations) {  // some 2^58 rotations: never in practice
      throw std::length_error("segbloom: a concurrent filter reached " + std::to_string(kMaxRotations) +
                              " rotations");
    }
    prepare_slot(slot_of(opened), shape_of(opened));
    set_opened(opened + 1);
  }

  // Readies `slot` for a new slice of `shape` (under the mutex): a new slice where the slot
  // has none; a replacement where its slice has another shape (stored under an earlier
  // sizing: replace_slot); else its slice cleared in place. The fence pairs with
  // write_before_recheck's and is the release side of the acquire fence insert_loop takes
  // after reading a block: the clear's stores come after it. Throws, changing nothing, when
  // a slice cannot be allocated.
  void prepare_slot(std::size_t slot, const SliceShape& shape) {
    if (!owned_[slot]) {
      publish_at(slot, std::make_unique<slice_type>(shape));
      return;
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!(owned_[slot]->shape() == shape)) [[unlikely]] {
      replace_slot(slot, shape);
    } else {
      owned_[slot]->clear();
    }
  }

  // A slot stored under an earlier sizing (a blob from before triple hashing: double
  // hashing where today's plan triple-hashes), taken again by a window or a timed filter:
  // it gets a new slice of today's shape, as the plain filter's windows do, instead of
  // being cleared in place. Calls that loaded the old slice's pointer may still be reading
  // it, so it is retired, not freed, until clear() or the destructor; its whole pages go
  // back to the kernel at once (release_pages). A new slice has today's shape, so each
  // slot is replaced once at most.
  void replace_slot(std::size_t slot, const SliceShape& planned) {
    auto fresh = std::make_unique<slice_type>(planned);  // may throw: nothing changed yet
    retired_.reserve(retired_.size() + 1);
    retired_.push_back(std::move(owned_[slot]));
    publish_at(slot, std::move(fresh));
    retired_.back()->release_pages();
    retired_bytes_.fetch_add(retired_.back()->memory_bytes(), std::memory_order_relaxed);
  }

  // insert_many's inserts of one group of keys into a filter without a lifetime, with the same
  // answers as insert() key by key: answer(i, inserted) for each. Where the newest slice takes
  // them (ConcurrentSlice::takes_group: a transaction, or the tests' groups without one, and
  // room for kKeysPerTransaction more keys), the next keys are tested as insert_loop tests one,
  // and those to write (new, or in window mode held only by an older slice) are written
  // kKeysPerTransaction at a time in one hardware transaction (set_group), which costs about
  // what one key's did. A key whose cells an earlier key of its transaction had all set counts
  // as held, as it would have key by key. Window mode checks, as insert_loop does, that no
  // slice opened meanwhile: after the tests (else the keys go one by one) and after the write
  // (else each written key goes through insert_loop again, its answer kept). Otherwise, near a
  // full slice say, one key goes by insert_digest.
  // Two ways it differs from insert() key by key: when another thread sets all of a key's
  // cells between the test and the write, the key answers false and counts no item (insert()
  // would count it: then two threads inserting one new key get exactly one true); and when
  // the window's redo throws (std::bad_alloc opening a slice), the later keys of the same
  // transaction are already written and counted but not answered.
  template <class Answer>
  void insert_group(const Digest* digests, std::size_t n, unsigned stripe, Answer&& answer) {
    constexpr std::size_t kPerTransaction = slice_type::kKeysPerTransaction;
    const bool recycles = options_.max_slices != 0;
    std::size_t i = 0;
    while (i < n) {
      const Opened now = load_opened();
      slice_type& newest = *slots_[now.newest_slot].load(std::memory_order_acquire);
      if (!newest.takes_group(stripe, kPerTransaction)) {
        answer(i, insert_digest(digests[i]));
        ++i;
        continue;
      }
      const std::size_t first = i;
      std::uint32_t picked[kPerTransaction];
      bool is_new[kPerTransaction];  // not in an older slice either
      std::uint64_t held = 0;        // bit i - first: the newest slice holds key i
      std::size_t m = 0;
      for (; i < n && m < kPerTransaction && i - first < 64; ++i) {
        if (newest.contains(digests[i])) {
          held |= std::uint64_t{1} << (i - first);
          continue;
        }
        const bool seen = contains_before_newest(digests[i], now);
        if (seen && !recycles) {
          held |= std::uint64_t{1} << (i - first);
          continue;
        }
        is_new[m] = !seen;
        picked[m++] = static_cast<std::uint32_t>(i);
      }
      if (recycles) {  // the slot read may have been recycled: its answers say nothing
        std::atomic_thread_fence(std::memory_order_acquire);
        if (opened_count() != now.count) {
          for (std::size_t k = first; k < i; ++k) answer(k, insert_digest(digests[k]));
          continue;
        }
      }
      for (; held != 0; held &= held - 1) answer(first + static_cast<std::size_t>(std::countr_zero(held)), false);
      if (m == 0) continue;
      std::uint64_t fresh[kPerTransaction];
      newest.set_group(digests, picked, m, stripe, fresh);
      for (std::size_t j = 0; j < m; ++j) {
        if (fresh[j] != 0) newest.count(stripe, fresh[j]);
      }
      bool again = false;
      if (recycles) {
        if (const auto hook = detail::after_group_write_for_tests.load(std::memory_order_relaxed)) hook();
        write_before_recheck();
        again = opened_count() != now.count;
      }
      for (std::size_t j = 0; j < m; ++j) {
        const Digest& d = digests[picked[j]];
        answer(picked[j], again ? insert_loop<false>(d, 0, is_new[j] ? 1 : 0, fresh[j] != 0)
                                : is_new[j] && fresh[j] != 0);
      }
    }
  }

  // insert_digest's loop, once for filters with a lifetime (kTimed: `time` is the insert's
  // clock reading) and once without, where none of the timed tests is compiled in (the
  // tests of a lifetime in every insert cost classic per-key inserts about 10 %).
  // `answer` and `wrote` (insert_group's keys, written once and looked at again): see below.
  template <bool kTimed>
  bool insert_loop(const Digest& d, UnixSeconds time, int answer = -1, bool wrote = false) {
    const unsigned stripe = detail::this_thread_stripe();
    // Window mode and timed filters recycle or expire slices: their keys may be cleared
    // under an insert, which then writes again, and a key only an older slice reports is
    // copied on.
    const bool recycles = kTimed || options_.max_slices != 0;
    // answer: decided once, by the first look at the older slices (1 = new; -1: not yet);
    // wrote: this call (or insert_group) wrote the key.
    for (;;) {
      const Opened now = load_opened();
      const std::uint64_t opened = now.count;
      slice_type& newest = *slots_[now.newest_slot].load(std::memory_order_acquire);
      if (newest.contains(d)) {
        // Window mode and timed filters: if a slice was opened meanwhile, the slot read may
        // have been recycled, even be half cleared: its answer says nothing about the key;
        // look again. (The acquire fence keeps the block's relaxed loads before the count's
        // load; growing mode never clears a slice and needs neither.)
        if (recycles) {
          std::atomic_thread_fence(std::memory_order_acquire);
          if (opened_count() != opened) continue;
        }
        // A timed filter copies a key its closed newest slice holds into a new slice, as
        // the plain filter does: the closed one expires a lifetime after it closed.
        if (kTimed && !takes_writes<kTimed>(newest, now.newest_slot, stripe, time)) {
          if (answer < 0) answer = 0;
          open_after(opened, time);
          continue;
        }
        return answer == 1 && wrote;  // true only when this call wrote the key (redo)
      }
      if (answer < 0) {
        const bool seen = contains_before_newest(d, now);
        if (seen && !recycles) return false;
        answer = seen ? 0 : 1;
      }
      if (!takes_writes<kTimed>(newest, now.newest_slot, stripe, time)) {
        open_after(opened, time);
        continue;
      }
      newest.count(stripe, newest.set(d, stripe));
      wrote = true;
      // Window mode and timed filters: if a slice was opened meanwhile, the one just
      // written may be the next to be recycled (or, timed, to expire), or being cleared
      // right now: write the key again into the newest. If nothing was opened, the slice
      // written is recycled only after W - 1 more openings, all later than this load, and
      // (timed) expires no sooner than a lifetime after this insert's time: it takes writes
      // until then. (Growing mode without a lifetime never clears a slice.)
      if (recycles) {
        write_before_recheck();
        if (opened_count() != opened) continue;
      }
      return answer == 1;
    }
  }

  // A timed filter's insert (out of line): the clock once per insert, as the plain
  // filter's; slices expired by then are dropped first (under the mutex, when the oldest
  // is due: TimedSlots::expiry_due).
  [[gnu::noinline]] bool insert_timed(const Digest& d) {
    const UnixSeconds time = detail::filter_time(*clock_);
    if (timed_->expiry_due(time)) expire_at(time);
    return insert_loop<true>(d, time);
  }

  // --- Timed filters (Options::slice_lifetime = L > 0) -------------------------------
  // The live slices are the slots of timed_->live() (detail/timed_slots.hpp), not a range
  // of open numbers: expiry drops the oldest without an opening. A growing filter's new
  // slice takes the smallest sequence index no live slice uses, as the plain filter's, and
  // the slot of that index; a window's takes a free one of its W slots, or recycles the
  // oldest. So a slot's slice always has the shape of the next one there (but a slot
  // stored under an earlier sizing, replaced once: replace_slot), and an expired slice is
  // cleared in place when its slot is taken again, never freed while lock-free calls may be
  // reading it; meanwhile its pages are the kernel's (expire_at). Times and the order of
  // openings are written under the mutex, before the slot joins the live mask.
  //
  // A slice stops taking writes at its lifetime's end or when the next one opens, and
  // expires a lifetime later. The plain filter takes the next one's open time for the
  // latter; here it is the clock read after the opening is published (mark_closed): an
  // insert that wrote into the slice and then found no opening (insert_digest's re-check)
  // read its time before that, so its key stays a lifetime from its insert.

  UnixSeconds opened_at_of(std::size_t slot) const noexcept { return timed() ? timed_->opened_at(slot) : 0; }

  // The newest slice takes writes until it is full or (timed) its lifetime has passed.
  template <bool kTimed>
  bool takes_writes(const slice_type& newest, std::size_t slot, unsigned stripe, UnixSeconds time) const noexcept {
    if (newest.full(stripe)) return false;
    return !kTimed || timed_->open_at(slot, time);
  }

  // visit(slot, slice) for the live slices, oldest first; returns the rotation count of
  // the same reading (a copy's slices and count must agree: a window without a lifetime
  // rotates only with all W slices, and its loaders check that).
  template <class Visit>
  std::uint64_t for_each_live(Visit&& visit) const {
    detail::TimedSlots::Order order;
    std::size_t n = 0;
    std::uint64_t rotations = 0;
    if (timed()) {
      rotations = timed_->rotations();
      n = timed_->oldest_first(order);
    } else {
      const std::uint64_t opened = opened_count();
      rotations = first_live(opened);
      for (std::uint64_t k = rotations; k < opened; ++k) order[n++] = static_cast<std::uint8_t>(slot_of(k));
    }
    for (std::size_t i = 0; i < n; ++i) visit(order[i], *slots_[order[i]].load(std::memory_order_acquire));
    return rotations;
  }

  // The first slice of a new or cleared timed filter: slot 0, open now.
  void start_timed() noexcept {
    timed_->mark_opened(0, 0, detail::filter_time(*clock_));
    timed_->set_live(1);
    timed_->set_rotations(0);
    timed_->update_expiry();
  }

  [[gnu::noinline]] std::size_t expire_at(UnixSeconds time) {
    std::lock_guard<std::mutex> lock(open_mutex_);
    detail::TimedSlots::Order order;
    const std::size_t live = timed_->oldest_first(order);
    const std::size_t n = timed_->expired(order, live, time);
    if (n == 0) return 0;
    if (n == live) {
      // Everything expired: start again from one empty slice, as a new opening (inserts
      // racing with it write their key again), in slot 0 (index 0, or the window's first).
      // Slot 0 may be the newest: an insert that wrote into it before its clearing read a
      // time under its open time + L, this call one at least a lifetime later, so that key
      // is older than a lifetime already.
      open_in(0, shape_of(0), opened_count(), std::max(time, detail::filter_time(*clock_)), 0);
    } else {
      std::uint64_t mask = timed_->live();
      for (std::size_t i = 0; i < n; ++i) mask &= ~(std::uint64_t{1} << order[i]);
      timed_->set_live(mask);
      timed_->update_expiry();
    }
    // The expired slices stay for their slots' next openings (calls that loaded them may
    // still read them), but their pages go back to the kernel now, as the plain filter
    // frees them: prepare_slot clears a slice before it is used again.
    for (std::size_t i = 0; i < n; ++i) {
      if (n != live || order[i] != 0) owned_[order[i]]->release_pages();
    }
    timed_->add_rotations(n);
    return n;
  }

  // open_after for a timed filter (under the mutex). The new slice's open time is read
  // now, not taken from the insert that asked (which may have waited for the mutex): never
  // earlier than the newest's, so that stored copies, which take the next slice's open time
  // for a slice's close (to_plain), keep each key about a lifetime.
  [[gnu::noinline]] void open_timed(std::uint64_t opened, UnixSeconds insert_time) {
    UnixSeconds time = std::max(insert_time, detail::filter_time(*clock_));
    // Nor earlier than the newest's open time, which a clock that stepped back (or a
    // stored filter written by a server ahead of this one) may read as later.
    if (const std::size_t newest = load_opened().newest_slot; timed_->live() >> newest & 1) {
      time = std::max(time, timed_->opened_at(newest));
    }
    if (opened >= kMaxRotations) {  // some 2^58 openings: never in practice
      throw std::length_error("segbloom: a concurrent filter reached " + std::to_string(kMaxRotations) + " openings");
    }
    const std::uint64_t mask = timed_->live();
    const std::uint64_t window = options_.max_slices;
    if (window == 0) {
      const auto index = static_cast<std::size_t>(std::countr_one(mask));
      if (index >= kMaxSlices) {
        throw std::length_error("segbloom: a growing filter reached " + std::to_string(kMaxSlices) +
                                " slices; raise Options::capacity or Options::growth");
      }
      open_in(index, shape_of(index), opened, time, mask);
    } else if (static_cast<std::uint64_t>(std::popcount(mask)) < window) {
      open_in(static_cast<std::size_t>(std::countr_one(mask)), shape_of(0), opened, time, mask);
    } else {
      detail::TimedSlots::Order order;
      timed_->oldest_first(order);
      open_in(order[0], shape_of(0), opened, time, mask & ~(std::uint64_t{1} << order[0]));
      timed_->add_rotations(1);
    }
  }

  // Opens `slot` with a slice of `shape` (prepare_slot) as opening number `opened`, `mask`
  // the other live slots. Throws, changing nothing, when a slice cannot be allocated.
  void open_in(std::size_t slot, const SliceShape& shape, std::uint64_t opened, UnixSeconds time,
               std::uint64_t mask) {
    const std::size_t closing = load_opened().newest_slot;
    const bool closes = (mask >> closing & 1) != 0 && closing != slot;  // a live newest, not the one reused
    prepare_slot(slot, shape);
    timed_->mark_opened(slot, opened, time);
    timed_->set_live(mask | std::uint64_t{1} << slot);
    set_opened(opened + 1, slot);
    if (closes) {
      std::atomic_thread_fence(std::memory_order_seq_cst);  // the clock read after the count's store
      const UnixSeconds closed = std::max(time, detail::filter_time(*clock_));
      timed_->mark_closed(closing, closed);
      // A stored copy (to_plain) closes a slice at the next one's open time, so the new
      // slice opens at the same reading: a writer that saw the old count and wrote into
      // the closing slice after `time` keeps its key a lifetime in copies too. Later than
      // published only lengthens the new slice's writes.
      timed_->move_open_time(slot, closed);
    }
    timed_->update_expiry();
  }

  // The constructor from a plain timed filter: slices in slots as open_timed places them.
  void copy_timed(const std::vector<ScalableBloomFilter::slice_type>& slices, std::uint64_t rotations) {
    std::uint64_t mask = 0;
    std::size_t newest = 0;
    for (std::size_t j = 0; j < slices.size(); ++j) {
      const auto& s = slices[j];
      const std::size_t slot = options_.max_slices == 0 ? s.shape().index : j;
      if (slot >= kMaxSlices || (mask >> slot & 1)) {
        throw std::invalid_argument("segbloom: slice " + std::to_string(j) + " has sequence index " +
                                    std::to_string(slot) + ", which another live slice has");
      }
      publish_at(slot, std::make_unique<slice_type>(s.shape(), s.cells().words(), s.cells().set_count(), s.items()));
      timed_->mark_opened(slot, j, s.opened_at());
      if (j + 1 < slices.size()) timed_->mark_closed(slot, slices[j + 1].opened_at());
      mask |= std::uint64_t{1} << slot;
      newest = slot;
    }
    timed_->set_live(mask);
    timed_->set_rotations(rotations);
    timed_->update_expiry();
    set_opened(slices.size(), newest);
  }

  const Options options_;
  const Clock* clock_;  // timed filters
  // Slices opened so far, including recycled ones, and the newest one's slot (Opened).
  // Read by every operation, written only when a slice opens.
  alignas(64) std::atomic<std::uint64_t> opened_{0};
  std::array<std::atomic<slice_type*>, kMaxSlices> slots_{};
  alignas(64) std::mutex open_mutex_;
  std::array<std::unique_ptr<slice_type>, kMaxSlices> owned_{};  // written under the mutex
  std::vector<std::unique_ptr<slice_type>> retired_;  // replace_slot; under the mutex
  std::atomic<std::uint64_t> retired_bytes_{0};       // their memory_bytes()
  // Timed filters only (above): the others do without its 1.6 KB.
  const std::unique_ptr<detail::TimedSlots> timed_ =
      timed() ? std::make_unique<detail::TimedSlots>(options_.slice_lifetime.count()) : nullptr;
};

}  // namespace segbloom
