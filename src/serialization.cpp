// The non-template parts of serialization: the envelope and the checks every loader makes.
#include "segbloom/serialization.hpp"

#include <algorithm>
#include <cstring>

#include <xxhash.h>

namespace segbloom {
namespace {

std::uint64_t load_le64(const char* p) noexcept {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(p[i]);
  return value;
}

void store_le64(char* p, std::uint64_t value) noexcept {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

std::string kind_label(std::uint8_t id) {
  return std::string(kind_name(id)) + " (kind " + std::to_string(id) + ")";
}

}  // namespace

namespace envelope {

Header read_header(std::string_view blob, std::uint8_t expected_kind, const LoadLimits& limits) {
  if (blob.size() < kHeaderBytes) {
    throw FormatError("segbloom: truncated: " + std::to_string(blob.size()) +
                      " bytes, an envelope header needs " + std::to_string(kHeaderBytes));
  }
  if (std::memcmp(blob.data(), kMagic, sizeof kMagic) != 0) {
    throw FormatError("segbloom: wrong magic: not a segbloom envelope");
  }
  Header h;
  h.version = static_cast<std::uint8_t>(blob[4]);
  h.kind = static_cast<std::uint8_t>(blob[5]);
  h.payload_bytes = load_le64(blob.data() + 6);
  h.checksum = load_le64(blob.data() + 14);
  if (h.version > kFormatVersion) {
    throw FormatError("segbloom: format version " + std::to_string(h.version) +
                      " is newer than this library reads (" + std::to_string(kFormatVersion) + ")");
  }
  if (h.version == 0) throw FormatError("segbloom: format version 0 does not exist");
  if (expected_kind != 0 && h.kind != expected_kind) {
    throw FormatError("segbloom: the blob holds a " + kind_label(h.kind) + ", not a " +
                      kind_label(expected_kind));
  }
  if (expected_kind == 0 && kind_name(h.kind) == "unknown kind") {
    throw FormatError("segbloom: unknown filter kind " + std::to_string(h.kind));
  }
  if (h.payload_bytes > max_payload_bytes(limits)) {
    throw FormatError("segbloom: payload of " + std::to_string(h.payload_bytes) +
                      " bytes declared, above LoadLimits::max_bytes (" +
                      std::to_string(limits.max_bytes) + ")");
  }
  return h;
}

std::string_view open(std::string_view blob, std::uint8_t expected_kind, const LoadLimits& limits) {
  const Unverified u = open_unverified(blob, expected_kind, limits);
  if (XXH64(u.payload.data(), u.payload.size(), 0) != u.checksum) throw_checksum_mismatch();
  return u.payload;
}

void throw_checksum_mismatch() {
  throw FormatError("segbloom: checksum mismatch: the payload is corrupt");
}

Unverified open_unverified(std::string_view blob, std::uint8_t expected_kind,
                           const LoadLimits& limits) {
  const Header h = read_header(blob, expected_kind, limits);
  const std::uint64_t present = blob.size() - kHeaderBytes;
  if (present < h.payload_bytes) {
    throw FormatError("segbloom: truncated: payload of " + std::to_string(h.payload_bytes) +
                      " bytes declared, " + std::to_string(present) + " present");
  }
  if (present > h.payload_bytes) {
    throw FormatError("segbloom: " + std::to_string(present - h.payload_bytes) +
                      " unexpected bytes after the payload");
  }
  const std::string_view payload = blob.substr(kHeaderBytes);
  if (payload.empty() || payload[0] != 1) {
    // Refused only once the checksum is known good: a damaged byte is reported as such.
    if (XXH64(payload.data(), payload.size(), 0) != h.checksum) throw_checksum_mismatch();
    throw FormatError("segbloom: payload is not a little-endian portable archive");
  }
  return {payload, h.checksum};
}

void seal(std::string& blob, std::uint8_t kind) {
  const std::string_view payload = std::string_view(blob).substr(kHeaderBytes);
  std::memcpy(blob.data(), kMagic, sizeof kMagic);
  blob[4] = static_cast<char>(kFormatVersion);
  blob[5] = static_cast<char>(kind);
  store_le64(blob.data() + 6, payload.size());
  store_le64(blob.data() + 14, XXH64(payload.data(), payload.size(), 0));
}

}  // namespace envelope

namespace detail {

static_assert(sizeof(XXH64_state_t) <= VerifyingInput::kStateBytes);

VerifyingInput::VerifyingInput(std::string_view bytes) : MemoryInput(bytes), payload_(bytes) {
  XXH64_reset(reinterpret_cast<XXH64_state_t*>(state_), 0);
}

std::streamsize VerifyingInput::xsgetn(char* out, std::streamsize n) {
  const std::streamsize got = std::min<std::streamsize>(n, static_cast<std::streamsize>(remaining()));
  if (got <= 0) return 0;
  std::memcpy(out, gptr(), static_cast<std::size_t>(got));
  setg(eback(), gptr() + got, egptr());
  // Hashed from the copy, still in L1: the bytes are read from the blob once.
  XXH64_update(reinterpret_cast<XXH64_state_t*>(state_), out, static_cast<std::size_t>(got));
  return got;
}

void VerifyingInput::verify(std::uint64_t checksum) const {
  if (remaining() != 0 ||
      XXH64_digest(reinterpret_cast<const XXH64_state_t*>(state_)) != checksum) {
    if (XXH64(payload_.data(), payload_.size(), 0) != checksum) envelope::throw_checksum_mismatch();
  }
}

void check_kind(std::uint8_t stored, std::uint8_t expected) {
  if (stored != expected) {
    throw FormatError("segbloom: the archive holds a " + kind_label(stored) + ", not a " +
                      kind_label(expected));
  }
}

void check_archive_version(std::uint32_t version) {
  if (version > kArchiveVersion) {
    throw FormatError("segbloom: archive version " + std::to_string(version) +
                      " is newer than this library reads (" + std::to_string(kArchiveVersion) +
                      ")");
  }
  if (version == 0) throw FormatError("segbloom: archive version 0 does not exist");
}

void check_options(const Options& options) {
  try {
    validate(options);
  } catch (const std::invalid_argument& e) {
    throw FormatError(std::string("segbloom: stored options out of range: ") + e.what());
  }
}

Layout layout_of(std::uint8_t stored) {
  if (stored > static_cast<std::uint8_t>(Layout::blocked)) {
    throw FormatError("segbloom: stored options out of range: layout " + std::to_string(stored) +
                      " unknown (0 classic, 1 blocked)");
  }
  return static_cast<Layout>(stored);
}

void check_slice_count(const Options& options, std::uint64_t count, std::uint64_t rotations) {
  const std::uint64_t limit = options.max_slices == 0 ? kMaxSlices : options.max_slices;
  if (count == 0 || count > limit) {
    throw FormatError("segbloom: " + std::to_string(count) + " slices stored; the options allow 1 to " +
                      std::to_string(limit));
  }
  // Window mode rotates only once all its slices are open; growing mode never does
  // (slices of timed filters also expire, at any count).
  const bool timed = options.slice_lifetime.count() > 0;
  if (rotations != 0 && !timed && (options.max_slices == 0 || count != options.max_slices)) {
    throw FormatError("segbloom: " + std::to_string(rotations) +
                      " rotations stored for a filter that cannot have rotated");
  }
}

Layout flagged_layout_of(std::uint8_t stored, bool& timed, bool& probing) {
  timed = (stored & kTimedFlag) != 0;
  probing = (stored & kProbingFlag) != 0;
  return layout_of(static_cast<std::uint8_t>(stored & ~(kTimedFlag | kProbingFlag)));
}

Probing probing_of(std::size_t index, std::uint8_t stored, const SliceShape& planned, bool xxh3_digest) {
  const std::string where = "segbloom: slice " + std::to_string(index) + ": ";
  if (stored > static_cast<std::uint8_t>(Probing::triple_hashing)) {
    throw FormatError(where + "probing " + std::to_string(stored) + " unknown (0 the scheme's, 1 triple hashing)");
  }
  const auto probing = static_cast<Probing>(stored);
  if (probing == Probing::triple_hashing && (planned.layout != Layout::classic || !xxh3_digest)) {
    throw FormatError(where + "triple hashing stored in a " +
                      std::string(planned.layout != Layout::classic ? "blocked slice" : "filter without the XXH3 digest") +
                      "; it is for classic slices of XXH3 digests only");
  }
  // The filter writes a slice with the probing its options plan, so triple hashing where
  // they plan double hashing never came from it, and new slices would then probe otherwise
  // than the stored ones were written. (0 where 1 is planned stays: blobs before 2 Dec 2026.)
  if (probing == Probing::triple_hashing && planned.probing != Probing::triple_hashing) {
    throw FormatError(where + "probing 1 (triple hashing) stored; its options plan double hashing (probing 0)");
  }
  return probing;
}

void check_probing_used(bool flagged, bool used) {
  if (flagged && !used) {
    throw FormatError("segbloom: the layout byte flags probing bytes, but no slice probes by triple hashing");
  }
}

std::chrono::seconds lifetime_of(std::uint64_t stored) {
  if (stored == 0 || stored > static_cast<std::uint64_t>(kMaxSliceLifetime.count())) {
    throw FormatError("segbloom: stored options out of range: slice_lifetime " +
                      std::to_string(stored) + " s in a timed filter; allowed: 1 s to 100 years");
  }
  return std::chrono::seconds{static_cast<std::int64_t>(stored)};
}

void check_timed_slice(std::size_t position, std::size_t index, std::int64_t opened_at, bool window,
                       std::int64_t previous_opened_at) {
  const std::string where = "segbloom: slice " + std::to_string(position) + ": ";
  if (index >= kMaxSlices) {
    throw FormatError(where + "sequence index " + std::to_string(index) + " above 63");
  }
  // Window slices all have one shape, planned at index 0, and are stored so: another index
  // loaded and was saved back as 0 (until 2 Dec 2026), so a blob did not round-trip.
  if (window && index != 0) {
    throw FormatError(where + "sequence index " + std::to_string(index) + " in window mode (always 0)");
  }
  if (opened_at < 0 || opened_at > ScalableBloomFilter::kMaxOpenTime) {
    throw FormatError(where + "open time " + std::to_string(opened_at) + " outside [0, 2^40]");
  }
  // The filter opens no slice before the newest (open_slice), so open times never decrease
  // from the oldest slice to the newest; an older slice that opened later would close (at
  // the next one's open time) before it opened, and its keys expire a lifetime early.
  if (position > 0 && opened_at < previous_opened_at) {
    throw FormatError(where + "open time " + std::to_string(opened_at) + " before slice " +
                      std::to_string(position - 1) + "'s " + std::to_string(previous_opened_at) +
                      "; open times never decrease from the oldest slice to the newest");
  }
}

void check_items(std::size_t position, std::uint64_t items) {
  if (items > kMaxStoredItems) {
    throw FormatError("segbloom: slice " + std::to_string(position) + ": " + std::to_string(items) +
                      " items stored; at most 2^56");
  }
}

void check_items_cover_cells(std::size_t position, std::uint64_t items, std::uint64_t set_cells,
                             unsigned probes) {
  const std::uint64_t fewest = fewest_items(set_cells, probes);
  if (items < fewest) {
    throw FormatError("segbloom: slice " + std::to_string(position) + ": " + std::to_string(items) +
                      " items stored with " + std::to_string(set_cells) + " cells set; each insert sets at most " +
                      std::to_string(probes) + ", so the set cells need at least " + std::to_string(fewest) +
                      " items");
  }
}

std::uint64_t check_cells(std::size_t index, std::uint64_t cells, std::uint64_t cells_per_word,
                          std::uint64_t& total, const LoadLimits& limits,
                          std::uint64_t available) {
  const auto where = [index] { return "segbloom: slice " + std::to_string(index) + ": "; };
  if (cells == 0 || cells % 64 != 0) {
    throw FormatError(where() + "size of " + std::to_string(cells) +
                      " cells is not a positive multiple of 64");
  }
  const std::uint64_t bytes = cells / cells_per_word * sizeof(std::uint64_t);
  if (bytes > limits.max_bytes || total > limits.max_bytes - bytes) {
    throw FormatError(where() + "declares " + std::to_string(bytes) + " bytes of cells, " +
                      std::to_string(total) + " before it; LoadLimits::max_bytes is " +
                      std::to_string(limits.max_bytes));
  }
  if (bytes > available) {
    throw FormatError(where() + "truncated: declares " + std::to_string(bytes) +
                      " bytes of cells, " + std::to_string(available) + " bytes left");
  }
  total += bytes;
  return bytes;
}

// Reads up to n bytes and returns how many it read. A stream whose exceptions() include
// failbit throws std::ios_base::failure at a short read: here that is a truncated blob, a
// FormatError for the caller to throw (it escaped as ios_base::failure until 2 Dec 2026);
// an I/O error (badbit) is rethrown.
std::size_t read_up_to(std::istream& in, char* data, std::size_t n) {
  try {
    in.read(data, static_cast<std::streamsize>(n));
  } catch (const std::ios_base::failure&) {
    if (in.bad()) throw;
  }
  return static_cast<std::size_t>(in.gcount());
}

std::string read_envelope(std::istream& in, std::uint8_t expected_kind, const LoadLimits& limits) {
  std::string blob(envelope::kHeaderBytes, '\0');
  blob.resize(read_up_to(in, blob.data(), blob.size()));
  const envelope::Header h = envelope::read_header(blob, expected_kind, limits);
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
  for (std::uint64_t left = h.payload_bytes; left > 0;) {
    const std::size_t n = static_cast<std::size_t>(std::min(left, kChunk));
    const std::size_t old = blob.size();
    blob.resize(old + n);
    const std::size_t got = read_up_to(in, blob.data() + old, n);
    if (got != n) {
      throw FormatError("segbloom: truncated: the stream ended " + std::to_string(left - got) +
                        " bytes before the end of the payload");
    }
    left -= n;
  }
  return blob;
}

}  // namespace detail
}  // namespace segbloom
