// segbloom: one slice of ConcurrentScalableBloomFilter. Its bits live in 64-bit words
// that many threads set and test at once (atomic fetch_or, or a hardware transaction where
// the CPU has RTM, and loads), and its fill count is kept by many threads without one hot
// counter.
//
// Fill count. The half-full trigger needs the count of set bits, which is counted from
// the values fetch_or returns, or the transaction read (never recounted). One shared counter updated by every insert
// would bounce its cache line between cores on every insert. Instead each thread adds to
// a stripe (one cache line of kCountStripes: its own held one while it lives, or a shared
// one beyond 16 threads) and
// moves the stripe's pending count to the shared `flushed_cells_` counter once it reaches
// B = max(1, bits / 2^16) cells (p = 1 %, 10^6 items in one slice: B = 154, one shared
// update per ~30 inserts). A held stripe has one writer, its thread, which adds with a
// plain load and store; the stripes of threads that share (below) take atomic adds.
// A thread decides "full" from flushed_cells_ + its own stripe:
//   - one writer thread: that sum is the exact count, so a single thread opens slices at
//     exactly the insert the plain filter does (same bits), if no other thread ever wrote;
//   - T <= 16 writer threads (every thread that wrote into the slice, also those that
//     exited since: their stripes keep what they had not flushed): the other stripes hold < B + k uncounted cells each, and up
//     to T inserts may be past their check, k cells each. So when a slice is found full,
//     its set cells exceed its full point (bits / 2, or full_cells in sizing.hpp) by at
//     most (T - 1) (B + k) + T k; for T = 2,
//     p = 1 %, 10^6 items that is 175 of 1.01 * 10^7 bits (d = +1.7e-5 of fill, which
//     raises the slice's rate (1/2 + d)^k by a factor (1 + 2d)^k = 1.0002, k = 7).
//     More than 16 threads share stripes; each stripe then lags by < B + (sharers) k.
//   - clear() (a window recycling its slot) may race with a thread counting into the slot:
//     a held stripe's store after clear's may bring back what the stripe held before it
//     (< B cells, as it flushes at B, and its pending items, which window mode's size()
//     then counts too), which counts high; an atomic add had kept only the add itself. As
//     before, the racing insert's own <= k new cells may be dropped (its fetch_or after
//     clear zeroed the word, its count before clear zeroed the stripe).
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "segbloom/blocked.hpp"
#include "segbloom/detail/aligned_words.hpp"
#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/popcount.hpp"
#include "segbloom/detail/screened_lookup.hpp"
#include "segbloom/detail/simd_level.hpp"
#include "segbloom/detail/transaction.hpp"
#include "segbloom/options.hpp"
#include "segbloom/probing.hpp"
#include "segbloom/sizing.hpp"

namespace segbloom::detail {

// Stripes 0-15 are held, each by one thread at a time (claim_stripe); 16-31 are shared.
inline constexpr unsigned kHeldStripes = 16;
inline constexpr unsigned kSharedStripes = 16;
inline constexpr unsigned kCountStripes = kHeldStripes + kSharedStripes;

// The blocked insert's kernels (ConcurrentSlice::set), chosen once, at start-up (false
// before: the portable code, same bits). They need AVX-512F or AVX2 and nothing more, on any
// CPU vendor (the plain filter's per-key kernels ask more: blocked::kSetAvx512,
// kSetAvx2PerKey).
inline const bool kBlockedSetAvx512 = avx512_allowed();
inline const bool kBlockedSetAvx2 = avx2_allowed();

// True when the CPU has PREFETCHW (CPUID 0x80000001, ECX bit 8), checked once.
inline bool has_prefetchw() noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 8)) != 0;
  }();
  return has;
#else
  return false;
#endif
}

// Asks for the line holding p in exclusive state, ready to be written. (GCC emits
// PREFETCHW for __builtin_prefetch(p, 1) only when compiling for it, -mprfchw; without,
// a plain read prefetch, which fetches the line shared.)
inline void prefetch_for_write(const void* p) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (has_prefetchw()) asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}

// The calling thread's counting stripe: the lowest held stripe no live thread holds, taken
// at its first insert (into any concurrent filter of the process) and given back when it
// exits, so up to 16 live writer threads never share one however many threads came and
// went before. (With stripes dealt round-robin and never given back, thread t + 16
// shared thread t's stripe: 2 threads inserting at 10^6 keys, 44.5 instead of 31 ns an
// insert.) A thread that finds all 16 held shares one of the 16 shared stripes, dealt
// round-robin, for the rest of its life; so does a thread that inserts again after its
// stripe was given back (from a destructor run at its exit). A held stripe's thread is its
// only writer, so it counts with a plain load and store (ConcurrentSlice::count); the
// release and acquire of its bit in stripes_held pass its count on to the next holder.
// Shared stripes take atomic adds: none loses a count.
// The mask and the thread's stripe must be one object each in the process, or threads in
// two shared objects could hold the same stripe of one filter and lose counts: they are
// exported (default visibility) even from a library built with -fvisibility=hidden. A
// library that copies them privately (-Bsymbolic, a static copy inside a shared object)
// must not share a concurrent filter with code outside it (README, "Guarantees and limits").
#if defined(__GNUC__) || defined(__clang__)
#define SEGBLOOM_PROCESS_WIDE __attribute__((visibility("default")))
#else
#define SEGBLOOM_PROCESS_WIDE
#endif
inline constexpr unsigned kNoStripe = ~0u;
static_assert(kHeldStripes <= 32);
SEGBLOOM_PROCESS_WIDE inline std::atomic<std::uint32_t> stripes_held{0};  // bit s: stripe s is held by a live thread
// Trivially destructible, so that a destructor running at thread exit may still ask.
SEGBLOOM_PROCESS_WIDE inline thread_local unsigned this_thread_stripe_value = kNoStripe;
SEGBLOOM_PROCESS_WIDE inline thread_local bool this_thread_stripe_given_back = false;

