#include "version_token.hpp"

#include <unistd.h>

#include <random>

namespace segbloom::store_detail {

std::uint64_t new_version_token() {
  // Reseeded after fork(): a child must not repeat its parent's sequence.
  thread_local pid_t seeded_in = -1;
  thread_local std::mt19937_64 generator;
  if (seeded_in != ::getpid()) {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    generator.seed(seed);
    seeded_in = ::getpid();
  }
  std::uint64_t token = 0;
  while (token == 0) token = generator();
  return token;
}

}  // namespace segbloom::store_detail
