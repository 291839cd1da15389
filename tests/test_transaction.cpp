// detail/transaction.hpp: the hardware transactions of the concurrent filter's inserts. The
// filter's own tests ([concurrent]) cannot tell whether their inserts committed or fell back
// to the atomics (both give the same bits), so these check the pieces: a transaction
// commits and writes what it should, an aborted one writes nothing, and the run of aborts
// pauses and resumes transactions as documented. On a CPU without RTM, or with
// SEGBLOOM_RTM=off, the transaction tests warn and check nothing.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <random>

#include "segbloom/concurrent_filter.hpp"
#include "segbloom/detail/transaction.hpp"

#if SEGBLOOM_RTM
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

using segbloom::detail::AbortRun;
static_assert(AbortRun::kGiveUpAfter == 64 && AbortRun::kPauseFor == 65536, "the numbers the tests' names give");

TEST_CASE("a run of 64 aborts pauses transactions for 65536 writes, then they are tried again",
          "[concurrent][rtm]") {
  AbortRun run;
  for (std::uint32_t i = 0; i + 1 < AbortRun::kGiveUpAfter; ++i) {
    REQUIRE(run.try_now());
    run.ended(false);
  }
  SECTION("a commit ends the run") {
    REQUIRE(run.try_now());
    CHECK(run.ended(true));  // returns how it ended
    for (std::uint32_t i = 0; i + 1 < AbortRun::kGiveUpAfter; ++i) {
      REQUIRE(run.try_now());
      run.ended(false);
    }
    CHECK(run.try_now());
  }
  SECTION("the 64th abort in a row starts the pause") {
    REQUIRE(run.try_now());
    CHECK_FALSE(run.ended(false));
    std::uint32_t paused = 0;
    while (!run.try_now()) ++paused;
    CHECK(paused == AbortRun::kPauseFor);
    CHECK(run.try_now());  // and the run starts again from 0
  }
}

#if SEGBLOOM_RTM

namespace {

constexpr int kTries = 1000;

struct alignas(64) Block {
  std::uint64_t word[8];
};

Block random_block(std::mt19937_64& rng) {
  Block b{};
  for (auto& w : b.word) w = rng() & rng();  // about a quarter of the bits set
  return b;
}

// block |= mask through the AVX-512 form; true when it committed, `old` then the block before.
__attribute__((target("avx512f"))) bool or_avx512(Block& block, const Block& mask, Block& old) {
  __m512i before;
  if (!segbloom::detail::or_block_in_transaction(block.word, _mm512_load_si512(mask.word), before)) return false;
  _mm512_store_si512(old.word, before);
  return true;
}

__attribute__((target("avx2"))) bool or_avx2(Block& block, const Block& mask, Block& old) {
  const auto* m = reinterpret_cast<const __m256i*>(mask.word);
  __m256i low, high;
  if (!segbloom::detail::or_block_in_transaction(block.word, _mm256_load_si256(m), _mm256_load_si256(m + 1), low,
                                                 high)) {
    return false;
  }
  _mm256_store_si256(reinterpret_cast<__m256i*>(old.word), low);
  _mm256_store_si256(reinterpret_cast<__m256i*>(old.word) + 1, high);
  return true;
}

// kTries random blocks and masks through `form`: every commit wrote block | mask and returned
// the block before, every abort left the block as it was, and at least one committed.
template <class Form>
void check_block_transactions(Form form) {
  std::mt19937_64 rng(20261201);
  int committed = 0;
  for (int t = 0; t < kTries; ++t) {
    const Block before = random_block(rng);
    const Block mask = random_block(rng);
    Block block = before;
    Block old{};
    const bool done = form(block, mask, old);
    committed += done;
    for (unsigned w = 0; w < 8; ++w) {
      REQUIRE(block.word[w] == (done ? before.word[w] | mask.word[w] : before.word[w]));
      if (done) REQUIRE(old.word[w] == before.word[w]);
    }
  }
  INFO(committed << " of " << kTries << " transactions committed");
  CHECK(committed > 0);
}

}  // namespace

TEST_CASE("a block ORed in one transaction gets mask | old and returns old, or stays as it was",
          "[concurrent][rtm]") {
  if (!segbloom::detail::rtm_allowed()) {
    WARN("no RTM here (or SEGBLOOM_RTM=off): the transactions are not checked");
    return;
  }
  if (segbloom::detail::avx512_allowed()) {
    check_block_transactions(or_avx512);
  } else {
    WARN("no AVX-512F here (or SEGBLOOM_SIMD caps it): the AVX-512 form is not checked");
  }
  if (segbloom::detail::avx2_allowed()) {
    check_block_transactions(or_avx2);
  } else {
    WARN("no AVX2 here (or SEGBLOOM_SIMD caps it): the AVX2 form is not checked");
  }
}