// Gives the thread's stripe back when the thread exits (a thread_local of claim_stripe).
struct StripeRelease {
  ~StripeRelease() {
    stripes_held.fetch_and(~(std::uint32_t{1} << this_thread_stripe_value), std::memory_order_release);
    this_thread_stripe_value = kNoStripe;
    this_thread_stripe_given_back = true;
  }
};

[[gnu::noinline, gnu::cold]] inline unsigned claim_stripe() noexcept {
  constexpr std::uint32_t kAll = static_cast<std::uint32_t>((std::uint64_t{1} << kHeldStripes) - 1);
  if (!this_thread_stripe_given_back) {
    std::uint32_t held = stripes_held.load(std::memory_order_relaxed);
    while ((held & kAll) != kAll) {
      const auto free = static_cast<unsigned>(std::countr_one(held));
      if (stripes_held.compare_exchange_weak(held, held | std::uint32_t{1} << free, std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
        this_thread_stripe_value = free;
        thread_local const StripeRelease release;  // constructed once, on this path only
        (void)release;
        return free;
      }
    }
  }
  static std::atomic<unsigned> next{0};
  this_thread_stripe_value = kHeldStripes + next.fetch_add(1, std::memory_order_relaxed) % kSharedStripes;
  return this_thread_stripe_value;
}

inline unsigned this_thread_stripe() noexcept {
  const unsigned stripe = this_thread_stripe_value;
  return stripe != kNoStripe ? stripe : claim_stripe();
}

// Whether a live thread other than the holder of `stripe` (this_thread_stripe()) holds a
// stripe: another thread has written into a concurrent filter of the process and may write
// still (or 16 hold one and more share). One relaxed load of a line written only when a
// writer thread starts or exits.
inline bool other_writer_threads(unsigned stripe) noexcept {
  const std::uint32_t others = stripe < kHeldStripes ? ~(std::uint32_t{1} << stripe) : ~std::uint32_t{0};
  return (stripes_held.load(std::memory_order_relaxed) & others) != 0;
}

// Reading a block other threads may be writing (RelaxedLoads, below: the per-key test and
// blocked/lookup_group.hpp's batch kernels).
//
// C++ lets a thread read memory that another writes only through atomics, and 8 relaxed
// atomic loads cannot become one vector load: the kernel's register was built from 8
// loads and 7 inserts. So on x86-64 the block is read by vector loads written in
// assembly: one 64-byte load for the AVX-512 kernels, two 32-byte loads for the AVX2
// ones. `asm volatile` is never deleted or merged (a loop that asks again loads
// again), and its memory operand, the block's bytes, keeps it in order with this thread's
// own accesses to them: what relaxed loads promise, and no more is needed. What the
// vector load reads is what 8 relaxed loads in some order would read, provided no
// aligned 8-byte word is read half-written. The Intel and AMD manuals promise that
// only for accesses of up to 8 bytes (16 with AVX), and say a wider access may be
// carried out as several; the block is one aligned cache line, and no x86-64 CPU is
// known to tear an aligned 8-byte part of a load within one line.
// Measured (1 thread, 10^6 keys, p = 1 %, alternating builds, median ns a lookup): the
// 8 loads -> the assembly load, per-key negatives 7.0 -> 5.9, batched 4.0 -> 2.8 (the
// plain filter's 2.7). ThreadSanitizer does not see inside assembly, so its builds keep
// the relaxed atomic loads (into the AVX-512 register or the two AVX2 ones, or the
// portable test, which loads only the words its probes fall in); the tests run both. SEGBLOOM_TSAN, detected from
// the compiler, may also be set by hand (1: the atomic loads). (Until 27 Nov 2026 the
// block was first copied to the stack: the 64-byte load then waits for the 8 stores, whose
// data cannot be forwarded to it; 11.9 ns.)
#ifndef SEGBLOOM_TSAN
#if defined(__SANITIZE_THREAD__)
#define SEGBLOOM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SEGBLOOM_TSAN 1
#endif
#endif
#endif
#ifndef SEGBLOOM_TSAN
#define SEGBLOOM_TSAN 0
#endif

// Inserts write in one hardware transaction where the CPU has RTM (detail/transaction.hpp,
// which has the why); never under ThreadSanitizer, which cannot follow one. Asked once, at
// start-up (false before: atomics).
inline const bool kWriteInTransaction = !SEGBLOOM_TSAN && rtm_allowed();

// For the tests only (off by default): the concurrent insert_many writes keys in groups
// (ConcurrentScalableBloomFilter::insert_group, ConcurrentSlice::set_group) even where no
// transaction is taken, set_group then writing its keys one by one with set(). So the
// group's logic (its tests of held and repeated keys, where it stops near a full slice, the
// window's rechecks) runs on CPUs without RTM and under ThreadSanitizer, which never takes
// a transaction. Costs insert_many one relaxed load per group of 16 keys.
inline std::atomic<bool> group_writes_without_transactions{false};

// Whether the concurrent insert_many writes keys in groups: where they go in transactions,
// or where the tests asked for it.
inline bool writes_in_groups() noexcept {
  return kWriteInTransaction || group_writes_without_transactions.load(std::memory_order_relaxed);
}

// For the tests only (null by default): called by insert_group in window mode after it has
// written a group and before it checks whether a slice opened meanwhile, so that a test can
// open slices there (from the same thread) and check that the keys are written again.
// Costs window-mode insert_many one relaxed load per group written.
inline std::atomic<void (*)()> after_group_write_for_tests{nullptr};

// Reads of a block other threads may be writing, for the blocked layout's kernels (PlainLoads
// in blocked/layout.hpp lists what they give).
struct RelaxedLoads {
  // Not the per-key tests in assembly: the concurrent filter's per-key lookups measured the
  // same with them (5.25 ns at 10^6 keys, one thread), and its blocked inserts, which ask
  // the newest slice first, slower (56 -> 59.5 ns).
  static constexpr bool kVectorLoadInAsm = false;
  static std::uint64_t word(const void* block, unsigned w) noexcept {
    // atomic_ref needs a non-const object: the concurrent slice's words are not const.
    return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t*>(static_cast<const std::uint64_t*>(block))[w])
        .load(std::memory_order_relaxed);
  }
  static blocked::WordPair pair(const void* block, unsigned q) noexcept {
    return blocked::WordPair{word(block, 2 * q), word(block, 2 * q + 1)};
  }
#ifdef SEGBLOOM_X86_SIMD
  __attribute__((target("avx512f"))) static __m512i whole(const void* block) noexcept {
#if SEGBLOOM_TSAN
    const auto at = [block](unsigned w) { return static_cast<long long>(word(block, w)); };
    return _mm512_set_epi64(at(7), at(6), at(5), at(4), at(3), at(2), at(1), at(0));
#else
    __m512i words;
    asm volatile("vmovdqu64 {%1, %0|%0, %1}"  // AT&T | Intel syntax
                 : "=v"(words)
                 : "m"(*reinterpret_cast<const std::uint64_t(*)[8]>(block)));
    return words;
#endif
  }
  __attribute__((target("avx2"))) static void halves(const void* block, __m256i& low,
                                                     __m256i& high) noexcept {
#if SEGBLOOM_TSAN
    const auto at = [block](unsigned w) { return static_cast<long long>(word(block, w)); };
    low = _mm256_set_epi64x(at(3), at(2), at(1), at(0));
    high = _mm256_set_epi64x(at(7), at(6), at(5), at(4));
#else
    asm volatile("vmovdqu {%2, %0|%0, %2}\n\tvmovdqu {%3, %1|%1, %3}"  // AT&T | Intel syntax
                 : "=x"(low), "=x"(high)
                 : "m"(*reinterpret_cast<const std::uint64_t(*)[4]>(block)),
                   "m"(*(reinterpret_cast<const std::uint64_t(*)[4]>(block) + 1)));
#endif
  }
#endif
};

