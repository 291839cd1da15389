// segbloom: a zero-initialised array of 64-bit words aligned to a 64-byte cache line
// (2 MiB and transparent huge pages for large arrays).
// The storage under every cell type (bits, 4-bit counters).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace segbloom::detail {

// Tag: allocate without zeroing (the caller writes every word before reading any).
struct Uninitialized {
  explicit Uninitialized() = default;
};
inline constexpr Uninitialized uninitialized{};

// Words written chunk by chunk stay in cache while counted: 4096 words = 32 KiB.
inline constexpr std::size_t kChunkWords = 4096;

class AlignedWords {
 public:
  static constexpr std::size_t kAlignment = 64;

  AlignedWords() = default;
  explicit AlignedWords(std::size_t words) : size_(words), data_(allocate(words, true)) {}
  AlignedWords(std::size_t words, Uninitialized) : size_(words), data_(allocate(words, false)) {}

  AlignedWords(const AlignedWords& other) : size_(other.size_), data_(allocate(other.size_, false)) {
    if (size_ != 0) std::memcpy(data_.get(), other.data_.get(), size_ * sizeof(std::uint64_t));
  }
  AlignedWords& operator=(const AlignedWords& other) {
    if (this != &other) *this = AlignedWords(other);
    return *this;
  }
  AlignedWords(AlignedWords&& other) noexcept
      : size_(std::exchange(other.size_, 0)), data_(std::move(other.data_)) {}
  AlignedWords& operator=(AlignedWords&& other) noexcept {
    size_ = std::exchange(other.size_, 0);
    data_ = std::move(other.data_);
    return *this;
  }

  std::size_t size() const noexcept { return size_; }
  std::uint64_t* data() noexcept { return data_.get(); }
  const std::uint64_t* data() const noexcept { return data_.get(); }
  std::span<std::uint64_t> span() noexcept { return {data_.get(), size_}; }
  std::span<const std::uint64_t> span() const noexcept { return {data_.get(), size_}; }
  std::uint64_t& operator[](std::size_t i) noexcept { return data_[i]; }
  std::uint64_t operator[](std::size_t i) const noexcept { return data_[i]; }

  // Bytes actually allocated (rounded up to whole cache lines).
  std::size_t allocated_bytes() const noexcept { return size_ == 0 ? 0 : allocation_size(size_); }

  void zero() noexcept {
    if (size_ != 0) std::memset(data_.get(), 0, size_ * sizeof(std::uint64_t));
  }

  // Gives the whole pages of the array back to the kernel, keeping the allocation (Linux:
  // madvise MADV_DONTNEED), for an array nothing relies on until it is written again in
  // full: an expired or retired slice of the concurrent filter, which other threads may
  // still read, so it cannot be freed. Its words then read as zero, or as they were, and
  // a write takes a page back. Returns the bytes given back: 0 without the advice, or when
  // the array holds no whole page (the partial pages at its ends stay).
  std::size_t release_pages() noexcept {
#if defined(__linux__) && defined(MADV_DONTNEED)
    if (size_ == 0) return 0;
    static const std::size_t page = [] {
      const long size = ::sysconf(_SC_PAGESIZE);
      return size > 0 ? static_cast<std::size_t>(size) : std::size_t{4096};
    }();
    const auto begin = reinterpret_cast<std::uintptr_t>(data_.get());
    const std::uintptr_t first = (begin + page - 1) / page * page;
    const std::uintptr_t last = (begin + allocation_size(size_)) / page * page;
    if (last <= first) return 0;
    const std::size_t bytes = last - first;
    return ::madvise(reinterpret_cast<void*>(first), bytes, MADV_DONTNEED) == 0 ? bytes : 0;
#else
    return 0;
#endif
  }

  friend bool operator==(const AlignedWords& a, const AlignedWords& b) noexcept {
    return a.size_ == b.size_ && std::equal(a.data_.get(), a.data_.get() + a.size_, b.data_.get());
  }

 private:
  struct Free {
    void operator()(std::uint64_t* p) const noexcept { std::free(p); }
  };

  static std::size_t round_up(std::size_t words) noexcept {
    constexpr std::size_t per_line = kAlignment / sizeof(std::uint64_t);
    return (words + per_line - 1) / per_line * per_line;
  }

  static std::unique_ptr<std::uint64_t[], Free> allocate(std::size_t words, bool zeroed) {
    if (words == 0) return nullptr;
    if (words > SIZE_MAX / sizeof(std::uint64_t) / 2) throw std::bad_alloc();
    const std::size_t bytes = round_up(words) * sizeof(std::uint64_t);
    // Arrays of 2 MiB and more start on a 2 MiB boundary and ask for transparent huge
    // pages: a random probe into a 100 MB filter then misses the TLB far less often. Only
    // the whole huge pages are advised, and the size is not rounded up to one: a huge page
    // for the tail would hold up to 2 MiB that no cell uses (a 2.1 MiB slice would take
    // 4 MiB, the counting filter's 6.2 MiB at 10^6 keys 8 MiB, as until 27 Nov 2026); the
    // tail keeps 4 KiB pages.
    const bool huge = bytes >= kHugePage;
    const std::size_t alignment = huge ? kHugePage : kAlignment;
#if defined(__unix__)
    void* p = nullptr;
    if (::posix_memalign(&p, alignment, bytes) != 0) throw std::bad_alloc();
#else  // std::aligned_alloc wants a multiple of the alignment
    void* p = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    if (p == nullptr) throw std::bad_alloc();
#endif
#ifdef MADV_HUGEPAGE
    if (huge) (void)::madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);  // advice only
#endif
    // Zeroed, or only the padding after the last word (never read, but deterministic).
    const std::size_t from = zeroed ? 0 : words * sizeof(std::uint64_t);
    std::memset(static_cast<char*>(p) + from, 0, bytes - from);
    return std::unique_ptr<std::uint64_t[], Free>(static_cast<std::uint64_t*>(p));
  }

  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

  static std::size_t allocation_size(std::size_t words) noexcept {
    return round_up(words) * sizeof(std::uint64_t);
  }

  std::size_t size_ = 0;
  std::unique_ptr<std::uint64_t[], Free> data_;
};

// Words of a cell array that fill(chunk, offset) writes chunk by chunk, in order, each
// chunk passed to count(chunk) right after, while it is still in cache: deserialization
// reads, copies and counts in one pass over memory.
template <class Fill, class Count>
AlignedWords filled_in_chunks(std::size_t words, Fill&& fill, Count&& count) {
  AlignedWords result(words, uninitialized);
  for (std::size_t done = 0; done < words;) {
    const std::span<std::uint64_t> chunk(result.data() + done, std::min(kChunkWords, words - done));
    fill(chunk, done);
    count(std::span<const std::uint64_t>(chunk));
    done += chunk.size();
  }
  return result;
}

}  // namespace segbloom::detail