namespace {

// Groups of 1-8 (block, mask) pairs over 6 blocks, so that some groups name a block twice,
// through or_blocks_in_transaction: every commit left each block the OR of its masks and
// returned for each pair the block as the pairs before it had left it; every abort left all
// the blocks as they were; at least one committed, and one of those named a block twice.
__attribute__((target("avx512f"))) void check_grouped_block_transactions() {
  std::mt19937_64 rng(20261202);
  constexpr std::size_t kMost = 8;
  int committed = 0, committed_with_repeat = 0;
  for (int t = 0; t < kTries; ++t) {
    Block blocks[6], before[6];
    for (std::size_t b = 0; b < 6; ++b) before[b] = blocks[b] = random_block(rng);
    const std::size_t n = 1 + rng() % kMost;
    std::uint64_t* pointers[kMost];
    __m512i masks[kMost], olds[kMost];
    Block mask_of[kMost];
    std::size_t which[kMost];
    bool repeat = false;
    for (std::size_t j = 0; j < n; ++j) {
      which[j] = rng() % 6;
      for (std::size_t i = 0; i < j; ++i) repeat |= which[i] == which[j];
      pointers[j] = blocks[which[j]].word;
      mask_of[j] = random_block(rng);
      masks[j] = _mm512_load_si512(mask_of[j].word);
    }
    const bool done = segbloom::detail::or_blocks_in_transaction(pointers, masks, olds, n);
    committed += done;
    committed_with_repeat += done && repeat;
    Block expected[6];
    for (std::size_t b = 0; b < 6; ++b) expected[b] = before[b];
    for (std::size_t j = 0; j < n; ++j) {
      if (done) {  // olds[] holds nothing defined after an abort
        Block old;
        _mm512_store_si512(old.word, olds[j]);
        for (unsigned w = 0; w < 8; ++w) REQUIRE(old.word[w] == expected[which[j]].word[w]);
      }
      for (unsigned w = 0; w < 8; ++w) expected[which[j]].word[w] |= mask_of[j].word[w];
    }
    for (std::size_t b = 0; b < 6; ++b) {
      for (unsigned w = 0; w < 8; ++w) REQUIRE(blocks[b].word[w] == (done ? expected[b] : before[b]).word[w]);
    }
  }
  INFO(committed << " of " << kTries << " transactions committed, " << committed_with_repeat << " naming a block twice");
  CHECK(committed > 0);
  CHECK(committed_with_repeat > 0);
}

// A group whose last block lies on a page never touched: the page fault aborts the
// transaction every time (a transaction never takes a fault; it aborts), so this checks that
// an abort leaves the group's earlier blocks as they were and reports it, which the random
// groups above meet only when an interrupt happens to land inside one.
__attribute__((target("avx512f"))) void check_grouped_abort_on_fresh_page() {
  const long page = ::sysconf(_SC_PAGESIZE);
  void* const fresh = ::mmap(nullptr, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(fresh != MAP_FAILED);
  std::mt19937_64 rng(20261203);
  Block blocks[3], before[3];
  std::uint64_t* pointers[4];
  __m512i masks[4], olds[4];
  for (std::size_t b = 0; b < 3; ++b) {
    before[b] = blocks[b] = random_block(rng);
    pointers[b] = blocks[b].word;
    masks[b] = _mm512_load_si512(random_block(rng).word);
  }
  pointers[3] = static_cast<std::uint64_t*>(fresh);
  masks[3] = _mm512_set1_epi64(1);
  const bool done = segbloom::detail::or_blocks_in_transaction(pointers, masks, olds, 4);
  CHECK_FALSE(done);
  for (std::size_t b = 0; b < 3; ++b) {
    for (unsigned w = 0; w < 8; ++w) CHECK(blocks[b].word[w] == before[b].word[w]);
  }
  for (unsigned w = 0; w < 8; ++w) CHECK(static_cast<const std::uint64_t*>(fresh)[w] == 0);
  ::munmap(fresh, static_cast<std::size_t>(page));
}

}  // namespace

TEST_CASE("blocks ORed several to a transaction get their masks in order, or stay as they were",
          "[concurrent][rtm]") {
  if (!segbloom::detail::rtm_allowed()) {
    WARN("no RTM here (or SEGBLOOM_RTM=off): the transactions are not checked");
    return;
  }
  if (!segbloom::detail::avx512_allowed()) {
    WARN("no AVX-512F here (or SEGBLOOM_SIMD caps it): the grouped form is not checked");
    return;
  }
  check_grouped_block_transactions();
  check_grouped_abort_on_fresh_page();
}

TEST_CASE("a transaction writes all of its words, or, aborted, none", "[concurrent][rtm]") {
  if (!segbloom::detail::rtm_allowed()) {
    WARN("no RTM here (or SEGBLOOM_RTM=off): the transactions are not checked");
    return;
  }
  alignas(64) std::uint64_t words[16] = {};
  const auto write_all = [&words](std::uint64_t value) {
    for (auto& w : words) std::atomic_ref<std::uint64_t>(w).store(value, std::memory_order_relaxed);
  };
  SECTION("a system call aborts it: nothing is written") {
    for (int t = 0; t < 10; ++t) {
      const bool committed = segbloom::detail::in_transaction([&] {
        write_all(7);
        syscall(SYS_getpid);
      });
      CHECK_FALSE(committed);
      for (std::uint64_t w : words) REQUIRE(w == 0);
    }
  }
#if !SEGBLOOM_TSAN  // (ThreadSanitizer's calls inside would abort it)
  SECTION("plain loads and stores commit, all written") {
    int committed = 0;
    for (int t = 1; t <= kTries; ++t) {
      const bool done = segbloom::detail::in_transaction([&] { write_all(static_cast<std::uint64_t>(t)); });
      committed += done;
      if (done) {
        for (std::uint64_t w : words) REQUIRE(w == static_cast<std::uint64_t>(t));
      }
    }
    INFO(committed << " of " << kTries << " transactions committed");
    CHECK(committed > 0);
  }
#endif
}

#endif  // SEGBLOOM_RTM