template <class Scheme>
class ConcurrentSlice {
 public:
  using Digest = typename Scheme::Digest;

  explicit ConcurrentSlice(const SliceShape& shape)
      : shape_(shape),
        full_cells_(full_cells_of<Scheme>(shape)),
        words_(shape.bits / 64),
        flush_at_(flush_threshold(shape.bits)) {}

  // Restores a slice from stored words; `set_cells` must be their popcount.
  ConcurrentSlice(const SliceShape& shape, std::span<const std::uint64_t> words,
                  std::uint64_t set_cells, std::uint64_t items)
      : ConcurrentSlice(shape) {
    for (std::size_t i = 0; i < words.size() && i < words_.size(); ++i) words_[i] = words[i];
    flushed_cells_.store(set_cells, std::memory_order_relaxed);
    flushed_items_.store(items, std::memory_order_relaxed);
  }

  ConcurrentSlice(const ConcurrentSlice&) = delete;
  ConcurrentSlice& operator=(const ConcurrentSlice&) = delete;

  // True when all the key's k cells are set. Relaxed loads: a key whose insert
  // happened-before this call is seen (coherence); one racing with it may or may not be.
  // Blocked layout: blocked::contains<RelaxedLoads>. Classic layout: the plain slice's test
  // (one branch after 4 probes), where an exit at the first clear bit mispredicts on most
  // negatives. 1 thread, 10^6 keys, p = 1 %: negative lookups 30 -> 16 ns, positive 17 ->
  // 20 ns (a feed's lookups are mostly negative).
  bool contains(const Digest& digest) const noexcept {
    if constexpr (kBlockable) {
      if (shape_.layout == Layout::blocked) {
        return blocked::contains<RelaxedLoads>(words_.data() + block_index(digest) * blocked::kWordsPerBlock,
                                               blocked::in_block_hash(digest), shape_.probes);
      }
      if (shape_.probing == Probing::triple_hashing) [[unlikely]] return contains_triple(digest);
    }
    return Scheme::all_set_in(word_reader(), digest, shape_.bits, shape_.probes);
  }

