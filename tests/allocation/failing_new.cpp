// The replaced global allocation functions of failing_new.hpp.
#include "failing_new.hpp"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

// Trivial thread_locals: no constructor runs, so operator new may read them at any time.
thread_local bool armed = false;
thread_local std::uint64_t fail_at = 0;
thread_local std::uint64_t counted = 0;

void* allocate(std::size_t size, std::size_t alignment) {
  if (armed && ++counted == fail_at) throw std::bad_alloc();
  if (size == 0) size = 1;
  void* p = nullptr;
  if (alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
    p = std::malloc(size);
  } else if (::posix_memalign(&p, alignment, size) != 0) {
    p = nullptr;
  }
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* allocate_nothrow(std::size_t size, std::size_t alignment) noexcept {
  try {
    return allocate(size, alignment);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

}  // namespace

namespace segbloom::test {

FailNthAllocation::FailNthAllocation(std::uint64_t n) noexcept {
  fail_at = n;
  counted = 0;
  armed = true;
}
FailNthAllocation::~FailNthAllocation() { armed = false; }
std::uint64_t FailNthAllocation::allocations() const noexcept { return counted; }

}  // namespace segbloom::test

constexpr std::size_t kDefault = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

void* operator new(std::size_t size) { return allocate(size, kDefault); }
void* operator new[](std::size_t size) { return allocate(size, kDefault); }
void* operator new(std::size_t size, std::align_val_t a) { return allocate(size, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t size, std::align_val_t a) { return allocate(size, static_cast<std::size_t>(a)); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate_nothrow(size, kDefault); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate_nothrow(size, kDefault); }
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_nothrow(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_nothrow(size, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
