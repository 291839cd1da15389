// Damaging stored filters on purpose: the loops the serialization tests share.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

namespace segbloom::test {

// Calls check(damaged) once for every single-bit flip of `blob` (the one byte is restored
// before the next flip).
template <class Check>
void for_each_bit_flip(const std::string& blob, Check&& check) {
  std::string damaged = blob;
  for (std::size_t bit = 0; bit < blob.size() * 8; ++bit) {
    damaged[bit / 8] = static_cast<char>(blob[bit / 8] ^ (1 << (bit % 8)));
    check(static_cast<const std::string&>(damaged));
    damaged[bit / 8] = blob[bit / 8];
  }
}

// `json` with what follows the first `field` (up to the next ',' or '\n') replaced by
// `value`; the field must be there.
inline std::string replace_after(const std::string& json, const std::string& field,
                                 const std::string& value) {
  const std::size_t at = json.find(field);
  REQUIRE(at != std::string::npos);
  const std::size_t from = at + field.size();
  const std::size_t to = json.find_first_of(",\n", from);
  return json.substr(0, from) + value + json.substr(to);
}

}  // namespace segbloom::test