  // The slice's words for Scheme's classic tests, read with relaxed loads.
  auto word_reader() const noexcept {
    return [words = words_.data()](std::uint64_t i) {
      return std::atomic_ref<std::uint64_t>(words[i]).load(std::memory_order_relaxed);
    };
  }

  // Slice::contains_group for either layout: a classic slice tests the group in
  // Scheme::all_set_many (4 or 8 keys at a time in vectors where it can), a blocked or
  // triple-hashed one key by key.
  std::size_t contains_group(const Digest* digests, std::size_t n, bool* found, bool only_missing) const noexcept {
    if constexpr (kBlockable) {
      if (shape_.layout == Layout::blocked || shape_.probing == Probing::triple_hashing) {
        return detail::answer_group(found, n, only_missing, [this, digests](std::size_t i) { return contains(digests[i]); });
      }
    }
    return Scheme::all_set_many(word_reader(), digests, n, shape_.bits, shape_.probes, found,
                                only_missing);
  }

  // Sets the key's k cells; returns how many went from 0 to 1. With atomics, a cell already
  // seen set is not written again: no locked instruction, and its cache line stays shared.
  // (A transaction writes the key's whole block, or all its k words, set or not; a key the
  // slice holds never gets here, as insert asks `contains` first.)
  // Where the CPU has RTM (kWriteInTransaction), the words to write are written in one
  // hardware transaction instead of one locked instruction each (detail/transaction.hpp):
  // a blocked key's whole block as one 64-byte load, OR and store (set_block_avx512,
  // set_block_avx2; the portable code keeps the atomics), a classic key's k words
  // (set_cells_in_transaction); when it aborts, the atomics below. The stripe's AbortRun
  // pauses transactions for a thread whose transactions keep aborting.
  // Blocked layout: the key's k bits become one mask per word of its block (`bits`); the
  // words that miss some of them are found at once (`todo`), and each takes one fetch_or
  // (write_missing). With AVX-512 or AVX2 the mask is built in registers (the plain
  // filter's blocked::mask_avx512 / mask_avx2) and compared with the block read by one
  // relaxed vector load (two for AVX2; 8 relaxed loads under SEGBLOOM_TSAN): no branch on
  // the block's bits but the walk over the words to write (set_block_avx512,
  // set_block_avx2). The portable code builds `bits` probe by probe and tests the 8 words
  // without a branch. Until 1 Dec 2026 each touched word was a branch on its bits, which
  // waited on the block's load and, mispredicted, kept the next key's work from overlapping.
  // Measured on the Intel Xeon (Emerald Rapids), bench_concurrent.cpp's blocked insert rows
  // (new keys into a one-slice filter, p = 1 %, per key and insert_many), benchmark binaries
  // alternating, medians of 4-6 processes each, against that loop: AVX-512 0.76-0.82 of the
  // time from one thread (10^6 keys: 61.9 -> 48.4 ns) and 0.77-0.86 from two; capped at AVX2
  // (SEGBLOOM_SIMD=avx2) 0.77-0.79 and 0.85-0.86; the portable code 0.84 and 0.91-0.93. The
  // classic rows, not touched, 0.99-1.05. (The AVX-512 mask's words taken from the register
  // one by one, vpermq and vmovq, instead of the array: 0.99-1.00.)
  std::uint64_t set(const Digest& digest, [[maybe_unused]] unsigned stripe) noexcept {
    if constexpr (kBlockable) {
      if (shape_.layout == Layout::blocked) {
        const std::size_t first = block_index(digest) * blocked::kWordsPerBlock;
        const std::uint32_t h = blocked::in_block_hash(digest);
#ifdef SEGBLOOM_X86_SIMD
        if (kBlockedSetAvx512) return set_block_avx512(first, h, stripes_[stripe].rtm);
        if (kBlockedSetAvx2) return set_block_avx2(first, h, stripes_[stripe].rtm);
#endif
        std::uint64_t bits[blocked::kWordsPerBlock] = {};
        blocked::probe(h, shape_.probes, [&bits](unsigned bit) {
          bits[bit >> 6] |= std::uint64_t{1} << (bit & 63);
          return true;
        });
        unsigned todo = 0;
        for (unsigned w = 0; w < blocked::kWordsPerBlock; ++w) {
          todo |= unsigned{(word(first + w).load(std::memory_order_relaxed) & bits[w]) != bits[w]} << w;
        }
        return write_missing(first, todo, bits);
      }
    }
    // Each locked fetch_or waits until the ones before it are done, so a line it misses
    // would be fetched only then, and one another core holds would move over only then.
    // So all k lines are asked for first, in exclusive state. Measured (10^6 and 10^7
    // keys, p = 1 %): 2 threads 13.9 -> 16.1 and 17.3 -> 18.6 M inserts/s; the blocked
    // layout, whose one line the relaxed loads below fetch at once, gains nothing.
    prefetch_cells(digest);
    std::uint64_t fresh = 0;
#if SEGBLOOM_RTM
    AbortRun& run = stripes_[stripe].rtm;
    if (kWriteInTransaction && run.try_now() && run.ended(set_cells_in_transaction(digest, fresh))) return fresh;
#endif
    probe(digest, [this, &fresh](std::uint64_t cell) {
      const std::uint64_t bit = std::uint64_t{1} << (cell & 63);
      std::atomic_ref<std::uint64_t> w = word(cell >> 6);
      if ((w.load(std::memory_order_relaxed) & bit) == 0) {
        fresh += (w.fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
      }
      return true;
    });
    return fresh;
  }

  // Asks for the lines of a classic key's k cells in exclusive state (set, set_group).
  void prefetch_cells(const Digest& digest) const noexcept {
    probe(digest, [this](std::uint64_t cell) {
      prefetch_for_write(words_.data() + (cell >> 6));
      return true;
    });
  }

  // The most keys set_group writes in one transaction. 8: see or_blocks_in_transaction
  // (transaction.hpp) for what a transaction costs and how often groups of each size abort.
  static constexpr std::size_t kKeysPerTransaction = 8;

  // Whether set_group may take `keys` keys now: in a transaction (where the CPU has RTM, the
  // stripe's transactions are not paused, and a blocked slice has AVX-512), and with room for them, so that none of them
  // would find the slice full if they came one by one (each sets at most k cells), as the
  // plain filter and insert() decide it.
  // (Without transactions, only when the tests ask for groups: group_writes_without_transactions.)
  bool takes_group(unsigned stripe, std::uint64_t keys) const noexcept {
    if (kWriteInTransaction) {
      if (stripes_[stripe].rtm.paused()) return false;
      if constexpr (kBlockable) {
        if (shape_.layout == Layout::blocked && !kBlockedSetAvx512) return false;  // AVX2, portable: key by key
      }
    } else if (!group_writes_without_transactions.load(std::memory_order_relaxed)) {
      return false;
    }
    return seen_cells(stripe) + keys * shape_.probes < full_cells_;
  }

  // set() for the n keys digests[picked[0]], digests[picked[1]], ... (n <= kKeysPerTransaction),
  // after takes_group allowed them: fresh[j], the cells key j set, as if set() had been called
  // for each in turn, and the words written in one hardware transaction (a blocked slice with
  // AVX-512 or a classic slice; else key by key). A key whose cells were all set when its turn
  // came (by an earlier key of the group) gets 0. Where the transaction aborts, the keys go
  // through set() one by one. The caller counts them (count).
  void set_group(const Digest* digests, const std::uint32_t* picked, std::size_t n, unsigned stripe,
                 std::uint64_t* fresh) noexcept {
#if SEGBLOOM_RTM
    if (kWriteInTransaction) {  // else the tests asked for groups without transactions
      AbortRun& run = stripes_[stripe].rtm;
      if constexpr (kBlockable) {
        if (shape_.layout == Layout::blocked) {
#ifdef SEGBLOOM_X86_SIMD
          if (kBlockedSetAvx512 && run.ended(set_blocks_avx512(digests, picked, n, fresh))) return;
#endif
          for (std::size_t j = 0; j < n; ++j) fresh[j] = set(digests[picked[j]], stripe);
          return;
        }
      }
      for (std::size_t j = 0; j < n; ++j) prefetch_cells(digests[picked[j]]);
      if (run.ended(set_cells_in_transaction(digests, picked, n, fresh))) return;
    }
#endif
    for (std::size_t j = 0; j < n; ++j) fresh[j] = set(digests[picked[j]], stripe);
  }

#if SEGBLOOM_RTM
  // The classic insert's k words in one transaction (detail/transaction.hpp); `fresh`: the
  // bits it set. Each word is written even where its bit was set already: a branch per
  // probe on the bit mispredicts, and cost 0.88 of the atomics' time against 0.61 (10^6
  // keys, one thread). Only keys the slice does not hold get here (insert asks first), so
  // held keys still leave their lines shared.
  __attribute__((target("rtm"))) bool set_cells_in_transaction(const Digest& digest, std::uint64_t& fresh) noexcept {
    std::uint64_t n = 0;
    const bool committed = in_transaction([this, &digest, &n] { n = or_cells_in_transaction(digest); });
    fresh = n;
    return committed;
  }

  // The same for set_group's keys, all in one transaction.
  __attribute__((target("rtm"))) bool set_cells_in_transaction(const Digest* digests, const std::uint32_t* picked,
                                                               std::size_t n, std::uint64_t* fresh) noexcept {
    return in_transaction([this, digests, picked, n, fresh] {
      for (std::size_t j = 0; j < n; ++j) fresh[j] = or_cells_in_transaction(digests[picked[j]]);
    });
  }

  // Inside a transaction: the key's k bits set by plain (relaxed) loads and stores, every
  // word written; returns how many were clear.
  std::uint64_t or_cells_in_transaction(const Digest& digest) noexcept {
    std::uint64_t n = 0;
    probe(digest, [this, &n](std::uint64_t cell) {
      const std::uint64_t bit = std::uint64_t{1} << (cell & 63);
      std::atomic_ref<std::uint64_t> w = word(cell >> 6);
      const std::uint64_t old = w.load(std::memory_order_relaxed);
      w.store(old | bit, std::memory_order_relaxed);
      n += (old & bit) == 0;
      return true;
    });
    return n;
  }
#endif

  // fetch_or of bits[w] into the block's word w for each bit w of `todo`; returns how many
  // bits went from 0 to 1.
  std::uint64_t write_missing(std::size_t first, unsigned todo, const std::uint64_t* bits) noexcept {
    std::uint64_t fresh = 0;
    for (; todo != 0; todo &= todo - 1) {
      const auto w = static_cast<unsigned>(std::countr_zero(todo));
      fresh += popcount64(bits[w] & ~word(first + w).fetch_or(bits[w], std::memory_order_relaxed));
    }
    return fresh;
  }

  // The set bits of the 8 words, in a fixed count of steps: a loop over the words written
  // ends in a branch that varies from key to key (0.89-0.91 of the atomics' time with it,
  // 0.86 without, when the abort run was thread-local). Not detail::count_bits (popcount.hpp),
  // which serves whole arrays: called out of line from here (its POPCNT form has its own
  // target), it took 1.13x the time of blocked inserts from one thread, 1.06x from two.
  static std::uint64_t count_bits(const std::uint64_t* bits) noexcept {
    std::uint64_t count = 0;
    for (unsigned w = 0; w < blocked::kWordsPerBlock; ++w) count += popcount64(bits[w]);
    return count;
  }

#ifdef SEGBLOOM_X86_SIMD
  // How many bits of `mask` an OR into a block that held `old` set.
  __attribute__((target("avx512f"), always_inline)) static inline std::uint64_t bits_set_by(__m512i old, __m512i mask) noexcept {
    alignas(64) std::uint64_t bits[blocked::kWordsPerBlock];
    _mm512_store_si512(bits, _mm512_maskz_andnot_epi64(0xFF, old, mask));
    return count_bits(bits);
  }

  __attribute__((target("avx512f"))) std::uint64_t set_block_avx512(std::size_t first, std::uint32_t h, AbortRun& run) noexcept {
    const __m512i mask = blocked::mask_avx512<0>(h, shape_.probes);
    // (Zero-masked andnot: GCC 12's plain one draws -Wuninitialized.)
    const __m512i missing = _mm512_maskz_andnot_epi64(0xFF, RelaxedLoads::whole(words_.data() + first), mask);
    const unsigned todo = _mm512_test_epi64_mask(missing, missing);
    if (todo == 0) return 0;
    __m512i old;
    if (kWriteInTransaction && run.try_now() && run.ended(or_block_in_transaction(words_.data() + first, mask, old))) {
      return bits_set_by(old, mask);
    }
    alignas(64) std::uint64_t bits[blocked::kWordsPerBlock];
    _mm512_store_si512(bits, mask);
    return write_missing(first, todo, bits);
  }

#if SEGBLOOM_RTM
  // set_group's blocked keys with AVX-512: their masks, then all the blocks ORed in one
  // transaction (or_blocks_in_transaction); false when it aborted (nothing written).
  __attribute__((target("avx512f"))) bool set_blocks_avx512(const Digest* digests, const std::uint32_t* picked,
                                                           std::size_t n, std::uint64_t* fresh) noexcept {
    std::uint64_t* blocks[kKeysPerTransaction];
    __m512i masks[kKeysPerTransaction];
    __m512i olds[kKeysPerTransaction];
    for (std::size_t j = 0; j < n; ++j) {
      const Digest& d = digests[picked[j]];
      blocks[j] = words_.data() + block_index(d) * blocked::kWordsPerBlock;
      masks[j] = blocked::mask_avx512<0>(blocked::in_block_hash(d), shape_.probes);
    }
    if (!or_blocks_in_transaction(blocks, masks, olds, n)) return false;
    for (std::size_t j = 0; j < n; ++j) fresh[j] = bits_set_by(olds[j], masks[j]);
    return true;
  }
#endif

  __attribute__((target("avx2"))) std::uint64_t set_block_avx2(std::size_t first, std::uint32_t h, AbortRun& run) noexcept {
    const blocked::BlockMaskAvx2 mask = blocked::mask_avx2<0>(h, shape_.probes);
    __m256i low, high;
    RelaxedLoads::halves(words_.data() + first, low, high);
    const __m256i zero = _mm256_setzero_si256();
    // Bit w (of 4): the half's word w misses none of the key's bits.
    const auto complete = [zero](__m256i missing) __attribute__((target("avx2"))) {
      return static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(missing, zero))));
    };
    const unsigned todo =
        ~(complete(_mm256_andnot_si256(low, mask.low)) | complete(_mm256_andnot_si256(high, mask.high)) << 4) & 0xFFu;
    if (todo == 0) return 0;
    alignas(32) std::uint64_t bits[blocked::kWordsPerBlock];
    __m256i old_low, old_high;
    if (kWriteInTransaction && run.try_now() &&
        run.ended(or_block_in_transaction(words_.data() + first, mask.low, mask.high, old_low, old_high))) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(bits), _mm256_andnot_si256(old_low, mask.low));  // the bits it set
      _mm256_store_si256(reinterpret_cast<__m256i*>(bits) + 1, _mm256_andnot_si256(old_high, mask.high));
      return count_bits(bits);
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(bits), mask.low);
    _mm256_store_si256(reinterpret_cast<__m256i*>(bits) + 1, mask.high);
    return write_missing(first, todo, bits);
  }
