// segbloom: TransitionFilter (transition_filter.hpp) to storage and back.
//
// The same two ways, and the same rules, as every filter kind (serialization.hpp):
//
//  1. Cereal save/load with a class version, for binary, portable binary and JSON
//     archives. Loading into a TransitionFilter keeps that object's clock.
//  2. The envelope, kind 4 (pair of ScalableBloomFilter), 5 (CountingBloomFilter) or
//     6 (LevelDbCompatibleFilter):
//
//       std::string blob = segbloom::to_bytes(pair);
//       auto pair = segbloom::from_bytes<segbloom::TransitionFilter<segbloom::ScalableBloomFilter>>(
//           blob, limits, clock);
//
//     TransitionView (transition_view.hpp) answers lookups straight from such a blob.
//
// Archive layout, version 1 (portable binary; the envelope's payload), little-endian:
//
//   size  field
//   1     endianness flag, 1 = little (written by Cereal)
//   4     class version (written by Cereal, once per archive)
//   1     kind id: 3 + the id of the kind of both filters (4, 5, 6)
//   8     ends_at: Unix seconds from which the previous filter no longer answers (int64)
//   8     period: the transition period in seconds, [0, 100 years] (int64)
//   1     has_previous: 0 or 1 (with 0, ends_at and period are 0)
//   8     Lc, then Lc bytes: the current filter as a complete envelope (to_bytes)
//   8     Lp, then Lp bytes: the previous filter as a complete envelope, when has_previous
//
// The inner envelopes are exactly to_bytes of each filter (their own checksums,
// versions and validation), so a view can point FilterViews at them without a copy.
// JSON archives hold the same fields by name, each inner envelope as a base64 string
// ("current", "previous").
//
// Validation (Cereal load, from_bytes, TransitionView), each a FormatError, before any
// allocation of a declared size: another kind (outer, or an inner filter of another kind
// than the pair's), a newer class version, has_previous not 0 or 1, a period out of
// range, ends_at outside [0, 2^40 + period] with a previous filter (the end a pair
// writes: transition_end), ends_at or period set without one, an inner envelope longer than
// the bytes left or than the limits allow, any inner envelope the filter's own loader
// refuses (message prefixed with "current filter: " or "previous filter: "), filters
// with different seeds, truncation, bytes left over; JSON: a string that is not
// canonical base64.
// Limits: LoadLimits::max_bytes bounds the total. The current filter is loaded with the
// caller's limits; the previous one with max_bytes minus the current filter's payload
// length (which includes its cell arrays), so that both filters' cell arrays together
// stay within max_bytes.
//
// Loading drops a previous filter whose period is over by the loading clock (it would
// never answer), after checking it like the rest.
#pragma once

#include <chrono>
#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <cereal/cereal.hpp>
#include <cereal/external/base64.hpp>

#include "segbloom/clock.hpp"
#include "segbloom/envelope.hpp"
#include "segbloom/errors.hpp"
#include "segbloom/filter_kinds.hpp"
#include "segbloom/serialization.hpp"
#include "segbloom/transition_filter.hpp"

