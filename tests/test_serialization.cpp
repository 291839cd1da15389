// Serialization: Cereal archives, the checked envelope, FilterView, golden blobs.
#include <catch2/catch.hpp>

#include <cereal/archives/binary.hpp>
#include <cereal/archives/json.hpp>
#include <cereal/archives/portable_binary.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <xxhash.h>

#include "segbloom/filter_view.hpp"
#include "segbloom/serialization.hpp"
#include "segbloom/transition_filter.hpp"
#include "segbloom/transition_serialization.hpp"
#include "segbloom/transition_view.hpp"
#include "support/golden_specs.hpp"
#include "support/corruption.hpp"
#include "support/stats.hpp"
#include "support/stored_double_hashing.hpp"
#include "support/throws.hpp"

using namespace segbloom;
using segbloom::test::absent_key;
using segbloom::test::GoldenSpec;
using segbloom::test::golden_options;
using segbloom::test::present_key;

namespace {

// Every shape the round trips cover, built by the golden rule (support/golden_specs.hpp).
// remove_every only applies to counting filters.
std::vector<GoldenSpec> round_trip_shapes() {
  return {
      {"empty growing", 0, golden_options(100, 0.01, 0, 1), 0, 0, 11},
      {"empty window", 0, golden_options(100, 0.001, 4, 2), 0, 0, 12},
      {"one slice", 0, golden_options(500, 0.001, 0, 3), 400, 0, 13},
      {"many slices", 0, golden_options(16, 0.01, 0, 4), 1500, 0, 14},
      {"window filling", 0, golden_options(400, 0.01, 4, 5), 250, 0, 15},
      {"window rotated", 0, golden_options(200, 0.01, 4, 6), 1300, 0, 16},
      {"after removals", 0, golden_options(300, 0.01, 0, 7), 600, 3, 17},
      {"window after removals", 0, golden_options(200, 0.01, 4, 8), 900, 2, 18},
      {"blocked many slices", 0, golden_options(64, 0.01, 0, 9, Layout::blocked), 1500, 0, 19},
      {"blocked window rotated", 0, golden_options(300, 0.001, 3, 10, Layout::blocked), 1200, 4, 20},
      {"triple hashing window rotated", 0, golden_options(100, 0.001, 4, 11), 700, 3, 21},
  };
}

// Kinds hashed to 32 bits (LevelDB's) have the classic layout only.
template <class F>
bool kind_takes(const GoldenSpec& spec) {
  return F::slice_type::kBlockable || spec.options.layout == Layout::classic;
}

std::uint64_t cell_bytes(const auto& filter) {
  std::uint64_t total = 0;
  for (const auto& s : filter.slices()) total += s.cells().words().size_bytes();
  return total;
}

// Same state, same statistics, same answers.
template <class F>
void check_same(const F& original, const F& loaded, const GoldenSpec& spec) {
  REQUIRE(loaded == original);
  CHECK(loaded.options() == original.options());
  CHECK(loaded.size() == original.size());
  CHECK(loaded.rotations() == original.rotations());
  CHECK(loaded.slice_count() == original.slice_count());
  CHECK(loaded.estimated_false_positive_rate() == original.estimated_false_positive_rate());
  std::uint64_t mismatches = 0;
  for (std::uint64_t i = 0; i < spec.inserts + 1000; ++i) {
    mismatches += loaded.contains(present_key(i, spec.salt)) != original.contains(present_key(i, spec.salt));
    mismatches += loaded.contains(absent_key(i, spec.salt)) != original.contains(absent_key(i, spec.salt));
  }
  CHECK(mismatches == 0);
}

// The loaded filter goes on exactly as the original: same growth, rotation, answers.
template <class F>
void check_continues(F original, F loaded, const GoldenSpec& spec) {
  for (std::uint64_t i = 0; i < 1200; ++i) {
    const std::uint64_t key = present_key(i, spec.salt + 99);
    REQUIRE(original.insert(key) == loaded.insert(key));
    if constexpr (requires { original.remove(key); }) {
      if (i % 5 == 0) REQUIRE(original.remove(key) == loaded.remove(key));
    }
  }
  REQUIRE(loaded == original);
  CHECK(loaded.slice_count() == original.slice_count());
  CHECK(loaded.rotations() == original.rotations());
}

// View answers == filter answers, for inserted and absent keys, single and batched.
template <class F>
void check_view(const FilterView& view, const F& filter, const GoldenSpec& spec) {
  CHECK(view.kind() == FilterKind<F>::id);
  CHECK(view.options() == filter.options());
  CHECK(view.size() == filter.size());
  CHECK(view.rotations() == filter.rotations());
  CHECK(view.slice_count() == filter.slice_count());
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 0; i < spec.inserts + 1000; ++i) {
    keys.push_back(present_key(i, spec.salt));
    keys.push_back(absent_key(i, spec.salt));
  }
  std::vector<char> expected(keys.size());
  std::size_t expected_count = 0;
  std::uint64_t mismatches = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    expected[i] = filter.contains(keys[i]);
    expected_count += expected[i];
    mismatches += view.contains(keys[i]) != static_cast<bool>(expected[i]);
  }
  CHECK(mismatches == 0);
  bool found[512];
  std::size_t batched = 0;
  mismatches = 0;
  for (std::size_t at = 0; at < keys.size(); at += 512) {
    const std::size_t n = std::min<std::size_t>(512, keys.size() - at);
    for (std::size_t i = 0; i < n; ++i) found[i] = !expected[at + i];  // the view must write every answer
    batched += view.contains_many(std::span<const std::uint64_t>(keys.data() + at, n),
                                  std::span<bool>(found, n));
    for (std::size_t i = 0; i < n; ++i) mismatches += found[i] != static_cast<bool>(expected[at + i]);
  }
  CHECK(mismatches == 0);
  CHECK(batched == expected_count);
}

