// The replaced global allocation functions of failing_new.hpp.
#include "failing_new.hpp"

#include <malloc.h>  // memalign: glibc's, which free() takes, for the aligned forms

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

// Trivial thread_locals: no constructor runs, so operator new may read them at any time.
thread_local bool armed = false;
thread_local std::uint64_t fail_at = 0;
thread_local std::uint64_t counted = 0;
thread_local std::uint64_t counted_aligned = 0;

// Counts one allocation; true if it is the one to fail.
bool fails_now() noexcept { return armed && ++counted == fail_at; }

void* allocate(std::size_t size, std::size_t alignment) {
  if (fails_now()) throw std::bad_alloc();
  if (size == 0) size = 1;
  void* p = alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__ ? std::malloc(size) : ::memalign(alignment, size);
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
  counted_aligned = 0;
  armed = true;
}
FailNthAllocation::~FailNthAllocation() { armed = false; }
std::uint64_t FailNthAllocation::allocations() const noexcept { return counted; }
std::uint64_t FailNthAllocation::aligned_allocations() const noexcept { return counted_aligned; }

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

// glibc lets a program replace posix_memalign (with malloc and free kept, memalign's
// blocks are theirs); under AddressSanitizer, memalign is its interceptor.
extern "C" int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  if (armed) ++counted_aligned;
  if (fails_now()) return ENOMEM;
  void* p = ::memalign(alignment, size == 0 ? 1 : size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