namespace segbloom {

// The class version of every TransitionFilter archive. A reader accepts every version up
// to this one.
inline constexpr std::uint32_t kTransitionArchiveVersion = 1;

template <class F>
struct FilterKind<TransitionFilter<F>> {
  static constexpr std::uint8_t id = kTransitionKindOffset + FilterKind<F>::id;
  static constexpr std::string_view name = kTransitionKindNames[FilterKind<F>::id - 1];
};

template <class T>
struct IsTransitionFilter : std::false_type {};
template <class F>
struct IsTransitionFilter<TransitionFilter<F>> : std::true_type {};

// A TransitionFilter of a serializable kind.
template <class T>
concept SerializableTransition =
    IsTransitionFilter<T>::value && SerializableFilter<typename T::filter_type>;

namespace detail {

// The fields of a transition payload, as stored; the inner envelopes are views into it.
struct TransitionParts {
  std::uint8_t kind = 0;  // 4, 5 or 6
  UnixSeconds ends_at = 0;
  std::chrono::seconds period{0};
  bool has_previous = false;
  std::string_view current;
  std::string_view previous;  // empty unless has_previous
};

// Reads and checks a payload's fields (layout above) without looking inside the inner
// envelopes, except for their length against `limits` (and the current one's against
// previous_limits for the previous). Throws FormatError.
TransitionParts parse_transition_payload(std::string_view payload, std::uint8_t expected_kind,
                                         const LoadLimits& limits);

// The checks every loader makes on the fields, in one place.
void check_transition_version(std::uint32_t version);
void check_transition_fields(std::int64_t ends_at, std::int64_t period, std::uint8_t has_previous);
// The largest inner envelope a loader reads under `limits`.
std::uint64_t max_inner_blob_bytes(const LoadLimits& limits);
// The limits of the previous filter, after a current filter of `current_blob_bytes`.
LoadLimits previous_limits(const LoadLimits& limits, std::uint64_t current_blob_bytes);
// Appends "current filter: " or "previous filter: " to a loader's message.
[[noreturn]] void throw_inner(const char* which, const FormatError& error);

// An inner filter from its envelope, on `clock`.
template <class F>
F load_inner(std::string_view blob, const LoadLimits& limits, const Clock& clock, const char* which) {
  try {
    F filter = segbloom::from_bytes<F>(blob, limits);
    filter.set_clock(clock);
    return filter;
  } catch (const FormatError& e) {
    throw_inner(which, e);
  }
}

// The pair from loaded parts; drops a previous filter whose period is over.
template <class F>
TransitionFilter<F> assemble_transition(F current, std::optional<F> previous, UnixSeconds ends_at,
                                        std::chrono::seconds period, const Clock& clock) {
  std::optional<TransitionFilter<F>> pair;
  try {
    pair.emplace(from_parts, std::move(current), std::move(previous), ends_at, period, clock);
  } catch (const std::invalid_argument& e) {
    throw FormatError(e.what());
  }
  pair->finish_if_due();
  return std::move(*pair);
}

template <class Archive>
void save_inner_blob(Archive& ar, const char* name, const std::string& blob) {
  if constexpr (kTextArchive<Archive>) {
    ar(cereal::make_nvp(name, cereal::base64::encode(
                                  reinterpret_cast<const unsigned char*>(blob.data()), blob.size())));
  } else {
    ar(cereal::make_nvp(name, static_cast<std::uint64_t>(blob.size())));
    ar(cereal::binary_data(blob.data(), blob.size()));
  }
}

// One inner envelope, its length checked against `limits` and, when known, the bytes
// left, before anything of that length is allocated.
template <class Archive>
std::string load_inner_blob(Archive& ar, const char* name, const LoadLimits& limits,
                            const MemoryInput* source) {
  const std::uint64_t most = max_inner_blob_bytes(limits);
  const auto too_long = [&](std::uint64_t n) {
    return FormatError("segbloom: " + std::string(name) + " filter: envelope of " +
                       std::to_string(n) + " bytes, above the " + std::to_string(most) +
                       " the LoadLimits allow");
  };
  if constexpr (kTextArchive<Archive>) {
    std::string text;  // already in memory: its length is not a declared one
    ar(cereal::make_nvp(name, text));
    if (text.size() / 4 * 3 > most) throw too_long(text.size() / 4 * 3);
    std::string bytes = cereal::base64::decode(text);
    if (cereal::base64::encode(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()) !=
        text) {
      throw FormatError("segbloom: " + std::string(name) + " filter: not canonical base64");
    }
    return bytes;
  } else {
    std::uint64_t n = 0;
    ar(cereal::make_nvp(name, n));
    if (n > most) throw too_long(n);
    if (source != nullptr && n > source->remaining()) {
      throw FormatError("segbloom: " + std::string(name) + " filter: truncated: envelope of " +
                        std::to_string(n) + " bytes declared, " +
                        std::to_string(source->remaining()) + " bytes left");
    }
    // Unknown length left: read in 1 MiB chunks, so a short archive costs what it holds.
    constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
    std::string bytes;
    for (std::uint64_t done = 0; done < n;) {
      const std::size_t step = static_cast<std::size_t>(std::min(kChunk, n - done));
      bytes.resize(static_cast<std::size_t>(done) + step);
      ar(cereal::binary_data(bytes.data() + done, step));
      done += step;
    }
    return bytes;
  }
}

// The body of every Cereal load: reads and checks the fields after the class version.
template <class F, class Archive>
TransitionFilter<F> load_transition(Archive& ar, std::uint32_t version, const Clock& clock) {
  try {
    check_transition_version(version);
    check_kind(load_byte(ar, "kind"), FilterKind<TransitionFilter<F>>::id);
    std::int64_t ends_at = 0;
    std::int64_t period = 0;
    ar(cereal::make_nvp("ends_at", ends_at), cereal::make_nvp("period", period));
    const std::uint8_t has_previous = load_byte(ar, "has_previous");
    check_transition_fields(ends_at, period, has_previous);
    const LoadContext context = load_context(ar);
    const std::string current_blob = load_inner_blob(ar, "current", context.limits, context.source);
    F current = load_inner<F>(current_blob, context.limits, clock, "current");
    std::optional<F> previous;
    if (has_previous) {
      const LoadLimits limits = previous_limits(context.limits, current_blob.size());
      const std::string previous_blob = load_inner_blob(ar, "previous", limits, context.source);
      previous.emplace(load_inner<F>(previous_blob, limits, clock, "previous"));
    }
    return assemble_transition<F>(std::move(current), std::move(previous), ends_at,
                                  std::chrono::seconds{period}, clock);
  } catch (const cereal::Exception& e) {
    throw FormatError(std::string("segbloom: transition archive truncated or malformed: ") + e.what());
  }
}

}  // namespace detail

// Cereal: saves the pair (layout at the top of this file).
template <class Archive, SerializableFilter F>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const TransitionFilter<F>& pair, std::uint32_t /*version*/) {
  const F* previous = pair.previous();
  ar(cereal::make_nvp("kind", FilterKind<TransitionFilter<F>>::id),
     cereal::make_nvp("ends_at", static_cast<std::int64_t>(pair.transition_ends_at())),
     cereal::make_nvp("period", static_cast<std::int64_t>(pair.transition_period().count())),
     cereal::make_nvp("has_previous", static_cast<std::uint8_t>(previous != nullptr)));
  detail::save_inner_blob(ar, "current", to_bytes(pair.current()));
  if (previous != nullptr) detail::save_inner_blob(ar, "previous", to_bytes(*previous));
}

