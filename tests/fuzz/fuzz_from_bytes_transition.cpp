// libFuzzer target: from_bytes<TransitionFilter<ScalableBloomFilter>>, TransitionView and
// the bare Cereal archive on arbitrary bytes. Run by scripts/fuzz.sh.
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

#include "segbloom/serialization.hpp"
#include "segbloom/transition_serialization.hpp"
#include "segbloom/transition_view.hpp"

namespace {

using Pair = segbloom::TransitionFilter<segbloom::ScalableBloomFilter>;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_from_bytes_transition: %s\n", what);
  std::abort();
}

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

void check_sealed(std::string_view payload, const segbloom::LoadLimits& limits,
                  const segbloom::Clock& clock) {
  using namespace segbloom;
  std::string blob(envelope::kHeaderBytes, '\0');
  blob.append(payload);
  envelope::seal(blob, FilterKind<Pair>::id);

  std::optional<Pair> loaded;
  try {
    loaded.emplace(from_bytes<Pair>(blob, limits, clock));
  } catch (const FormatError&) {
  }
  std::optional<TransitionView> view;
  try {
    view.emplace(blob, limits, clock);
  } catch (const FormatError&) {
  }
  if (loaded.has_value() != view.has_value()) fail("from_bytes and TransitionView disagree on a blob");
  if (loaded) {
    if (view->size() != loaded->size()) fail("TransitionView::size differs");
    if (view->in_transition() != loaded->in_transition()) fail("in_transition differs");
    for (std::uint64_t key = 0; key < 64; ++key) {
      if (view->contains(key) != loaded->contains(key)) fail("TransitionView answers differently");
    }
    Pair copy = *loaded;  // a loaded pair must take writes like any other
    try {
      for (std::uint64_t key = 0; key < 64; ++key) copy.insert(key + 1000);
    } catch (const std::length_error&) {
      // a growing filter at its slice limit
    }
  }

  std::istringstream stream{std::string(payload)};
  try {
    WithLoadLimits<cereal::PortableBinaryInputArchive> ar(limits, stream);
    Pair plain(Options{}, clock);
    ar(plain);
    const bool consumed = stream.peek() == std::char_traits<char>::eof();
    if (loaded && !(plain == *loaded)) fail("the bare archive loads another pair");
    if (!loaded && consumed && !payload.empty() && payload[0] == 1) {
      fail("the bare archive loads a payload the envelope refuses");
    }
  } catch (const FormatError&) {
    if (loaded) fail("the bare archive refuses a payload the envelope loads");
  } catch (const cereal::Exception&) {
    // Cereal's own fields (endianness flag, class version: 5 bytes) are its business.
    if (payload.size() >= 5) fail("cereal::Exception escaped the loader");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace segbloom;
  LoadLimits limits;
  limits.max_bytes = std::uint64_t{1} << 20;  // keeps the fuzzer's memory small
  // The golden pair's period runs from 2026-01-01 for 7 days: a day in.
  static const ManualClock clock(1'767'225'600 + 86400);
  const std::string_view raw(reinterpret_cast<const char*>(data), size);

  try {
    const Pair pair = from_bytes<Pair>(raw, limits, clock);
    (void)pair.contains(std::uint64_t{1});
  } catch (const FormatError&) {
  }
  try {
    const TransitionView view(raw, limits, clock);
    (void)view.contains(std::uint64_t{1});
  } catch (const FormatError&) {
  }

  const bool has_header = raw.size() >= envelope::kHeaderBytes && raw.substr(0, 4) == "SGBF";
  const std::string_view payload = has_header ? raw.substr(envelope::kHeaderBytes) : raw;
  check_sealed(payload, limits, clock);
  check_sealed(reseal_inner(std::string(payload)), limits, clock);
  return 0;
}
