// segbloom: the checked storage envelope around a serialized filter.
//
// Layout (all integers little-endian, on every host):
//
//   offset  size  field
//   0       4     magic "SGBF" (53 47 42 46)
//   4       1     format version (1)
//   5       1     filter kind (filter_kinds.hpp: 1 scalable, 2 counting, 3 LevelDB-compatible)
//   6       8     payload length in bytes
//   14      8     XXH64 of the payload, seed 0
//   22      ...   payload: a Cereal portable binary archive of the filter, little-endian
//                 (its layout: serialization.hpp)
//
// Every header field is checked on its own (magic, version, kind, length against the
// blob's size and the caller's limits); the checksum covers the payload. So a change of
// any single bit is refused, wherever it falls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace segbloom {

// What a loader may accept. Checked against the sizes a blob declares, before anything
// of that size is allocated.
struct LoadLimits {
  // Largest total size of the cell arrays (bits or counters) of one filter, in bytes.
  // The default, 256 MiB, is ~150 million items at p = 0.1 %.
  std::uint64_t max_bytes = std::uint64_t{256} << 20;
};

namespace envelope {

inline constexpr char kMagic[4] = {'S', 'G', 'B', 'F'};
inline constexpr std::uint8_t kFormatVersion = 1;
inline constexpr std::size_t kHeaderBytes = 22;
// Bytes of a payload beyond its cell arrays are at most 57 + 17 per slice (see
// serialization.hpp), so no valid payload is longer than max_bytes + this.
inline constexpr std::uint64_t kMaxMetadataBytes = 4096;

// The longest payload a loader with these limits accepts: max_bytes + kMaxMetadataBytes,
// held at 2^64 - 1 for a max_bytes that large (a limit meant as "no limit" must not wrap
// to a tiny one).
constexpr std::uint64_t max_payload_bytes(const LoadLimits& limits) noexcept {
  return limits.max_bytes > ~std::uint64_t{0} - kMaxMetadataBytes ? ~std::uint64_t{0}
                                                                  : limits.max_bytes + kMaxMetadataBytes;
}

struct Header {
  std::uint8_t version = 0;
  std::uint8_t kind = 0;
  std::uint64_t payload_bytes = 0;
  std::uint64_t checksum = 0;
};

// Checks the first kHeaderBytes bytes of `blob` and returns them: magic, format version
// (refuses a newer one), kind (`expected_kind`, or any registered kind when 0), and the
// declared payload length against `limits`. Does not look at the payload.
// Throws FormatError naming what was wrong.
Header read_header(std::string_view blob, std::uint8_t expected_kind, const LoadLimits& limits);

// Checks a whole blob: its header (read_header), that exactly the declared payload
// follows, its checksum, and that the payload is a little-endian portable archive.
// Returns the payload, a view into `blob`.
std::string_view open(std::string_view blob, std::uint8_t expected_kind, const LoadLimits& limits);

// open() but for the checksum, which the caller verifies while it reads the payload
// (from_bytes, through detail::VerifyingInput): one pass over the bytes instead of two.
struct Unverified {
  std::string_view payload;
  std::uint64_t checksum = 0;
};
Unverified open_unverified(std::string_view blob, std::uint8_t expected_kind, const LoadLimits& limits);

// Throws the FormatError of a payload whose checksum does not match.
[[noreturn]] void throw_checksum_mismatch();

// Fills in the header of `blob`, whose first kHeaderBytes bytes were reserved and whose
// payload follows them.
void seal(std::string& blob, std::uint8_t kind);

}  // namespace envelope
}  // namespace segbloom