// Cereal: loads a pair, checking everything (see "Validation" above), on the target's
// clock. Throws FormatError; the target is unchanged unless the load succeeds.
template <class Archive, SerializableFilter F>
void CEREAL_LOAD_FUNCTION_NAME(Archive& ar, TransitionFilter<F>& pair, std::uint32_t version) {
  pair = detail::load_transition<F>(ar, version, pair.clock());
}

// --- The envelope ----------------------------------------------------------------

// The pair in a checked envelope: 53 bytes plus each filter's to_bytes (plus 8 for the
// previous one's length).
template <SerializableFilter F>
std::string to_bytes(const TransitionFilter<F>& pair) {
  std::string blob(envelope::kHeaderBytes, '\0');
  {
    detail::StringOutput buffer(blob);
    std::ostream stream(&buffer);
    cereal::PortableBinaryOutputArchive ar(stream,
                                           cereal::PortableBinaryOutputArchive::Options::LittleEndian());
    ar(pair);
  }
  envelope::seal(blob, FilterKind<TransitionFilter<F>>::id);
  return blob;
}

// The pair in `blob`, which must be exactly one envelope of kind T (a TransitionFilter),
// on `clock`. Throws FormatError naming what is wrong (see "Validation"). The inner
// filters are loaded from the blob in place (no copy of the inner envelopes).
template <SerializableTransition T>
T from_bytes(std::string_view blob, const LoadLimits& limits = {}, const Clock& clock = system_clock()) {
  using F = typename T::filter_type;
  const std::string_view payload = envelope::open(blob, FilterKind<T>::id, limits);
  const detail::TransitionParts parts = detail::parse_transition_payload(payload, FilterKind<T>::id, limits);
  F current = detail::load_inner<F>(parts.current, limits, clock, "current");
  std::optional<F> previous;
  if (parts.has_previous) {
    previous.emplace(detail::load_inner<F>(
        parts.previous, detail::previous_limits(limits, parts.current.size()), clock, "previous"));
  }
  return detail::assemble_transition<F>(std::move(current), std::move(previous), parts.ends_at,
                                        parts.period, clock);
}

// Writes to_bytes(pair) to `out`.
template <SerializableFilter F>
void to_stream(std::ostream& out, const TransitionFilter<F>& pair) {
  const std::string blob = to_bytes(pair);
  out.write(blob.data(), static_cast<std::streamsize>(blob.size()));
}

// Reads exactly one envelope of kind T from `in` and loads it, as from_bytes.
template <SerializableTransition T>
T from_stream(std::istream& in, const LoadLimits& limits = {}, const Clock& clock = system_clock()) {
  return from_bytes<T>(detail::read_envelope(in, FilterKind<T>::id, limits), limits, clock);
}

}  // namespace segbloom

CEREAL_CLASS_VERSION(segbloom::TransitionFilter<segbloom::ScalableBloomFilter>,
                     segbloom::kTransitionArchiveVersion)
CEREAL_CLASS_VERSION(segbloom::TransitionFilter<segbloom::CountingBloomFilter>,
                     segbloom::kTransitionArchiveVersion)
CEREAL_CLASS_VERSION(segbloom::TransitionFilter<segbloom::LevelDbCompatibleFilter>,
                     segbloom::kTransitionArchiveVersion)
