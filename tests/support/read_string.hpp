// A store backend's blob of one key as a string, for the store tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "segbloom/store_backend.hpp"

namespace segbloom::test {

// The key's bytes, or "<absent>"; its version to `version` when given and present.
inline std::string read_string(StoreBackend& backend, const std::string& key, std::uint64_t* version = nullptr) {
  std::string out = "<absent>";
  backend.read(key, [&](std::string_view bytes, std::uint64_t v) {
    out.assign(bytes);
    if (version) *version = v;
  });
  return out;
}

}  // namespace segbloom::test
