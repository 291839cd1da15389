// segbloom: an insert's writes in one hardware transaction (Intel RTM, part of TSX), for
// the concurrent filter (ConcurrentSlice::set).
//
// Why. A concurrent insert must set the key's bits in several 64-bit words without losing
// another thread's bits: with atomics, one locked instruction a word (k words in k lines
// for the classic layout; about 5.5 of the block's 8 words for the blocked one at k = 7).
// Each locked instruction waits for the one before it (it drains the store buffer), about
// 9 ns each on the Intel Xeon (Emerald Rapids) of 1 Dec 2026: most of an insert's time.
// Inside a transaction the words are read and written with plain loads and stores; the CPU
// makes them atomic together (another core's write to a line the transaction read, or any
// access to a line it wrote, aborts it, and an aborted transaction has written nothing), and
// the insert knows exactly which bits were clear, as fetch_or's result told it.
//
// When one aborts (another core on a line, an interrupt, a page not yet mapped...) the
// caller writes with atomics instead, as without RTM. Where transactions keep aborting
// (AbortRun::kGiveUpAfter in a row: lines fought over, or RTM reported but not working),
// writes go without them for the next kPauseFor writes, then try again; the concurrent slice
// keeps one such count per counting stripe (a thread's own, or shared beyond 16 threads).
//
// Asked once per process (rtm_allowed): CPUID leaf 7, EBX bit 11 (RTM) set and EDX bit 11
// (RTM_ALWAYS_ABORT: microcode since 2021 on some Intel CPUs keeps RTM reported but makes
// every transaction abort) clear; the environment variable SEGBLOOM_RTM=off turns it off, so
// that the tests cover the atomics on an RTM machine and the benchmarks compare both in one
// binary. ThreadSanitizer builds never use it (the caller's job: TSan cannot follow a
// transaction).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define SEGBLOOM_RTM 1
#else
#define SEGBLOOM_RTM 0
#endif

namespace segbloom::detail {

// True when the CPU reports RTM, not always aborting, and SEGBLOOM_RTM is not "off" (asked
// once per process).
inline bool rtm_allowed() noexcept {
#if SEGBLOOM_RTM
  static const bool allowed = [] {
    const char* value = std::getenv("SEGBLOOM_RTM");
    if (value != nullptr && std::strcmp(value, "off") == 0) return false;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (ebx & (1u << 11)) != 0 &&
           (edx & (1u << 11)) == 0;
  }();
  return allowed;
#else
  return false;
#endif
}

// A run of aborted transactions (see the top of this file), kept where the writing thread
// already writes on every insert: the concurrent slice keeps one in each counting stripe
// (so a new slice starts from 0, and held keys, which write nothing, do not count),
// so that this costs no access to thread-local storage (which goes through __tls_get_addr
// in a shared library: blocked inserts took 0.86 of the atomics' time with a thread-local
// count there, 0.68 with this). Relaxed, and a plain load and store:
// threads that share a stripe may lose each other's counts, which only moves the pause.
class AbortRun {
 public:
  static constexpr std::uint32_t kGiveUpAfter = 64;
  static constexpr std::uint32_t kPauseFor = 1u << 16;

  // Whether this write should try a transaction (counts the pause down when not). Used as
  //   if (run.try_now() && run.ended(some_transaction())) { committed } else { atomics }
  bool try_now() noexcept {
    const std::uint32_t run = run_.load(std::memory_order_relaxed);
    if (run < kGiveUpAfter) return true;
    run_.store(run + 1 >= kGiveUpAfter + kPauseFor ? 0 : run + 1, std::memory_order_relaxed);  // 0: try again
    return false;
  }
  // Whether transactions are paused (try_now would say no), without counting the pause down.
  bool paused() const noexcept { return run_.load(std::memory_order_relaxed) >= kGiveUpAfter; }
  // Counts how the transaction try_now allowed ended (a commit ends the run); returns `committed`.
  bool ended(bool committed) noexcept {
    const std::uint32_t run = run_.load(std::memory_order_relaxed);
    if (!committed) {
      run_.store(run + 1, std::memory_order_relaxed);
    } else if (run != 0) {
      run_.store(0, std::memory_order_relaxed);
    }
    return committed;
  }

