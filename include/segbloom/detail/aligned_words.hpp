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
#endif

namespace segbloom::detail {

class AlignedWords {
 public:
  static constexpr std::size_t kAlignment = 64;

  AlignedWords() = default;
  explicit AlignedWords(std::size_t words) : size_(words), data_(allocate(words)) {}

  AlignedWords(const AlignedWords& other) : size_(other.size_), data_(allocate(other.size_)) {
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

  static std::unique_ptr<std::uint64_t[], Free> allocate(std::size_t words) {
    if (words == 0) return nullptr;
    if (words > SIZE_MAX / sizeof(std::uint64_t) / 2) throw std::bad_alloc();
    const std::size_t bytes = round_up(words) * sizeof(std::uint64_t);
    // Arrays of 2 MiB and more start on a 2 MiB boundary and ask for transparent huge
    // pages: a random probe into a 100 MB filter then misses the TLB far less often.
    const bool huge = bytes >= kHugePage;
    const std::size_t alignment = huge ? kHugePage : kAlignment;
    const std::size_t allocated = allocation_size(words);
    void* p = std::aligned_alloc(alignment, allocated);
    if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (huge) (void)::madvise(p, allocated, MADV_HUGEPAGE);  // advice only: failure is fine
#endif
    std::memset(p, 0, bytes);
    return std::unique_ptr<std::uint64_t[], Free>(static_cast<std::uint64_t*>(p));
  }

  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

  static std::size_t allocation_size(std::size_t words) noexcept {
    const std::size_t bytes = round_up(words) * sizeof(std::uint64_t);
    return bytes >= kHugePage ? (bytes + kHugePage - 1) / kHugePage * kHugePage : bytes;
  }

  std::size_t size_ = 0;
  std::unique_ptr<std::uint64_t[], Free> data_;
};

}  // namespace segbloom::detail
