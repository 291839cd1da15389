// segbloom store: fresh version tokens for compare-and-set.
#pragma once

#include <cstdint>

namespace segbloom::store_detail {

// A random non-zero 64-bit number from a per-thread generator seeded from
// std::random_device. Two writes draw the same token with probability 2^-64, so a
// reader's expected version cannot come back after the key was rewritten (no ABA).
std::uint64_t new_version_token();

}  // namespace segbloom::store_detail
