// The non-template parts of TransitionFilter's serialization: the payload parser shared
// by from_bytes and TransitionView, and the checks every loader makes.
#include "segbloom/transition_serialization.hpp"

#include <string>

namespace segbloom::detail {
namespace {

// Little-endian fields from a payload, refusing to read past its end.
class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes) : bytes_(bytes) {}

  std::uint64_t remaining() const noexcept { return bytes_.size() - pos_; }

  std::string_view take(std::uint64_t n, const char* what) {
    if (n > remaining()) {
      throw FormatError("segbloom: transition payload truncated: " + std::string(what) + " needs " +
                        std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left");
    }
    const std::string_view out = bytes_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }
  std::uint64_t uint(unsigned size, const char* what) {
    const std::string_view p = take(size, what);
    std::uint64_t value = 0;
    for (unsigned i = size; i-- > 0;) value = (value << 8) | static_cast<unsigned char>(p[i]);
    return value;
  }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

// One inner envelope: its length, then its bytes.
std::string_view take_inner(FieldReader& r, const char* which, const LoadLimits& limits) {
  const std::uint64_t n = r.uint(8, which);
  const std::uint64_t most = max_inner_blob_bytes(limits);
  if (n > most) {
    throw FormatError("segbloom: " + std::string(which) + " filter: envelope of " + std::to_string(n) +
                      " bytes, above the " + std::to_string(most) + " the LoadLimits allow");
  }
  if (n > r.remaining()) {
    throw FormatError("segbloom: " + std::string(which) + " filter: truncated: envelope of " +
                      std::to_string(n) + " bytes declared, " + std::to_string(r.remaining()) +
                      " bytes left");
  }
  return r.take(n, which);
}

}  // namespace

void check_transition_version(std::uint32_t version) {
  if (version > kTransitionArchiveVersion) {
    throw FormatError("segbloom: transition archive version " + std::to_string(version) +
                      " is newer than this library reads (" +
                      std::to_string(kTransitionArchiveVersion) + ")");
  }
  if (version == 0) throw FormatError("segbloom: transition archive version 0 does not exist");
}

void check_transition_fields(std::int64_t ends_at, std::int64_t period, std::uint8_t has_previous) {
  if (has_previous > 1) {
    throw FormatError("segbloom: has_previous is " + std::to_string(has_previous) + "; allowed: 0 or 1");
  }
  if (period < 0 || period > kMaxTransitionPeriod.count()) {
    throw FormatError("segbloom: transition period of " + std::to_string(period) +
                      " s out of range; allowed: [0, 100 years] in seconds");
  }
  // The end a pair writes (transition_end): an earlier or later one kept the previous
  // filter answering, and its options from changing, for good.
  if (has_previous == 1 && !transition_end_in_range(ends_at, std::chrono::seconds{period})) {
    throw FormatError("segbloom: transition end time (ends_at) " + std::to_string(ends_at) +
                      " out of range; allowed with a previous filter: [0, 2^40 + period] = [0, " +
                      std::to_string(kLatestTime + period) + "]");
  }
  if (has_previous == 0 && (ends_at != 0 || period != 0)) {
    throw FormatError("segbloom: a transition end time or period stored without a previous filter");
  }
}

std::uint64_t max_inner_blob_bytes(const LoadLimits& limits) {
  const std::uint64_t payload = envelope::max_payload_bytes(limits);
  return payload > ~std::uint64_t{0} - envelope::kHeaderBytes ? ~std::uint64_t{0} : envelope::kHeaderBytes + payload;
}

LoadLimits previous_limits(const LoadLimits& limits, std::uint64_t current_blob_bytes) {
  const std::uint64_t payload =
      current_blob_bytes > envelope::kHeaderBytes ? current_blob_bytes - envelope::kHeaderBytes : 0;
  LoadLimits rest = limits;
  rest.max_bytes = payload < limits.max_bytes ? limits.max_bytes - payload : 0;
  return rest;
}

void throw_inner(const char* which, const FormatError& error) {
  std::string what = error.what();
  const std::string_view prefix = "segbloom: ";
  if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
  throw FormatError("segbloom: " + std::string(which) + " filter: " + what);
}

TransitionParts parse_transition_payload(std::string_view payload, std::uint8_t expected_kind,
                                         const LoadLimits& limits) {
  FieldReader r(payload);
  r.uint(1, "the endianness flag");  // checked by envelope::open
  check_transition_version(static_cast<std::uint32_t>(r.uint(4, "the class version")));
  TransitionParts parts;
  parts.kind = static_cast<std::uint8_t>(r.uint(1, "the kind"));
  check_kind(parts.kind, expected_kind);
  parts.ends_at = static_cast<std::int64_t>(r.uint(8, "ends_at"));
  const auto period = static_cast<std::int64_t>(r.uint(8, "the period"));
  const auto has_previous = static_cast<std::uint8_t>(r.uint(1, "has_previous"));
  check_transition_fields(parts.ends_at, period, has_previous);
  parts.period = std::chrono::seconds{period};
  parts.has_previous = has_previous == 1;
  parts.current = take_inner(r, "current", limits);
  if (parts.has_previous) {
    parts.previous = take_inner(r, "previous", previous_limits(limits, parts.current.size()));
  }
  if (r.remaining() != 0) {
    throw FormatError("segbloom: " + std::to_string(r.remaining()) +
                      " unexpected bytes after the last filter of the transition");
  }
  return parts;
}

}  // namespace segbloom::detail