 private:
  std::atomic<std::uint32_t> run_{0};
};

#if SEGBLOOM_RTM
// Runs write() in one transaction: true when it committed, false when it aborted (then it
// wrote nothing). write() must read and write shared words with relaxed atomics (plain
// loads and stores on x86-64; the fences keep the compiler from moving them out of the
// transaction) and make no system call (one always aborts).
template <class Write>
__attribute__((target("rtm"))) inline bool in_transaction(Write&& write) noexcept {
  if (_xbegin() != _XBEGIN_STARTED) return false;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  write();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  _xend();
  return true;
}

// block |= mask in one transaction, as one 64-byte load and store (written in assembly:
// C++ has no atomic 64-byte access): true, with `old` the block before, when it committed;
// false, having written nothing, when it aborted. `block`: 64-byte aligned. (The same
// through in_transaction, relaxed loads and stores of the words to write: 0.96-0.99 of the
// atomics' time, against 0.68-0.72 for this as ConcurrentSlice uses it; design-notes.md.)
__attribute__((target("avx512f"))) inline bool or_block_in_transaction(std::uint64_t* block, __m512i mask,
                                                                       __m512i& old) noexcept {
  __m512i merged;
  asm goto(  // AT&T | Intel syntax
      "xbegin %l[aborted]\n\t"
      "vmovdqa64 {%[block], %[old]|%[old], %[block]}\n\t"
      "vporq {%[old], %[mask], %[merged]|%[merged], %[mask], %[old]}\n\t"
      "vmovdqa64 {%[merged], %[block]|%[block], %[merged]}\n\t"
      "xend"
      : [block] "+m"(*reinterpret_cast<std::uint64_t(*)[8]>(block)), [old] "=&v"(old), [merged] "=&v"(merged)
      : [mask] "v"(mask)
      : "rax", "cc"  // an abort writes its status to EAX
      : aborted);
  return true;
aborted:
  return false;
}

// The same with the block in two 32-byte halves (AVX2).
__attribute__((target("avx2"))) inline bool or_block_in_transaction(std::uint64_t* block, __m256i mask_low,
                                                                    __m256i mask_high, __m256i& old_low,
                                                                    __m256i& old_high) noexcept {
  __m256i merged_low, merged_high;
  asm goto(  // AT&T | Intel syntax
      "xbegin %l[aborted]\n\t"
      "vmovdqa {%[low], %[old_low]|%[old_low], %[low]}\n\t"
      "vmovdqa {%[high], %[old_high]|%[old_high], %[high]}\n\t"
      "vpor {%[old_low], %[mask_low], %[merged_low]|%[merged_low], %[mask_low], %[old_low]}\n\t"
      "vpor {%[old_high], %[mask_high], %[merged_high]|%[merged_high], %[mask_high], %[old_high]}\n\t"
      "vmovdqa {%[merged_low], %[low]|%[low], %[merged_low]}\n\t"
      "vmovdqa {%[merged_high], %[high]|%[high], %[merged_high]}\n\t"
      "xend"
      : [low] "+m"(*reinterpret_cast<std::uint64_t(*)[4]>(block)),
        [high] "+m"(*(reinterpret_cast<std::uint64_t(*)[4]>(block) + 1)), [old_low] "=&x"(old_low),
        [old_high] "=&x"(old_high), [merged_low] "=&x"(merged_low), [merged_high] "=&x"(merged_high)
      : [mask_low] "x"(mask_low), [mask_high] "x"(mask_high)
      : "rax", "cc"  // an abort writes its status to EAX
      : aborted);
  return true;
aborted:
  return false;
}

// blocks[i] |= masks[i] for i < n (1 <= n), in order, all in one transaction: true, with
// olds[i] the block before its OR, when it committed; false, having written nothing (olds
// neither: they are stores of the transaction), when it aborted. Blocks 64-byte aligned;
// one may come twice (its second load sees the first OR). A loop in assembly rather than
// in_transaction: C++ has no atomic 64-byte access. `asm volatile goto`: GCC 12 deleted a
// plain `asm goto` of this form, whose outputs the caller does not use, in a scratch test.
//
// Why several keys a transaction: XBEGIN and XEND cost far more than the ORs. On the Intel
// Xeon (2 vCPUs, RTM, L2 2 MiB) of 2 Dec 2026, a scratch loop ORing random prefetched blocks
// of a 1.3 MB array from one thread, a build running beside it, ns a block: 1 a transaction
// 45-50, 2 24-31, 4 16-18, 8 9.4-13, 16 9-11; but the share of transactions that abort
// (status 0: neither a conflict nor capacity; about one for every 100 blocks written,
// however grouped) grows with them: 0.2-0.9 %, 2 %, 4-6 %, 7-12 %, 18-26 %
// (bench/results/rtm-groups-2026-12-02.md).
__attribute__((target("avx512f"))) inline bool or_blocks_in_transaction(std::uint64_t* const* blocks,
                                                                        const __m512i* masks, __m512i* olds,
                                                                        std::size_t n) noexcept {
  std::size_t i = 0;
  std::uint64_t* block;
  asm volatile goto(  // AT&T | Intel syntax
      "xbegin %l[aborted]\n"
      "1:\n\t"
      "{movq (%[blocks],%[i],8), %[block]|mov %[block], [%[blocks]+%[i]*8]}\n\t"
      "{movq %[i], %%rax|mov rax, %[i]}\n\t"
      "{shlq $6, %%rax|shl rax, 6}\n\t"
      "{vmovdqa64 (%[block]), %%zmm16|vmovdqa64 zmm16, [%[block]]}\n\t"
      "{vmovdqa64 %%zmm16, (%[olds],%%rax)|vmovdqa64 [%[olds]+rax], zmm16}\n\t"
      "{vporq (%[masks],%%rax), %%zmm16, %%zmm16|vporq zmm16, zmm16, [%[masks]+rax]}\n\t"
      "{vmovdqa64 %%zmm16, (%[block])|vmovdqa64 [%[block]], zmm16}\n\t"
      "{incq %[i]|inc %[i]}\n\t"
      "{cmpq %[n], %[i]|cmp %[i], %[n]}\n\t"
      "jne 1b\n\t"
      "xend"
      : [i] "+&r"(i), [block] "=&r"(block)
      : [blocks] "r"(blocks), [masks] "r"(masks), [olds] "r"(olds), [n] "r"(n)
      : "rax", "xmm16", "cc", "memory"  // an abort writes its status to EAX
      : aborted);
  return true;
aborted:
  return false;
}
#endif

}  // namespace segbloom::detail
