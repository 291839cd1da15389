// libFuzzer target: from_bytes<TransitionFilter<F>>, TransitionView, from_stream and the
// bare Cereal archives on arbitrary bytes, for F of each kind (pairs of kinds 4, 5, 6). Run
// by scripts/fuzz.sh.
//
// Each input is tried as fuzz_from_bytes.hpp tries a single filter's: as a whole blob
// (refused with FormatError or accepted, nothing else); as a payload sealed in a valid
// envelope of the pair's kind, where from_bytes and TransitionView must agree, refuse the
// same blobs and answer the same for the rest; and as a bare portable archive, which must
// load exactly what the envelope loaded. The sealed payload is tried twice: as it is, and
// with its inner envelopes resealed (their checksums recomputed), so that mutations
// reach the inner filters' payload checks and the pair's own (seeds, limits).
// Any disagreement aborts, which libFuzzer reports as a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "fuzz_from_bytes.hpp"
#include "segbloom/serialization.hpp"
#include "segbloom/transition_serialization.hpp"
#include "segbloom/transition_view.hpp"

namespace {

// The payload with each inner envelope it can find resealed (layout:
// transition_serialization.hpp): header fields fixed up, checksum recomputed.
std::string reseal_inner(std::string payload) {
  std::size_t pos = 22;  // flag, version, kind, ends_at, period
  if (payload.size() <= pos) return payload;
  const int count = payload[pos] == 1 ? 2 : 1;
  ++pos;
  for (int k = 0; k < count; ++k) {
    if (payload.size() - pos < 8) break;
    std::uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(payload[pos + static_cast<std::size_t>(i)]);
    pos += 8;
    if (len < segbloom::envelope::kHeaderBytes || len > payload.size() - pos) break;
    std::string inner = payload.substr(pos, static_cast<std::size_t>(len));
    segbloom::envelope::seal(inner, static_cast<std::uint8_t>(inner[5]));
    payload.replace(pos, inner.size(), inner);
    pos += inner.size();
  }
  return payload;
}

}  // namespace

// Every step for pairs of filters of kind F (the kinds 4, 5 and 6 of transition_serialization.hpp).
template <class F>
void check_pairs_of(std::string_view raw) {
  using namespace segbloom;
  using PairOf = TransitionFilter<F>;
  LoadLimits limits;
  limits.max_bytes = std::uint64_t{1} << 20;  // keeps the fuzzer's memory small
  // The golden pair's period runs from 2026-01-01 for 7 days: a day in.
  static const ManualClock clock(1'767'225'600 + 86400);
  const auto load = [&](std::string_view blob) { return from_bytes<PairOf>(blob, limits, clock); };
  const auto view_of = [&](std::string_view blob) { return TransitionView(blob, limits, clock); };
  // Loading into an existing pair keeps its clock: the bare archive goes into one on `clock`.
  const auto fresh = [] { return PairOf(Options{}, clock); };
  const std::string_view payload = fuzz::check_whole(raw, load, view_of);
  const std::uint8_t kind = FilterKind<PairOf>::id;
  fuzz::check_sealed(payload, kind, limits, load, view_of, fresh);
  fuzz::check_sealed(reseal_inner(std::string(payload)), kind, limits, load, view_of, fresh);
  fuzz::check_stream(raw, [&](std::istream& in) { return from_stream<PairOf>(in, limits, clock); }, load);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  check_pairs_of<segbloom::ScalableBloomFilter>(raw);
  check_pairs_of<segbloom::CountingBloomFilter>(raw);
  check_pairs_of<segbloom::LevelDbCompatibleFilter>(raw);
  return 0;
}