#endif

  // As Slice::worth_prefetching: batch loops ask once per slice, not per key.
  bool worth_prefetching(BatchOp op) const noexcept {
    bool blocked = false;
    if constexpr (kBlockable) blocked = shape_.layout == Layout::blocked;
    return detail::worth_prefetching(words_.size() * sizeof(std::uint64_t),
                                     blocked ? PrefetchedLines::block : PrefetchedLines::probe_lines, op);
  }

  // Asks for the lines n keys' lookups or inserts touch, as Slice::prefetch does: their
  // blocks, or their k lines. The caller asks worth_prefetching first, once per slice
  // (ConcurrentScalableBloomFilter::insert_many also prefetches the newest slice while other
  // threads write).
  void prefetch(const Digest* digests, std::size_t n) const noexcept {
    if constexpr (kBlockable) {
      if (shape_.layout == Layout::blocked) {
        for (std::size_t i = 0; i < n; ++i) {
          detail::prefetch(words_.data() + block_index(digests[i]) * blocked::kWordsPerBlock);
        }
        return;
      }
    }
    for (std::size_t i = 0; i < n; ++i) prefetch_probes(digests[i]);
  }

  // The lines of a classic slice's k probes (as Slice::prefetch_probes, which has the
  // measurements: until 27 Nov 2026, GCC deleted these prefetches).
  void prefetch_probes(const Digest& digest) const noexcept {
    probe(digest, [this](std::uint64_t cell) {
      segbloom::detail::prefetch(words_.data() + (cell >> 6));
      return true;
    });
  }

  // Slice's screened lookups (detail/screened_lookup.hpp) for a classic slice, its bits
  // read with relaxed loads: the screen may miss a key whose insert races with the call,
  // as contains may, never one inserted before it.
  static constexpr bool kScreenable = requires { typename Scheme::ProbeCursor; };
  using ProbeCursor = typename ProbeCursorOf<Scheme>::type;

  // A triple-hashed slice prefetches all k lines and passes every key (as Slice's).
  void prefetch_screen(const Digest& digest) const noexcept
    requires kScreenable
  {
    if (shape_.probing == Probing::scheme) {
      ScreenSteps<Scheme>::prefetch_screen(digest, shape_.bits, shape_.probes, line_of());
    } else {
      prefetch_probes(digest);
    }
  }

  bool screen(const Digest& digest, ProbeCursor& rest) const noexcept
    requires kScreenable
  {
    if (shape_.probing != Probing::scheme) return true;
    return ScreenSteps<Scheme>::screen(digest, shape_.bits, shape_.probes, rest, [read = word_reader()](std::uint64_t cell) {
      return (read(cell >> 6) >> (cell & 63) & 1) != 0;
    });
  }

  void prefetch_rest(ProbeCursor rest) const noexcept
    requires kScreenable
  {
    if (shape_.probing == Probing::scheme) ScreenSteps<Scheme>::prefetch_rest(rest, shape_.bits, shape_.probes, line_of());
  }

  // Counts one item written by the calling thread (stripe `stripe`) and its fresh cells,
  // both packed in one word on the stripe's own cache line: a held stripe by a plain load
  // and store, which only its thread writes (see the top of this file for clear()), a
  // shared one by an atomic add (a locked instruction, about 8 ns on the Intel Xeon of 30
  // Nov 2026). Measured there, new keys into a one-slice filter, old and new headers
  // alternating, 6 processes each: blocked, 10^6 keys, 0.905 of the time from one thread
  // (69.2 -> 62.6 ns) and 0.93 from two; 10^7 keys 1.00 and 0.85; classic 0.97-1.00.
  void count(unsigned stripe, std::uint64_t fresh) noexcept {
    std::atomic<std::uint64_t>& pending = stripes_[stripe].pending;
    const std::uint64_t add = kOneItem | fresh;
    std::uint64_t now;
    if (stripe < kHeldStripes) {
      now = pending.load(std::memory_order_relaxed) + add;
      pending.store(now, std::memory_order_relaxed);
    } else {
      now = pending.fetch_add(add, std::memory_order_relaxed) + add;
    }
    if ((now & kCellMask) >= flush_at_ || now >= kItemFlush * kOneItem) {
      const std::uint64_t moved = pending.exchange(0, std::memory_order_relaxed);
      flushed_cells_.fetch_add(moved & kCellMask, std::memory_order_relaxed);
      flushed_items_.fetch_add(moved >> kItemShift, std::memory_order_relaxed);
    }
  }

  // Half of the cells set (or the plain slice's earlier full point: full_cells in
  // sizing.hpp), as far as the thread of `stripe` can tell (see the header).
  bool full(unsigned stripe) const noexcept { return seen_cells(stripe) >= full_cells_; }

  // The set cells the thread of `stripe` can tell of: those flushed, plus its own pending.
  std::uint64_t seen_cells(unsigned stripe) const noexcept {
    const std::uint64_t own = stripes_[stripe].pending.load(std::memory_order_relaxed);
    return flushed_cells_.load(std::memory_order_relaxed) + (own & kCellMask);
  }

  // Set cells; exact when no insert is in progress (but for what a clear() raced by an
  // insert left behind: the top of this file).
  std::uint64_t set_count() const noexcept {
    std::uint64_t total = flushed_cells_.load(std::memory_order_relaxed);
    for (const Stripe& s : stripes_) {
      total += s.pending.load(std::memory_order_relaxed) & kCellMask;
    }
    return total;
  }

  std::uint64_t items() const noexcept {
    std::uint64_t total = flushed_items_.load(std::memory_order_relaxed);
    for (const Stripe& s : stripes_) {
      total += s.pending.load(std::memory_order_relaxed) >> kItemShift;
    }
    return total;
  }

  // Copies the words into `out` (out.size() == bits / 64), one atomic load per word.
  void copy_words(std::span<std::uint64_t> out) const noexcept {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = word(i).load(std::memory_order_relaxed);
  }

  // Empties the slice for reuse. Called by one thread at a time (the filter's opening
  // lock); readers racing with it see its bits vanish word by word.
  void clear() noexcept {
    for (std::size_t i = 0; i < words_.size(); ++i) word(i).store(0, std::memory_order_relaxed);
    flushed_cells_.store(0, std::memory_order_relaxed);
    flushed_items_.store(0, std::memory_order_relaxed);
    for (Stripe& s : stripes_) s.pending.store(0, std::memory_order_relaxed);
    released_bytes_.store(0, std::memory_order_relaxed);
  }

  // Gives the cells' whole pages back to the kernel (AlignedWords::release_pages), for a
  // slice no longer live that other calls may still be reading: its words and counts mean
  // nothing until clear() (which takes the pages back) readies it again. Under the
  // filter's opening lock, as clear().
  void release_pages() noexcept {
    released_bytes_.store(words_.release_pages(), std::memory_order_relaxed);
  }

  const SliceShape& shape() const noexcept { return shape_; }
  // A blocked slice as blocked/lookup_group.hpp's batch kernels see it (read with RelaxedLoads).
  blocked::SliceRef slice_ref() const noexcept {
    return {words_.data(), shape_.bits / kBlockBits, shape_.probes};
  }
  // Without the pages given back (release_pages) until clear().
  std::uint64_t memory_bytes() const noexcept {
    return sizeof(*this) + words_.allocated_bytes() - released_bytes_.load(std::memory_order_relaxed);
  }

  // The blocked layout needs the 128-bit digest (block from one half, bits from the other).
  static constexpr bool kBlockable = std::is_same_v<Digest, Digest128>;
  // As Slice's: a classic slice tests a batch's group at once (contains_group), and
  // blocked kernels read its blocks with relaxed loads.
  static constexpr bool kGroupTest = true;
  using BlockLoads = RelaxedLoads;

 private:
  // contains for a triple-hashed slice (exit at the first clear bit), out of line so that
  // contains stays small enough to inline into the per-key loops (as Slice's).
  [[gnu::noinline]] bool contains_triple(const Digest& digest) const noexcept {
    const auto read = word_reader();
    return TripleHashing::probe(digest, shape_.bits, shape_.probes,
                                [&read](std::uint64_t cell) { return (read(cell >> 6) >> (cell & 63) & 1) != 0; });
  }

  // Visits a classic key's k cells: the scheme's probing, or triple hashing where the shape
  // asks for it (SliceShape::probing).
  template <class Visit>
  void probe(const Digest& digest, Visit&& visit) const {
    if constexpr (kBlockable) {
      if (shape_.probing == Probing::triple_hashing) {
        TripleHashing::probe(digest, shape_.bits, shape_.probes, std::forward<Visit>(visit));
        return;
      }
    }
    Scheme::probe(digest, shape_.bits, shape_.probes, std::forward<Visit>(visit));
  }

  std::uint64_t block_index(const Digest& digest) const noexcept {
    if constexpr (kBlockable) {
      return blocked::block_of(digest, shape_.bits / kBlockBits);
    } else {
      return 0;
    }
  }

  // A stripe's word: items (high 24 bits) and fresh cells (low 40 bits) not yet moved to
  // the shared counters. Cells pending stay below B + 255 <= 2^37 + 255 (bits <= 2^53);
  // items pending below kItemFlush (moved even when inserts set no new cells).
  static constexpr unsigned kItemShift = 40;
  static constexpr std::uint64_t kOneItem = std::uint64_t{1} << kItemShift;
  static constexpr std::uint64_t kCellMask = kOneItem - 1;
  static constexpr std::uint64_t kItemFlush = std::uint64_t{1} << 16;

  struct alignas(64) Stripe {
    std::atomic<std::uint64_t> pending{0};
    AbortRun rtm;  // its thread's insert transactions (set)
  };

  static std::uint64_t flush_threshold(std::uint64_t bits) noexcept {
    const std::uint64_t b = bits >> 16;
    return b == 0 ? 1 : b;
  }

  // The line of a classic slice's cell, for prefetches.
  auto line_of() const noexcept {
    return [words = words_.data()](std::uint64_t cell) { return words + (cell >> 6); };
  }

  // Words are only ever accessed through atomic_ref once the slice is shared.
  std::atomic_ref<std::uint64_t> word(std::size_t i) const noexcept {
    return std::atomic_ref<std::uint64_t>(words_.data()[i]);
  }

  static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free);
  static_assert(AlignedWords::kAlignment % std::atomic_ref<std::uint64_t>::required_alignment == 0);

  SliceShape shape_;
  std::uint64_t full_cells_;    // full() from this many set cells on
  mutable AlignedWords words_;  // 64-byte aligned, zeroed
  std::uint64_t flush_at_;
  std::atomic<std::uint64_t> released_bytes_{0};  // release_pages(), until clear()
  alignas(64) std::atomic<std::uint64_t> flushed_cells_{0};
  std::atomic<std::uint64_t> flushed_items_{0};
  std::array<Stripe, kCountStripes> stripes_{};
};

}  // namespace segbloom::detail