template <class OArchive, class IArchive, class F>
F cereal_round_trip(const F& filter) {
  std::stringstream stream;
  {
    OArchive ar(stream);
    ar(filter);
  }
  F loaded;
  {
    IArchive ar(stream);
    ar(loaded);
  }
  return loaded;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// --- Blobs written by hand from the documented layout (serialization.hpp) -------------

void put(std::string& out, std::uint64_t value, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
void put_double(std::string& out, double value) { put(out, std::bit_cast<std::uint64_t>(value), 8); }

struct RawSlice {
  std::uint64_t cells = 0;
  std::uint64_t probes = 0;
  std::uint64_t probing = 0;  // stored when the layout byte has bit 6
  std::uint64_t items = 0;
  std::vector<std::uint64_t> words;
};

struct RawFilter {
  std::uint64_t archive_version = 1;
  std::uint64_t kind = 0;
  std::uint64_t capacity = 0;
  double rate = 0;
  std::uint64_t max_slices = 0;
  std::uint64_t layout = 0;
  double growth = 0;
  double tightening = 0;
  std::uint64_t seed = 0;
  std::uint64_t rotations = 0;
  std::uint64_t count = 0;  // as stored: may disagree with slices.size()
  std::vector<RawSlice> slices;

  std::string payload() const {
    std::string p;
    put(p, 1, 1);  // little-endian
    put(p, archive_version, 4);
    put(p, kind, 1);
    put(p, capacity, 8);
    put_double(p, rate);
    put(p, max_slices, 1);
    put(p, layout, 1);
    put_double(p, growth);
    put_double(p, tightening);
    put(p, seed, 8);
    put(p, rotations, 8);
    put(p, count, 1);
    for (const RawSlice& s : slices) {
      put(p, s.cells, 8);
      put(p, s.probes, 1);
      if ((layout & 0x40) != 0) put(p, s.probing, 1);
      put(p, s.items, 8);
      for (const std::uint64_t w : s.words) put(p, w, 8);
    }
    return p;
  }
};

std::string envelope_of(const std::string& payload, std::uint64_t kind,
                        std::uint64_t version = 1) {
  std::string blob = "SGBF";
  put(blob, version, 1);
  put(blob, kind, 1);
  put(blob, payload.size(), 8);
  put(blob, XXH64(payload.data(), payload.size(), 0), 8);
  return blob + payload;
}

template <class F>
RawFilter raw_of(const F& f) {
  RawFilter r;
  r.kind = FilterKind<F>::id;
  r.capacity = f.options().capacity;
  r.rate = f.options().false_positive_rate;
  r.max_slices = f.options().max_slices;
  r.layout = static_cast<std::uint64_t>(f.options().layout);
  r.growth = f.options().growth;
  r.tightening = f.options().tightening;
  r.seed = f.options().seed;
  r.rotations = f.rotations();
  r.count = f.slice_count();
  for (const auto& s : f.slices()) {
    const auto words = s.cells().words();
    const auto probing = static_cast<std::uint64_t>(s.shape().probing);
    r.slices.push_back({s.shape().bits, s.shape().probes, probing, s.items(), {words.begin(), words.end()}});
    if (probing != 0) r.layout |= 0x40;
  }
  return r;
}

template <class F>
std::string blob_of(const RawFilter& r) {
  return envelope_of(r.payload(), FilterKind<F>::id);
}

// Refused by from_bytes and by FilterView, with a message containing `what`.
template <class F>
void check_refused(const std::string& blob, const std::string& what,
                   const LoadLimits& limits = {}) {
  CHECK_FORMAT_ERROR(from_bytes<F>(blob, limits), what);
  CHECK_THROWS_AS(from_bytes<F>(blob, limits), FormatError);
  CHECK_FORMAT_ERROR(FilterView(blob, limits), what);
}

ScalableBloomFilter small_filter(std::uint32_t window = 0) {
  ScalableBloomFilter f(golden_options(window ? 40 : 20, 0.01, window, 9));
  for (std::uint64_t i = 0; i < 100; ++i) f.insert(present_key(i));
  return f;
}

const char* data_dir() { return SEGBLOOM_TEST_DATA; }

// detail::check_items_cover_cells's refusal, which FilterView does not make.
constexpr const char* kFewerItemsThanCells = "so the set cells need at least";

}  // namespace

TEMPLATE_TEST_CASE("round trips: every archive, every shape, both modes", "[serialization]",
                   ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter) {
  using F = TestType;
  for (const GoldenSpec& spec : round_trip_shapes()) {
    if (!kind_takes<F>(spec)) continue;
    DYNAMIC_SECTION(spec.file) {
      const F original = test::build_golden<F>(spec);
      if (spec.file.find("rotated") != std::string::npos) REQUIRE(original.rotations() > 0);
      if (spec.file.find("many slices") != std::string::npos) REQUIRE(original.slice_count() >= 5);

      const F binary = cereal_round_trip<cereal::BinaryOutputArchive, cereal::BinaryInputArchive>(original);
      check_same(original, binary, spec);
      const F portable = cereal_round_trip<cereal::PortableBinaryOutputArchive,
                                           cereal::PortableBinaryInputArchive>(original);
      check_same(original, portable, spec);
      const F json = cereal_round_trip<cereal::JSONOutputArchive, cereal::JSONInputArchive>(original);
      check_same(original, json, spec);

      const std::string blob = to_bytes(original);
      const F enveloped = from_bytes<F>(blob);
      check_same(original, enveloped, spec);
      check_view(FilterView(blob), original, spec);

      std::stringstream stream;
      to_stream(stream, original);
      to_stream(stream, original);  // two envelopes back to back: each read takes one
      check_same(original, from_stream<F>(stream), spec);
      check_same(original, from_stream<F>(stream), spec);

      check_continues(original, portable, spec);
      check_continues(original, json, spec);
      check_continues(original, enveloped, spec);
    }
  }
}

TEST_CASE("stored words are read little-endian at any address", "[serialization][batch]") {
  unsigned char bytes[32];  // reads reach offset + 16 at most
  for (unsigned i = 0; i < sizeof bytes; ++i) bytes[i] = static_cast<unsigned char>(i + 1);
  for (unsigned offset = 0; offset < 16; ++offset) {
    std::uint64_t expected = 0;  // byte offset + j is bits 8j .. 8j + 7
    for (unsigned j = 0; j < 8; ++j) expected |= std::uint64_t{bytes[offset + j]} << (8 * j);
    CHECK(detail::load_le64(bytes + offset) == expected);
    CHECK(blocked::StoredLoads::word(bytes + offset, 1) == detail::load_le64(bytes + offset + 8));
    const blocked::WordPair pair = blocked::StoredLoads::pair(bytes + offset, 0);
    CHECK(pair[0] == detail::load_le64(bytes + offset));
    CHECK(pair[1] == detail::load_le64(bytes + offset + 8));
  }
  const CellsLayout<BitCells>::View view{bytes + 3};
  for (std::uint64_t i = 0; i < 128; ++i) {  // against the bytes, not the view's own word()
    CHECK(view.test(i) == (((detail::load_le64(bytes + 3 + 8 * (i / 64)) >> (i % 64)) & 1) != 0));
  }
}

// A view reads the stored words in place, with unaligned loads: wherever the blob lies,
// its answers (single, and batched in groups of any size) are the filter's, for u64 and
// string keys. The shapes take every batch path: classic slices; blocked slices through
// the group kernels (several slices, one slice with k <= 8 and with k > 16, a blocked
// filter whose tightest slices fell back to classic, one large enough to prefetch).
// Tagged [batch]: it runs at every SIMD cap (tests/meson.build).
TEMPLATE_TEST_CASE("a view answers as the filter at every alignment of the blob", "[serialization][batch]",
                   ScalableBloomFilter, CountingBloomFilter) {
  using F = TestType;
  struct Shape {
    const char* name;
    std::uint64_t capacity;
    double rate;
    Layout layout;
    std::size_t window;
    std::uint64_t inserts;
  };
  const Shape shapes[] = {
      {"classic, grown", 300, 0.01, Layout::classic, 0, 3000},
      {"classic window, rotated", 300, 0.01, Layout::classic, 4, 3000},
      {"blocked, grown", 300, 0.01, Layout::blocked, 0, 3000},
      {"blocked window, rotated", 300, 0.01, Layout::blocked, 4, 3000},
      {"blocked, one slice, k <= 8", 10'000, 0.01, Layout::blocked, 0, 3000},
      {"blocked, one slice, k > 16", 10'000, 1e-4, Layout::blocked, 0, 3000},
      {"blocked then classic, k > 16", 64, 2e-6, Layout::blocked, 0, 3840},
      {"blocked, prefetched", 1'000'000, 0.01, Layout::blocked, 0, 4000},
  };
  for (const Shape& shape : shapes) {
    Options o;
    o.capacity = shape.capacity;
    o.false_positive_rate = shape.rate;
    o.layout = shape.layout;
    o.max_slices = shape.window;
    o.seed = 77;
    F filter(o);
    std::vector<std::uint64_t> keys;
    std::vector<std::string> names;
    for (std::uint64_t i = 0; i < shape.inserts; ++i) {
      filter.insert(present_key(i, 5));
      filter.insert("user-" + std::to_string(i));
      keys.push_back(present_key(i, 5));
      keys.push_back(absent_key(i, 5));
      names.push_back("user-" + std::to_string(i));
      names.push_back("absent-" + std::to_string(i));
    }
    std::vector<char> expected(keys.size()), expected_names(names.size());
    for (std::size_t i = 0; i < keys.size(); ++i) expected[i] = filter.contains(keys[i]);
    for (std::size_t i = 0; i < names.size(); ++i) expected_names[i] = filter.contains(names[i]);
    const std::string blob = to_bytes(filter);
    std::vector<char> buffer(blob.size() + 8);
    for (std::size_t offset = 0; offset < 8; ++offset) {
      DYNAMIC_SECTION(shape.name << ", blob at offset " << offset) {
        std::memcpy(buffer.data() + offset, blob.data(), blob.size());
        const FilterView view(std::string_view(buffer.data() + offset, blob.size()));
        REQUIRE(view.slice_count() == filter.slice_count());
        std::uint64_t mismatches = 0;
        for (std::size_t i = 0; i < keys.size(); ++i) mismatches += view.contains(keys[i]) != static_cast<bool>(expected[i]);
        CHECK(mismatches == 0);
        constexpr std::size_t g = detail::kLookupGroup;  // batches around the group size, and several groups
        for (const std::size_t batch : {std::size_t{1}, g - 1, g + 1, std::size_t{300}}) {
          mismatches = 0;
          std::size_t counted = 0, true_count = 0;
          bool found[300];
          for (std::size_t at = 0; at < keys.size(); at += batch) {
            const std::size_t n = std::min(batch, keys.size() - at);
            std::fill(found, found + n, at % 2 == 0);  // the view must write every answer
            counted += view.contains_many(std::span<const std::uint64_t>(keys.data() + at, n), std::span<bool>(found, n));
            for (std::size_t i = 0; i < n; ++i) {
              mismatches += found[i] != static_cast<bool>(expected[at + i]);
              true_count += expected[at + i];
            }
          }
          CHECK(mismatches == 0);
          CHECK(counted == true_count);
        }
        bool found_names[300];
        mismatches = 0;
        for (std::size_t at = 0; at < names.size(); at += 300) {
          const std::size_t n = std::min<std::size_t>(300, names.size() - at);
          for (std::size_t i = 0; i < n; ++i) found_names[i] = !expected_names[at + i];  // must be overwritten
          view.contains_many(std::span<const std::string>(names.data() + at, n), std::span<bool>(found_names, n));
          for (std::size_t i = 0; i < n; ++i) mismatches += found_names[i] != static_cast<bool>(expected_names[at + i]);
          for (std::size_t i = 0; i < n; ++i) mismatches += view.contains(names[at + i]) != static_cast<bool>(expected_names[at + i]);
        }
        CHECK(mismatches == 0);
      }
    }
  }
}

TEMPLATE_TEST_CASE("envelope overhead is at most 64 bytes plus 32 per slice (33 with triple hashing)", "[serialization]",
                   ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter) {
  using F = TestType;
  for (const GoldenSpec& spec : round_trip_shapes()) {
    if (!kind_takes<F>(spec)) continue;
    const F f = test::build_golden<F>(spec);
    const std::string blob = to_bytes(f);
    const std::uint64_t overhead = blob.size() - cell_bytes(f);
    INFO(spec.file << ": " << f.slice_count() << " slices, overhead " << overhead);
    // The layout in serialization.hpp: one byte more a slice where some slice probes by
    // triple hashing.
    const bool probing = std::any_of(f.slices().begin(), f.slices().end(),
                                     [](const auto& s) { return s.shape().probing == Probing::triple_hashing; });
    if (spec.file.find("triple") != std::string::npos) CHECK(probing == F::slice_type::kBlockable);
    CHECK(overhead == 79 + (probing ? 18 : 17) * f.slice_count());
    CHECK(overhead <= 64 + (probing ? 33 : 32) * f.slice_count());
  }
  // 64 slices, the most a filter has.
  F big(golden_options(64, 0.01, 64, 1));
  for (std::uint64_t i = 0; i < 200; ++i) big.insert(present_key(i));
  const std::string blob = to_bytes(big);
  CHECK(blob.size() - cell_bytes(big) <= 64 + 32 * big.slice_count());
}

TEMPLATE_TEST_CASE("the payload is the documented layout, byte for byte", "[serialization]",
                   ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter) {
  using F = TestType;
  for (const GoldenSpec& spec : round_trip_shapes()) {
    if (!kind_takes<F>(spec)) continue;
    const F f = test::build_golden<F>(spec);
    CHECK(blob_of<F>(raw_of(f)) == to_bytes(f));
  }
}

TEST_CASE("envelope header checks", "[serialization]") {
  const ScalableBloomFilter f = small_filter();
  const std::string blob = to_bytes(f);
  REQUIRE(from_bytes<ScalableBloomFilter>(blob) == f);

  std::string bad = blob;
  bad[0] = 'X';
  check_refused<ScalableBloomFilter>(bad, "wrong magic");

  CHECK_FORMAT_ERROR(from_bytes<CountingBloomFilter>(blob), "not a segbloom::CountingBloomFilter (kind 2)");
  CHECK_FORMAT_ERROR(from_bytes<LevelDbCompatibleFilter>(blob), "holds a segbloom::ScalableBloomFilter");

  bad = blob;
  bad[4] = 2;
  check_refused<ScalableBloomFilter>(bad, "newer");
  bad[4] = 0;
  check_refused<ScalableBloomFilter>(bad, "format version 0");
  bad = blob;
  bad[5] = 9;
  check_refused<ScalableBloomFilter>(bad, "kind");
  CHECK_FORMAT_ERROR(FilterView(bad), "unknown filter kind 9");

  bad = blob;
  bad[30] ^= 4;
  check_refused<ScalableBloomFilter>(bad, "checksum mismatch");
  bad = blob;
  bad[15] ^= 1;  // the checksum itself
  check_refused<ScalableBloomFilter>(bad, "checksum mismatch");

  check_refused<ScalableBloomFilter>(blob + '\0', "1 unexpected bytes after the payload");
  check_refused<ScalableBloomFilter>(blob.substr(0, blob.size() - 1), "truncated");
  check_refused<ScalableBloomFilter>(blob.substr(0, 10), "truncated");
  check_refused<ScalableBloomFilter>("", "truncated");

  // A payload of a big-endian writer is not an envelope payload.
  std::string payload = blob.substr(envelope::kHeaderBytes);
  payload[0] = 0;
  check_refused<ScalableBloomFilter>(envelope_of(payload, 1), "little-endian");
}

TEST_CASE("payload checks name what is wrong", "[serialization]") {
  using F = ScalableBloomFilter;
  const F f = small_filter();
  const RawFilter good = raw_of(f);
  REQUIRE(good.slices.size() >= 2);
  REQUIRE(from_bytes<F>(blob_of<F>(good)) == f);

  RawFilter r = good;
  r.archive_version = 2;
  check_refused<F>(blob_of<F>(r), "archive version 2 is newer");
  r.archive_version = 0;
  check_refused<F>(blob_of<F>(r), "archive version 0");

  r = good;
  r.kind = 3;  // the header says scalable, the payload LevelDB
  check_refused<F>(blob_of<F>(r), "not a segbloom::ScalableBloomFilter");

  r = good;
  r.rate = 1.5;
  check_refused<F>(blob_of<F>(r), "false_positive_rate");
  r = good;
  r.capacity = 0;
  check_refused<F>(blob_of<F>(r), "options out of range");
  r = good;
  r.growth = 40;
  check_refused<F>(blob_of<F>(r), "growth");
  r = good;
  r.tightening = std::numeric_limits<double>::quiet_NaN();
  check_refused<F>(blob_of<F>(r), "tightening");
  r = good;
  r.max_slices = 65;
  check_refused<F>(blob_of<F>(r), "max_slices");

  r = good;
  r.count = 0;
  check_refused<F>(blob_of<F>(r), "0 slices stored");
  r = good;
  r.count = 65;
  check_refused<F>(blob_of<F>(r), "65 slices stored; the options allow 1 to 64");
  r = good;
  r.rotations = 3;  // a growing filter never rotates
  check_refused<F>(blob_of<F>(r), "cannot have rotated");

  r = good;
  r.slices[1].probes = 0;
  check_refused<F>(blob_of<F>(r), "slice 1: probe count 0 outside [1, 255]");
  r = good;
  r.slices[0].cells += 32;
  check_refused<F>(blob_of<F>(r), "not a positive multiple of 64");
  r = good;
  r.slices[0].cells = 0;
  check_refused<F>(blob_of<F>(r), "not a positive multiple of 64");

  // A bit array shorter or longer than its declared size.
  r = good;
  r.slices.back().words.pop_back();
  check_refused<F>(blob_of<F>(r), "truncated");
  r = good;
  r.slices.back().words.push_back(0);
  check_refused<F>(blob_of<F>(r), "8 unexpected bytes after the last slice");
  r = good;
  r.slices[0].cells += 64;  // declares one word more than it holds: the next fields shift
  check_refused<F>(blob_of<F>(r), "segbloom: ");

  // More slices declared than present.
  r = good;
  r.count = good.count + 1;
  check_refused<F>(blob_of<F>(r), "truncated");

  // LevelDB's format holds at most 30 probes.
  LevelDbCompatibleFilter l(golden_options(50, 0.01, 0, 0));
  RawFilter lr = raw_of(l);
  lr.slices[0].probes = 31;
  check_refused<LevelDbCompatibleFilter>(blob_of<LevelDbCompatibleFilter>(lr), "probe count 31 outside [1, 30]");

  // Window options with more slices than the window.
  const F w = small_filter(3);
  REQUIRE(w.slice_count() == 3);
  r = raw_of(w);
  r.max_slices = 2;
  r.rotations = 0;
  check_refused<F>(blob_of<F>(r), "3 slices stored; the options allow 1 to 2");
}

TEST_CASE("each slice's probing is stored, checked, and double hashing where a blob has none",
          "[serialization][floor]") {
  using F = ScalableBloomFilter;
  // 25-item slices at 2.5e-4: triple hashing (sizing.hpp).
  const Options o = golden_options(100, 0.001, 4, 21);
  F f(o);
  for (std::uint64_t i = 0; i < 60; ++i) f.insert(present_key(i, 21));
  REQUIRE(f.slice_count() >= 2);
  const RawFilter good = raw_of(f);
  REQUIRE((good.layout & 0x40) != 0);
  for (const RawSlice& s : good.slices) REQUIRE(s.probing == 1);
  REQUIRE(blob_of<F>(good) == to_bytes(f));
  REQUIRE(from_bytes<F>(blob_of<F>(good)) == f);

  RawFilter r = good;
  r.slices[1].probing = 2;
  check_refused<F>(blob_of<F>(r), "slice 1: probing 2 unknown");
  r = good;
  for (RawSlice& s : r.slices) s.probing = 0;  // flagged, yet no slice needs the byte
  check_refused<F>(blob_of<F>(r), "flags probing bytes, but no slice probes by triple hashing");

  // Triple hashing only in classic slices of the XXH3 digest.
  F blocked(golden_options(64, 0.01, 0, 9, Layout::blocked));
  blocked.insert(std::uint64_t{1});
  r = raw_of(blocked);
  r.layout |= 0x40;
  r.slices[0].probing = 1;
  check_refused<F>(blob_of<F>(r), "triple hashing stored in a blocked slice");
  LevelDbCompatibleFilter leveldb(o);
  RawFilter lr = raw_of(leveldb);
  REQUIRE((lr.layout & 0x40) == 0);  // LevelDB's own probing, whatever the size
  lr.layout |= 0x40;
  lr.slices[0].probing = 1;
  check_refused<LevelDbCompatibleFilter>(blob_of<LevelDbCompatibleFilter>(lr), "without the XXH3 digest");

  // Triple hashing where the options plan double hashing: the filter never writes it, and
  // every key stored by double hashing would read as absent (loaded until 3 Dec 2026).
  F plain(golden_options(1000, 0.01, 0, 9));
  for (std::uint64_t i = 0; i < 500; ++i) plain.insert(present_key(i));
  REQUIRE(plain.slices()[0].shape().probing == Probing::scheme);
  r = raw_of(plain);
  r.layout |= 0x40;
  r.slices[0].probing = 1;
  check_refused<F>(blob_of<F>(r), "slice 0: probing 1 (triple hashing) stored; its options plan double hashing");

  // A blob written before triple hashing has no probing byte: its slices probe by double
  // hashing, as they did, and keep the size they had (capacity_bits), which the loaders
  // take though today's plan differs: by nothing at 25 items at 2.5e-4, by two words at 10
  // items at 10^-8 (triple hashing's room for the last insert). New slices after it probe
  // by triple hashing.
  for (const Options& opts : {o, golden_options(10, 1e-8, 0, 22)}) {
    const SliceShape planned = F::planned_shape(opts, 0);
    INFO("capacity " << opts.capacity << ": planned " << planned.bits << " bits");
    REQUIRE(planned.probing == Probing::triple_hashing);
    REQUIRE((planned.bits == capacity_bits(planned.capacity, planned.probes)) == (opts.capacity == 100));
    F older = test::with_double_hashing_first_slice<F>(opts);
    const std::uint64_t first = older.slices()[0].shape().capacity;
    for (std::uint64_t i = 0; i < first; ++i) older.insert(present_key(i, 22));
    REQUIRE(older.slice_count() == 1);
    REQUIRE(older.slices()[0].shape().bits == capacity_bits(first, planned.probes));
    const std::string older_blob = to_bytes(older);
    REQUIRE((raw_of(older).layout & 0x40) == 0);
    F loaded = from_bytes<F>(older_blob);
    CHECK(loaded == older);
    CHECK(loaded.slices()[0].shape().probing == Probing::scheme);
    const FilterView view(older_blob);
    std::uint64_t missing = 0;
    for (std::uint64_t i = 0; i < first; ++i) {
      missing += !loaded.contains(present_key(i, 22));
      missing += !view.contains(present_key(i, 22));
    }
    CHECK(missing == 0);
    for (std::uint64_t i = first; i < 4 * first + 20; ++i) loaded.insert(present_key(i, 22));
    REQUIRE(loaded.slice_count() >= 2);
    CHECK(loaded.slices()[0].shape().probing == Probing::scheme);
    CHECK(loaded.slices().back().shape().probing == Probing::triple_hashing);
    CHECK(from_bytes<F>(to_bytes(loaded)) == loaded);
  }
}

TEST_CASE("slices below 2^-255 close early, stay within their share and round-trip", "[serialization][floor]") {
  // 255 probes leave about 2^-255 at half fill: these slices close at p_i^(1/255) instead.
  using F = ScalableBloomFilter;
  for (const double rate : {1e-100, 1e-300}) {
    F f(golden_options(50, rate, 0, 23));
    for (std::uint64_t i = 0; i < 400; ++i) f.insert(present_key(i, 23));
    INFO("p " << rate << ", " << f.slice_count() << " slices");
    REQUIRE(f.slice_count() >= 3);
    std::uint64_t missing = 0;
    for (std::uint64_t i = 0; i < 400; ++i) missing += !f.contains(present_key(i, 23));
    CHECK(missing == 0);
    for (const SliceStats& s : f.stats().slices) {
      INFO("slice rate " << s.false_positive_rate << ", k " << s.probes << ", fill " << s.fill_ratio);
      CHECK(s.probes == 255);
      CHECK(s.fill_ratio < 0.5);
      CHECK(std::pow(s.fill_ratio, s.probes) <= s.false_positive_rate);
    }
    CHECK(f.estimated_false_positive_rate() <= rate);
    const std::string blob = to_bytes(f);
    CHECK(from_bytes<F>(blob) == f);
    CHECK(FilterView(blob).contains(present_key(399, 23)));
  }
}

TEST_CASE("a blob declaring a 1 TiB bit array is refused without allocating it", "[serialization]") {
  using F = ScalableBloomFilter;
  // Options whose first slice really is 1 TiB, so that only its size gives it away.
  const Options o = golden_options(678'000'000'000, 0.01, 0, 0);
  const SliceShape shape = F::planned_shape(o, 0);
  REQUIRE(shape.bits / 8 >= (std::uint64_t{1} << 40));
  REQUIRE(shape.bits / 8 < (std::uint64_t{1} << 40) + (std::uint64_t{1} << 36));
  RawFilter r;
  r.kind = FilterKind<F>::id;
  r.capacity = o.capacity;
  r.rate = o.false_positive_rate;
  r.growth = o.growth;
  r.tightening = o.tightening;
  r.count = 1;
  r.slices.push_back({shape.bits, shape.probes, 0, 0, {}});  // declared, none of it present
  const std::string blob = blob_of<F>(r);
  check_refused<F>(blob, "LoadLimits::max_bytes is 268435456");

  // Even when the caller allows it, the blob does not hold it: refused from its length.
  LoadLimits generous;
  generous.max_bytes = std::uint64_t{4} << 40;
  check_refused<F>(blob, "truncated: declares " + std::to_string(shape.bits / 8) +
                             " bytes of cells, 0 bytes left",
                   generous);

  // A bare Cereal archive has no length to check against: the cells are read in bounded
  // chunks, so the load fails at the end of the stream after at most one chunk.
  std::istringstream stream(r.payload());
  WithLoadLimits<cereal::PortableBinaryInputArchive> ar(generous, stream);
  F loaded;
  CHECK_FORMAT_ERROR(ar(loaded), "truncated or malformed");
  std::istringstream plain(r.payload());
  cereal::PortableBinaryInputArchive ar2(plain);
  CHECK_FORMAT_ERROR(ar2(loaded), "LoadLimits::max_bytes");
  CHECK(loaded == F());  // unchanged by the failed loads

  // The stream reader refuses the declared payload length before reading it.
  std::string header = blob.substr(0, envelope::kHeaderBytes);
  for (int i = 0; i < 8; ++i) header[6 + i] = static_cast<char>(i == 5 ? 1 : 0);  // 2^40 bytes
  std::istringstream in(header);
  CHECK_FORMAT_ERROR(from_stream<F>(in), "above LoadLimits::max_bytes");
  std::istringstream in2(header);
  CHECK_FORMAT_ERROR(from_stream<F>(in2, generous), "truncated: the stream ended");
}

TEST_CASE("from_stream refuses a short stream with FormatError when the stream throws too",
          "[serialization]") {
  // A stream with exceptions() on threw std::ios_base::failure at the short read, past the
  // documented FormatError (until 2 Dec 2026).
  using F = ScalableBloomFilter;
  const F f = small_filter();
  const std::string blob = to_bytes(f);
  for (const std::size_t length : {std::size_t{0}, std::size_t{10}, envelope::kHeaderBytes, blob.size() - 1}) {
    INFO("length " << length);
    std::istringstream in(blob.substr(0, length));
    in.exceptions(std::ios::failbit | std::ios::badbit);
    CHECK_THROWS_AS(from_stream<F>(in), FormatError);
  }
  std::istringstream whole(blob);
  whole.exceptions(std::ios::failbit | std::ios::badbit);
  CHECK(from_stream<F>(whole) == f);
}

TEST_CASE("JSON archives are checked as well", "[serialization]") {
  using F = ScalableBloomFilter;
  const F f = small_filter();
  std::stringstream out;
  {
    cereal::JSONOutputArchive ar(out);
    ar(cereal::make_nvp("filter", f));
  }
  const std::string json = out.str();
  const auto load = [](const std::string& text) {
    std::istringstream in(text);
    cereal::JSONInputArchive ar(in);
    F loaded;
    ar(cereal::make_nvp("filter", loaded));
    return loaded;
  };
  REQUIRE(load(json) == f);

  // Replaces what follows the first `field` up to the next ',' or '\n'.
  const auto replace_after = [&json](const std::string& field, const std::string& value) {
    return test::replace_after(json, field, value);
  };

  // One cell word fewer than the declared size: drop the first word and its comma.
  std::string shorter = json;
  const std::size_t open = shorter.find("\"words\": [");
  REQUIRE(open != std::string::npos);
  const std::size_t first = shorter.find_first_of("0123456789", open + 10);
  shorter.erase(first, shorter.find(',', first) + 1 - first);
  CHECK_FORMAT_ERROR(load(shorter), "cell words stored, its size needs");

  CHECK_FORMAT_ERROR(load(replace_after("\"probes\": ", "300")), "probes out of range");
  CHECK_THROWS_AS(load(replace_after("\"seed\": ", "\"x\"")), FormatError);
}

TEST_CASE("golden blobs load and answer as when they were written", "[serialization]") {
  for (const GoldenSpec& spec : test::golden_specs()) {
    DYNAMIC_SECTION(spec.file) {
      const std::string blob = read_file(std::string(data_dir()) + "/" + spec.file);
      visit_kind(FilterKinds{}, spec.kind, [&]<class F>() {
        const F loaded = from_bytes<F>(blob);
        const F rebuilt = test::build_golden<F>(spec);
        CHECK(loaded == rebuilt);
        CHECK(to_bytes(loaded) == blob);  // saving again gives the same bytes
        std::uint64_t missing = 0;
        for (std::uint64_t i = 0; i < spec.inserts; ++i) {
          if (spec.guaranteed(i)) missing += !loaded.contains(present_key(i, spec.salt));
        }
        CHECK(missing == 0);
        check_view(FilterView(blob), loaded, spec);
      });
    }
  }
}

TEST_CASE("golden blobs written before the pattern floor still load and answer", "[serialization]") {
  // Their slices were planned without it (support/golden_specs.hpp, kLegacyGoldenDir): the
  // loaders take them as they are, every key is found, and saving gives the same bytes.
  std::size_t legacy = 0;
  for (const GoldenSpec& spec : test::golden_specs()) {
    const std::string path = std::string(data_dir()) + "/" + test::kLegacyGoldenDir + "/" + spec.file;
    if (!std::ifstream(path).good()) continue;
    ++legacy;
    DYNAMIC_SECTION(spec.file) {
      const std::string blob = read_file(path);
      visit_kind(FilterKinds{}, spec.kind, [&]<class F>() {
        const F loaded = from_bytes<F>(blob);
        CHECK_FALSE(loaded == test::build_golden<F>(spec));  // today's sizing plans it otherwise
        CHECK(to_bytes(loaded) == blob);
        std::uint64_t missing = 0;
        for (std::uint64_t i = 0; i < spec.inserts; ++i) {
          if (spec.guaranteed(i)) missing += !loaded.contains(present_key(i, spec.salt));
        }
        CHECK(missing == 0);
        check_view(FilterView(blob), loaded, spec);
      });
    }
  }
  CHECK(legacy == 6);
}

// Every truncation and every single-bit flip of every golden blob: refused with
// FormatError, or (a flip the checks cannot see) a valid filter holding every key.
// Never a crash, never another exception.
TEST_CASE("golden blobs: every truncation and every bit flip is refused", "[serialization]") {
  for (const GoldenSpec& spec : test::golden_specs()) {
    DYNAMIC_SECTION(spec.file) {
      const std::string blob = read_file(std::string(data_dir()) + "/" + spec.file);
      visit_kind(FilterKinds{}, spec.kind, [&]<class F>() {
        for (std::size_t n = 0; n < blob.size(); ++n) {
          const std::string_view cut(blob.data(), n);
          REQUIRE_THROWS_AS(from_bytes<F>(cut), FormatError);
          REQUIRE_THROWS_AS(FilterView(cut), FormatError);
        }
        std::uint64_t refused = 0;
        std::uint64_t accepted_valid = 0;
        test::for_each_bit_flip(blob, [&](const std::string& flipped) {
          try {
            const F loaded = from_bytes<F>(flipped);
            std::uint64_t missing = 0;
            for (std::uint64_t i = 0; i < spec.inserts; ++i) {
              if (spec.guaranteed(i)) missing += !loaded.contains(present_key(i, spec.salt));
            }
            REQUIRE(missing == 0);
            ++accepted_valid;
          } catch (const FormatError&) {
            ++refused;
          }
          REQUIRE_THROWS_AS(FilterView(flipped), FormatError);
        });
        CHECK(refused == blob.size() * 8);  // the checksum sees every flip of these blobs
        CHECK(accepted_valid == 0);
      });
    }
  }
}

// Flips the checksum cannot see (it is recomputed): from_bytes and FilterView must agree
// on every blob, refusing the same ones and answering the same for the rest.
TEST_CASE("loader and view agree on damaged payloads with valid checksums", "[serialization]") {
  for (const GoldenSpec& spec : test::golden_specs()) {
    DYNAMIC_SECTION(spec.file) {
      const std::string blob = read_file(std::string(data_dir()) + "/" + spec.file);
      visit_kind(FilterKinds{}, spec.kind, [&]<class F>() {
        std::uint64_t both_refused = 0;
        std::uint64_t both_loaded = 0;
        for (std::size_t byte = envelope::kHeaderBytes; byte < blob.size();
             byte += byte < 140 ? 1 : 13) {
          for (int bit = 0; bit < 8; ++bit) {
            std::string damaged = blob;
            damaged[byte] = static_cast<char>(damaged[byte] ^ (1 << bit));
            envelope::seal(damaged, FilterKind<F>::id);
            bool loaded_ok = false;
            bool view_ok = false;
            std::optional<F> loaded;
            std::string refusal;
            try {
              loaded.emplace(from_bytes<F>(damaged));
              loaded_ok = true;
            } catch (const FormatError& e) {
              refusal = e.what();
            }
            try {
              const FilterView view(damaged);
              view_ok = true;
              if (loaded_ok) {
                std::uint64_t mismatches = 0;
                for (std::uint64_t i = 0; i < 200; ++i) {
                  mismatches += view.contains(present_key(i, spec.salt)) != loaded->contains(present_key(i, spec.salt));
                  mismatches += view.contains(absent_key(i, spec.salt)) != loaded->contains(absent_key(i, spec.salt));
                }
                REQUIRE(mismatches == 0);
                REQUIRE(view.size() == loaded->size());
              }
            } catch (const FormatError&) {
            }
            INFO("byte " << byte << " bit " << bit << ": " << refusal);
            // The one check the view skips (no pass over the cells): items below set / k.
            const bool items_only = !loaded_ok && view_ok && refusal.find(kFewerItemsThanCells) != std::string::npos;
            REQUIRE((loaded_ok == view_ok || items_only));
            if (items_only) continue;
            (loaded_ok ? both_loaded : both_refused) += 1;
          }
        }
        CHECK(both_refused > 0);
        CHECK(both_loaded > 0);
      });
    }
  }
}

// The blocked layout needs the 128-bit digest: a LevelDB-format blob that claims it is refused
// by the loader and the view alike, even when its slices' rates lie below the blocked floor
// (their shapes then classic, which the view's shape check alone let through until 1 Dec 2026).
TEST_CASE("a LevelDB-format blob claiming the blocked layout is refused by loader and view",
          "[serialization]") {
  Options o;
  o.capacity = 64;
  o.false_positive_rate = 1e-6;
  o.max_slices = 8;  // p / W = 1.25e-7: under the blocked floor
  LevelDbCompatibleFilter f(o);
  for (std::uint64_t i = 0; i < 20; ++i) f.insert(present_key(i));
  RawFilter r = raw_of(f);
  const std::string good = blob_of<LevelDbCompatibleFilter>(r);
  CHECK(from_bytes<LevelDbCompatibleFilter>(good).contains(present_key(3)));
  CHECK(FilterView(good).contains(present_key(3)));
  r.layout = static_cast<std::uint64_t>(Layout::blocked);
  check_refused<LevelDbCompatibleFilter>(blob_of<LevelDbCompatibleFilter>(r), "layout = blocked");
}

// Item counts have no upper bound from the cells (a counting slice counts repeats, a merge
// sums), but above 2^56 a slice they are refused: two of 2^63 wrapped size() to 279.
TEST_CASE("a slice stored with more than 2^56 items is refused by loader and view", "[serialization]") {
  ScalableBloomFilter f(golden_options(20, 0.01, 0, 9));
  for (std::uint64_t i = 0; i < 100; ++i) f.insert(present_key(i));
  REQUIRE(f.slice_count() >= 2);
  RawFilter r = raw_of(f);
  r.slices[0].items = detail::kMaxStoredItems;
  r.slices[1].items = detail::kMaxStoredItems;
  const ScalableBloomFilter most = from_bytes<ScalableBloomFilter>(blob_of<ScalableBloomFilter>(r));
  CHECK(most.size() >= 2 * detail::kMaxStoredItems);
  CHECK(FilterView(blob_of<ScalableBloomFilter>(r)).size() == most.size());
  r.slices[1].items = detail::kMaxStoredItems + 1;
  check_refused<ScalableBloomFilter>(blob_of<ScalableBloomFilter>(r), "slice 1: 72057594037927937 items stored");
  r.slices[1].items = ~std::uint64_t{0};
  check_refused<ScalableBloomFilter>(blob_of<ScalableBloomFilter>(r), "items stored; at most 2^56");
}

// Each counted insert sets at most k cells, so a bit slice holds at least set / k items
// (a merge sums the counts, so there is no upper bound). Fewer: refused by the loaders (a
// blob counting 0 items over thousands of set bits loaded until 3 Dec 2026); FilterView,
// which makes no pass over the cells, takes it. Counting slices are exempt: a remove
// uncounts a key whose saturated counters stay set.
TEST_CASE("a bit slice counting fewer items than its set cells need is refused", "[serialization]") {
  using F = ScalableBloomFilter;
  const F f = small_filter();
  RawFilter r = raw_of(f);
  const auto& s0 = f.slices()[0];
  const std::uint64_t set = s0.cells().set_count();
  const unsigned k = s0.shape().probes;
  const std::uint64_t fewest = (set + k - 1) / k;
  REQUIRE(s0.items() >= fewest);
  r.slices[0].items = fewest;
  CHECK(from_bytes<F>(blob_of<F>(r)).slices()[0].items() == fewest);
  r.slices[0].items = fewest - 1;
  const std::string expected = "slice 0: " + std::to_string(fewest - 1) + " items stored with " +
                               std::to_string(set) + " cells set; each insert sets at most " + std::to_string(k);
  CHECK_FORMAT_ERROR(from_bytes<F>(blob_of<F>(r)), expected);
  std::stringstream bare(r.payload());
  F target;
  {
    cereal::PortableBinaryInputArchive ar(bare);
    CHECK_THROWS_WITH(ar(target), Catch::Contains(kFewerItemsThanCells));
  }
  CHECK(FilterView(blob_of<F>(r)).size() == f.size() - s0.items() + fewest - 1);
  r.slices[0].items = 0;
  CHECK_FORMAT_ERROR(from_bytes<F>(blob_of<F>(r)), "slice 0: 0 items stored");
  // Merges sum the counts: above the set cells is fine.
  r.slices[0].items = set * 4;
  CHECK(from_bytes<F>(blob_of<F>(r)).slices()[0].items() == set * 4);

  LevelDbCompatibleFilter l(golden_options(50, 0.01, 0, 0));
  for (std::uint64_t i = 0; i < 30; ++i) l.insert(present_key(i));
  RawFilter lr = raw_of(l);
  lr.slices[0].items = 0;
  CHECK_FORMAT_ERROR(from_bytes<LevelDbCompatibleFilter>(blob_of<LevelDbCompatibleFilter>(lr)), kFewerItemsThanCells);

  // A counting filter's removes may leave cells set (saturated counters stay at 15): its
  // blob loads, and its plain copy counts what its bits need.
  CountingBloomFilter c(golden_options(1000, 0.01, 0, 5));
  for (int i = 0; i < 20; ++i) c.insert(present_key(1));
  for (int i = 0; i < 20; ++i) c.remove(present_key(1));
  REQUIRE(c.size() == 0);
  REQUIRE(c.contains(present_key(1)));
  CHECK(from_bytes<CountingBloomFilter>(to_bytes(c)) == c);
  const F plain = c.to_plain();
  CHECK(plain.slices()[0].items() == 1);
  CHECK(from_bytes<F>(to_bytes(plain)) == plain);
}

// A blocked slice has at most 48 probes (48 salts); the loaders accept a stored k one
// above the planned one, so a slice planned at 48 stored with 49 was accepted by both until
// 2 Dec 2026 (its 49th probe read a zero pad salt: always bit 0 of the block).
TEST_CASE("a blocked slice stored with more than 48 probes is refused by loader and view",
          "[serialization][blocked]") {
  Options o = golden_options(500, 2.6e-7, 1, 3);  // one slice at 2.6e-7: blocked, k 48
  o.layout = Layout::blocked;
  ScalableBloomFilter f(o);
  REQUIRE(f.slices().front().shape().layout == Layout::blocked);
  REQUIRE(f.slices().front().shape().probes == kMaxBlockedProbes);
  for (std::uint64_t i = 0; i < 100; ++i) f.insert(present_key(i));
  RawFilter r = raw_of(f);
  CHECK(from_bytes<ScalableBloomFilter>(blob_of<ScalableBloomFilter>(r)) == f);
  r.slices.front().probes = 47;  // within the tolerance: loads
  CHECK(from_bytes<ScalableBloomFilter>(blob_of<ScalableBloomFilter>(r)).slices().front().shape().probes == 47);
  r.slices.front().probes = 49;
  check_refused<ScalableBloomFilter>(blob_of<ScalableBloomFilter>(r), "probe count 49 stored in a blocked slice");
  // from_parts refuses such a shape too.
  SliceShape shape = f.slices().front().shape();
  shape.probes = 49;
  std::vector<ScalableBloomFilter::slice_type> slices;
  CHECK_THROWS_AS(slices.emplace_back(shape), std::invalid_argument);  // no full point for k 49
}

// 2^64 - 1 (or anything within 4 KiB of it) as "no limit": the payload bound it implies
// once wrapped to under 4 KiB, refusing every larger blob.
TEST_CASE("LoadLimits::max_bytes near 2^64 does not wrap", "[serialization]") {
  ScalableBloomFilter f(golden_options(20'000, 0.01, 0, 3));
  for (std::uint64_t i = 0; i < 1000; ++i) f.insert(present_key(i));
  const std::string blob = to_bytes(f);
  REQUIRE(blob.size() > 4096 + envelope::kHeaderBytes);
  for (const std::uint64_t max : {~std::uint64_t{0}, ~std::uint64_t{0} - 4000}) {
    const LoadLimits unlimited{max};
    CHECK(from_bytes<ScalableBloomFilter>(blob, unlimited) == f);
    CHECK(FilterView(blob, unlimited).contains(present_key(7)));
    TransitionFilter<ScalableBloomFilter> pair(f);
    pair.change_options(golden_options(20'000, 0.001, 0, 3), std::chrono::hours(1));
    const std::string pair_blob = to_bytes(pair);
    CHECK(from_bytes<TransitionFilter<ScalableBloomFilter>>(pair_blob, unlimited).contains(present_key(7)));
    CHECK(TransitionView(pair_blob, unlimited).contains(present_key(7)));
  }
}

TEST_CASE("a failed Cereal load leaves the filter unchanged", "[serialization]") {
  const ScalableBloomFilter f = small_filter();
  std::stringstream stream;
  {
    cereal::PortableBinaryOutputArchive ar(stream);
    ar(f);
  }
  const std::string bytes = stream.str();
  ScalableBloomFilter target(golden_options(10, 0.1, 0, 5));
  target.insert(std::uint64_t{1});
  const ScalableBloomFilter before = target;
  std::istringstream cut(bytes.substr(0, bytes.size() - 3));
  cereal::PortableBinaryInputArchive ar(cut);
  CHECK_THROWS_AS(ar(target), FormatError);
  CHECK(target == before);
}

// Regressions found by the fuzz targets (tests/fuzz/).
TEST_CASE("fuzz regressions", "[serialization]") {
  using F = ScalableBloomFilter;
  // A payload that ends inside Cereal's class version field.
  check_refused<F>(envelope_of(std::string("\x01\x04n", 3), 1), "truncated");

  // Options announcing slices far larger than the stored one: loading it, then one
  // insert that opened the next slice, allocated what the options promised (ASan: out
  // of memory). Now refused: stored slices must have the shape their options give.
  RawFilter r = raw_of(small_filter());
  r.capacity = std::uint64_t{1} << 40;
  check_refused<F>(blob_of<F>(r), "slice 0: 384 cells and 9 probes stored; its options give 14276357872704 cells");
}
