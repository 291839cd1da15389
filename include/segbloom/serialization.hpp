// segbloom: filters to storage and back.
//
// Two ways, one layout:
//
//  1. Cereal. Every registered kind (filter_kinds.hpp) has save/load with a class version,
//     for Cereal's binary, portable binary and JSON archives:
//
//       std::ostringstream os;
//       { cereal::PortableBinaryOutputArchive ar(os); ar(filter); }
//       std::istringstream is(os.str());
//       segbloom::ScalableBloomFilter loaded;
//       { cereal::PortableBinaryInputArchive ar(is); ar(loaded); }
//
//     Loading checks everything it reads (see "Validation") and never trusts a size:
//     cell arrays are read in bounded chunks after their declared size passed the
//     limits, so a short archive cannot make it allocate what it merely declares. The
//     limits are LoadLimits{} unless the input archive is a WithLoadLimits<Archive>
//     (below). Archives carry no
//     checksum: use the envelope for storage. One failure is Cereal's own: an archive
//     that ends before the filter's class version, which Cereal reads before segbloom's
//     loader runs, throws cereal::Exception (every later one is a FormatError).
//
//  2. The envelope (envelope.hpp) for the common case, a key-value store:
//
//       std::string blob = segbloom::to_bytes(filter);
//       auto filter = segbloom::from_bytes<segbloom::ScalableBloomFilter>(blob);
//
//     magic, format version, kind, payload length and an XXH64 checksum around a
//     portable binary payload; from_bytes refuses any blob that is not exactly one
//     intact envelope of the requested kind. For the request path FilterView
//     (filter_view.hpp) answers lookups straight from the blob, without a copy.
//
// Archive layout, version 1 (portable binary; the envelope's payload). Integers and
// doubles little-endian, fields in this order:
//
//   size  field
//   1     endianness flag, 1 = little (written by Cereal)
//   4     class version (written by Cereal, once per archive)
//   1     kind id
//   8     Options::capacity
//   8     Options::false_positive_rate (IEEE-754 double)
//   1     Options::max_slices
//   1     Options::layout (0 classic, 1 blocked), plus 128 (bit 7) in a timed filter,
//         plus 64 (bit 6) when some slice probes by triple hashing
//   8     Options::growth
//   8     Options::tightening
//   8     Options::seed
//   8     timed only: Options::slice_lifetime, seconds
//   8     rotations
//   1     slice count S, then per slice, oldest first:
//   8       cells m_i (bits, or counters)
//   1       probes k_i
//   1       bit 6 only: probing (0 the scheme's, 1 triple hashing: SliceShape::probing)
//   8       items
//   1       timed only: sequence index i (SliceShape::index)
//   8       timed only: opened at (signed wall-clock seconds, in [0, 2^40])
//   m_i/c   cell words (c = cells per 64-bit word: 64 for bits, 16 for 4-bit counters),
//           8 bytes each
//
// Timed filters (Options::slice_lifetime > 0) extend version 1 without changing the
// bytes of any other filter: bit 7 of the layout byte says the time fields follow, and a
// reader that predates them refuses such a blob ("layout 128 unknown", 129 when blocked). Triple hashing
// (sizing.hpp: small classic slices at low rates, from 2 Dec 2026) extends it the same way
// with bit 6: a filter without such a slice keeps its bytes, and a reader that predates
// triple hashing, which would answer such a slice wrongly, refuses it ("layout 64 unknown").
//
// Overhead beyond the cell arrays: 22 (envelope header) + 57 + 17 per slice, at most
// 64 + 32 per slice for every filter, since a filter has at least one slice; a timed
// filter adds 8 + 9 per slice (within 64 + 32 per slice from 4 slices up). A slice's
// capacity n_i and rate p_i are not stored: they follow from the options by the formulas
// in Options/sizing.hpp (n_i = ceil(n g^i), p_i = p (1 - r) r^i; window: n / W, p / W).
// Its size m_i and probes k_i, which decide every answer, are stored and must be those
// the options give (slice_shape; within 1/16 and 1 probe, see stored_shape), so that
// stored options cannot announce slices far larger than the stored ones.
// JSON archives hold the same fields by name, slices as an array, words as numbers.
//
// Validation (every loader: Cereal load, from_bytes, FilterView), each a FormatError
// naming the problem, before anything of a declared size is allocated: another kind, a
// newer class version, options out of range, no slice or more slices than the options
// allow, rotations in a filter that never rotated, cells not a positive multiple of 64,
// k outside [1, the scheme's maximum], a probing byte unknown or triple hashing outside a
// classic XXH3 slice or where the options plan double hashing, bit 6 set with no
// triple-hashed slice, a slice whose size or k is not what its options
// give (within 1/16 and 1), a slice beyond the scheme's limits (LevelDB: k <= 30, 2^32 bits), a cell array larger
// than the bytes left in the blob or whose length disagrees with its declared size
// (JSON), a total of cell bytes above LoadLimits::max_bytes, truncation, bytes left over;
// in a timed filter also a lifetime of 0 or above 100 years, a sequence index above 63
// or repeated (growing mode), an open time outside [0, 2^40] or before the previous slice's.
// Cereal loads and from_bytes, not FilterView: a slice of bit cells counting fewer items
// than its set cells need (at least set / k: check_items_cover_cells).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/cereal.hpp>

#include "segbloom/envelope.hpp"
#include "segbloom/errors.hpp"
#include "segbloom/filter_kinds.hpp"
#include "segbloom/options.hpp"
#include "segbloom/sizing.hpp"

namespace segbloom {
namespace detail {

// Read-only std::streambuf over bytes that stay where they are; in_avail() is exact.
class MemoryInput : public std::streambuf {
 public:
  explicit MemoryInput(std::string_view bytes) {
    char* begin = const_cast<char*>(bytes.data());  // never written: get area only
    setg(begin, begin, begin + bytes.size());
  }
  std::uint64_t remaining() const noexcept { return static_cast<std::uint64_t>(egptr() - gptr()); }
};

// MemoryInput that hashes (XXH64) every byte read through sgetn, as Cereal reads: the
// envelope's checksum is verified in the same pass as the load.
class VerifyingInput : public MemoryInput {
 public:
  static constexpr std::size_t kStateBytes = 128;
  explicit VerifyingInput(std::string_view bytes);
  // Throws FormatError (checksum mismatch) unless the whole payload hashes to `checksum`;
  // reads it again only when it was not read to its end.
  void verify(std::uint64_t checksum) const;

 protected:
  std::streamsize xsgetn(char* out, std::streamsize n) override;

 private:
  std::string_view payload_;
  alignas(64) unsigned char state_[kStateBytes];
};

// std::streambuf appending to a std::string.
class StringOutput : public std::streambuf {
 public:
  explicit StringOutput(std::string& out) : out_(out) {}

 protected:
  std::streamsize xsputn(const char* data, std::streamsize n) override {
    out_.append(data, static_cast<std::size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) out_.push_back(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }

 private:
  std::string& out_;
};

// What a load may read: the caller's limits, and for envelopes the exact bytes left.
struct LoadContext {
  LoadLimits limits;
  const MemoryInput* source = nullptr;  // set when reading an envelope's payload
};

}  // namespace detail

// A Cereal input archive that carries LoadLimits for the filters loaded through it:
//   segbloom::WithLoadLimits<cereal::BinaryInputArchive> ar(limits, stream);
//   ar(filter);
// Plain archives load with LoadLimits{}.
template <class Archive>
class WithLoadLimits : public Archive {
 public:
  template <class... Args>
  explicit WithLoadLimits(const LoadLimits& limits, Args&&... args)
      : Archive(std::forward<Args>(args)...), context_{limits, nullptr} {}
  template <class... Args>
  explicit WithLoadLimits(const detail::LoadContext& context, Args&&... args)
      : Archive(std::forward<Args>(args)...), context_(context) {}

  const detail::LoadContext& load_context() const noexcept { return context_; }

 private:
  detail::LoadContext context_;
};

namespace detail {

template <class Archive>
LoadContext load_context(WithLoadLimits<Archive>& ar) {
  return ar.load_context();
}

template <class Archive>
LoadContext load_context(Archive& ar) {
  if (auto* with_limits = dynamic_cast<WithLoadLimits<Archive>*>(&ar)) {
    return with_limits->load_context();
  }
  return {};
}

template <class Archive>
inline constexpr bool kTextArchive = cereal::traits::is_text_archive<Archive>::value;

// The checks every loader makes (Cereal load and FilterView), in one place.
void check_kind(std::uint8_t stored, std::uint8_t expected);
void check_archive_version(std::uint32_t version);
void check_options(const Options& options);
Layout layout_of(std::uint8_t stored);
void check_slice_count(const Options& options, std::uint64_t count, std::uint64_t rotations);
// The stored layout byte: the layout, and its flags (kTimedFlag: a timed filter's fields
// follow; kProbingFlag: each slice's record holds its probing). Returns the layout.
Layout flagged_layout_of(std::uint8_t stored, bool& timed, bool& probing);
// A slice's stored probing byte (0 the scheme's, 1 triple hashing), for a slice whose
// options plan `planned` in a filter whose digest is or is not the 128-bit XXH3 one.
Probing probing_of(std::size_t index, std::uint8_t stored, const SliceShape& planned, bool xxh3_digest);
// A blob that flags the probing bytes must have a slice that needs one: its writer sets the
// flag only then, so each filter has one encoding.
void check_probing_used(bool flagged, bool used);
std::chrono::seconds lifetime_of(std::uint64_t stored);
// A timed slice's stored sequence index (< 64) and open time (in [0, 2^40], and not before
// `previous_opened_at`, the open time of the slice before it: ignored at position 0).
void check_timed_slice(std::size_t position, std::size_t index, std::int64_t opened_at, bool window,
                       std::int64_t previous_opened_at);
// Item counts above 2^56 a slice are refused: no slice takes so many inserts (the counting
// kind counts repeats too: 2^56 is 2 years of 10^9 a second), and 64 of them sum, and merge,
// without wrapping (size() of a blob with 2^63 twice read 279 until 2 Dec 2026).
inline constexpr std::uint64_t kMaxStoredItems = std::uint64_t{1} << 56;
void check_items(std::size_t position, std::uint64_t items);
// A slice of bit cells counts at least fewest_items(set_cells, probes): each counted insert
// sets at most k cells. Not for counters (a remove uncounts a key whose saturated counters
// stay set). FilterView skips it: it would need a pass over every cell array (filter_view.hpp).
void check_items_cover_cells(std::size_t position, std::uint64_t items, std::uint64_t set_cells,
                             unsigned probes);
// Cell bytes of a slice of `cells` cells; checks cells and probes and adds the bytes to
// `total`, refusing a total above limits.max_bytes or above `available` bytes left.
std::uint64_t check_cells(std::size_t index, std::uint64_t cells, std::uint64_t cells_per_word,
                          std::uint64_t& total, const LoadLimits& limits,
                          std::uint64_t available);

// The shape of stored slice `index` of a filter of kind F: capacity and rate as the
// options give them, size and probes as stored. Throws FormatError when the stored size
// or probe count are not (nearly) those the options give, or the options could not have
// opened that slice: a blob cannot pair small stored slices with options whose next
// slice would be huge.
template <class F>
SliceShape stored_shape(const Options& options, std::size_t index, std::uint64_t cells,
                        unsigned probes, std::uint8_t probing) {
  using Scheme = typename F::slice_type::scheme_type;
  const auto where = [index] { return "segbloom: slice " + std::to_string(index) + ": "; };
  if (probes < 1 || probes > Scheme::kMaxProbes) {
    throw FormatError(where() + "probe count " + std::to_string(probes) + " outside [1, " +
                      std::to_string(Scheme::kMaxProbes) + "]");
  }
  SliceShape shape;
  try {
    // The shape the filter itself gives slice `index` (its scheme's adjustments included).
    shape = F::planned_shape(options, static_cast<std::uint32_t>(index));
  } catch (const std::length_error& e) {
    throw FormatError(where() + "the options could not have opened it: " + e.what());
  }
  if (probing == static_cast<std::uint8_t>(Probing::scheme) && shape.probing == Probing::triple_hashing) {
    // Stored before triple hashing (2 Dec 2026), at the size double hashing got then.
    shape.bits = capacity_bits(shape.capacity, shape.probes);
  }
  // This version stores exactly the planned shape. The tolerance (size within 1/16 + one
  // word, k within 1) only absorbs a last-bit difference of another platform's libm in
  // the sizing search, or a sizing tweak of a later version; it still keeps stored
  // options from announcing slices far larger than the stored ones.
  const auto near = [cells](std::uint64_t planned) {
    const std::uint64_t slack = planned / 16 + 64;
    return cells + slack >= planned && cells <= planned + slack;
  };
  bool size_ok = near(shape.bits);
  if (!size_ok && shape.layout == Layout::blocked) {
    // Stored before 2 Dec 2026, sized to close at half full: a slice that now closes earlier
    // can be a block or more larger (blocked_full_cells), beyond the tolerance when small.
    size_ok = near(blocked_capacity_bits(shape.capacity, shape.probes));
  }
  const bool probes_ok = probes + 1 >= shape.probes && probes <= shape.probes + 1;
  if (!size_ok || !probes_ok) {
    throw FormatError(where() + std::to_string(cells) + " cells and " + std::to_string(probes) +
                      " probes stored; its options give " + std::to_string(shape.bits) +
                      " cells and " + std::to_string(shape.probes) + " probes");
  }
  if (shape.layout == Layout::blocked && probes > kMaxBlockedProbes) {  // planned 48, stored 49
    throw FormatError(where() + "probe count " + std::to_string(probes) + " stored in a blocked slice; " +
                      "allowed: [1, " + std::to_string(kMaxBlockedProbes) + "]");
  }
  if (shape.layout == Layout::blocked && cells % kBlockBits != 0) {
    throw FormatError(where() + std::to_string(cells) + " cells stored in a blocked slice: not " +
                      "whole blocks of " + std::to_string(kBlockBits));
  }
  shape.bits = cells;  // the stored shape decides every answer
  shape.probes = probes;
  // As stored, not as planned: a slice stored before triple hashing (1 Dec 2026 and before)
  // keeps double hashing, and its answers.
  shape.probing = probing_of(index, probing, shape, F::slice_type::kBlockable);
  if constexpr (requires { Scheme::check_shape(shape); }) {
    try {
      Scheme::check_shape(shape);
    } catch (const std::length_error& e) {
      throw FormatError(where() + e.what());
    }
  }
  return shape;
}

// Small fields are one byte in binary archives; JSON reads them wider and range-checks.
template <class Archive>
std::uint8_t load_byte(Archive& ar, const char* name) {
  if constexpr (kTextArchive<Archive>) {
    std::uint32_t value = 0;
    ar(cereal::make_nvp(name, value));
    if (value > 255) throw FormatError(std::string("segbloom: field ") + name + " out of range");
    return static_cast<std::uint8_t>(value);
  } else {
    std::uint8_t value = 0;
    ar(cereal::make_nvp(name, value));
    return value;
  }
}

// Bit 7 of the stored layout byte: the time fields of a timed filter follow. Bit 6: every
// slice's record holds its probing byte (set when some slice probes by triple hashing).
inline constexpr std::uint8_t kTimedFlag = 0x80;
inline constexpr std::uint8_t kProbingFlag = 0x40;

// One slice's stored record: size, probes, (flagged) probing, items, (timed) index and open
// time, cell words.
template <class Slice>
struct SliceOut {
  const Slice& slice;
  bool timed;
  bool probing;
};

template <class Archive, class Slice>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const SliceOut<Slice>& out) {
  const SliceShape& shape = out.slice.shape();
  const std::span<const std::uint64_t> words = out.slice.cells().words();
  ar(cereal::make_nvp("cells", shape.bits), cereal::make_nvp("probes", static_cast<std::uint8_t>(shape.probes)));
  if (out.probing) ar(cereal::make_nvp("probing", static_cast<std::uint8_t>(shape.probing)));
  ar(cereal::make_nvp("items", out.slice.items()));
  if (out.timed) {
    ar(cereal::make_nvp("index", static_cast<std::uint8_t>(shape.index)),
       cereal::make_nvp("opened_at", static_cast<std::int64_t>(out.slice.opened_at())));
  }
  if constexpr (kTextArchive<Archive>) {
    struct Words {
      std::span<const std::uint64_t> words;
      void save(Archive& a) const {
        a(cereal::make_size_tag(static_cast<cereal::size_type>(words.size())));
        for (const std::uint64_t w : words) a(w);
      }
    };
    ar(cereal::make_nvp("words", Words{words}));
  } else {
    ar(cereal::binary_data(words.data(), words.size() * sizeof(std::uint64_t)));
  }
}

template <class F>
struct SlicesOut {
  const F& filter;
};

// Whether some slice of the filter probes by triple hashing (its blob then flags
// kProbingFlag and stores every slice's probing).
template <class F>
bool any_triple_hashing(const F& filter) {
  for (const auto& slice : filter.slices()) {
    if (slice.shape().probing != Probing::scheme) return true;
  }
  return false;
}

template <class Archive, class F>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const SlicesOut<F>& out) {
  const auto& slices = out.filter.slices();
  if constexpr (kTextArchive<Archive>) {
    ar(cereal::make_size_tag(static_cast<cereal::size_type>(slices.size())));
  } else {
    ar(static_cast<std::uint8_t>(slices.size()));
  }
  const bool timed = out.filter.options().slice_lifetime.count() > 0;
  const bool probing = any_triple_hashing(out.filter);
  for (const auto& slice : slices) ar(SliceOut<std::decay_t<decltype(slice)>>{slice, timed, probing});
}

// Reads stored slices after checking each declared size (see the top of this file).
template <class F>
struct SlicesIn {
  using slice_type = typename F::slice_type;
  using Cells = typename slice_type::cells_type;

  const Options& options;
  std::uint64_t rotations;
  bool probing;  // the records hold a probing byte (kProbingFlag)
  LoadContext context;
  std::vector<slice_type>& slices;
  std::uint64_t total_bytes = 0;

  template <class Archive>
  void load(Archive& ar) {
    std::uint64_t count = 0;
    if constexpr (kTextArchive<Archive>) {
      cereal::size_type size = 0;
      ar(cereal::make_size_tag(size));
      count = size;
    } else {
      std::uint8_t size = 0;
      ar(size);
      count = size;
    }
    check_slice_count(options, count, rotations);
    slices.reserve(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < count; ++i) {
      struct Record {
        SlicesIn* in;
        std::size_t index;
        void load(Archive& a) { in->load_slice(a, index); }
      };
      ar(Record{this, i});
    }
    check_probing_used(probing, std::any_of(slices.begin(), slices.end(), [](const slice_type& s) {
                         return s.shape().probing != Probing::scheme;
                       }));
  }

  template <class Archive>
  void load_slice(Archive& ar, std::size_t index) {
    std::uint64_t cells = 0;
    std::uint64_t items = 0;
    ar(cereal::make_nvp("cells", cells));
    const std::uint8_t probes = load_byte(ar, "probes");
    const std::uint8_t probing_byte = probing ? load_byte(ar, "probing") : 0;
    ar(cereal::make_nvp("items", items));
    check_items(index, items);
    std::size_t planned = index;  // the sequence index: the position, unless stored
    std::int64_t opened_at = 0;
    if (options.slice_lifetime.count() > 0) {
      planned = load_byte(ar, "index");
      ar(cereal::make_nvp("opened_at", opened_at));
      check_timed_slice(index, planned, opened_at, options.max_slices != 0,
                        index > 0 ? slices.back().opened_at() : 0);
    }
    const std::uint64_t available = context.source ? context.source->remaining() : UINT64_MAX;
    const std::uint64_t bytes = check_cells(index, cells, CellsLayout<Cells>::kCellsPerWord,
                                            total_bytes, context.limits, available);
    const SliceShape shape = stored_shape<F>(options, planned, cells, probes, probing_byte);
    const std::size_t count = static_cast<std::size_t>(bytes / sizeof(std::uint64_t));
    if constexpr (!kTextArchive<Archive>) {
      if (context.source != nullptr) {
        // The bytes are present (check_cells): read them straight into the cell array.
        slices.emplace_back(shape,
                            Cells::from_chunks(count,
                                               [&ar](std::span<std::uint64_t> chunk, std::size_t) {
                                                 ar(cereal::binary_data(chunk.data(), chunk.size_bytes()));
                                               }),
                            items, opened_at);
        check_filled(index);
        return;
      }
    }
    std::vector<std::uint64_t> words;
    if constexpr (kTextArchive<Archive>) {
      struct Words {
        std::vector<std::uint64_t>& words;
        std::size_t expected;
        std::size_t index;
        void load(Archive& a) {
          cereal::size_type n = 0;
          a(cereal::make_size_tag(n));  // the number of elements the text really holds
          if (n != expected) {
            throw FormatError("segbloom: slice " + std::to_string(index) + ": " +
                              std::to_string(n) + " cell words stored, its size needs " +
                              std::to_string(expected));
          }
          words.resize(expected);
          for (auto& w : words) a(w);
        }
      };
      ar(cereal::make_nvp("words", Words{words, count, index}));
    } else {
      // Unknown length: read in 1 MiB chunks, so a short archive costs what it holds.
      constexpr std::size_t kChunk = std::size_t{1} << 17;
      for (std::size_t done = 0; done < count;) {
        const std::size_t n = std::min(kChunk, count - done);
        words.resize(done + n);
        ar(cereal::binary_data(words.data() + done, n * sizeof(std::uint64_t)));
        done += n;
      }
    }
    slices.emplace_back(shape, Cells::from_words(words), items, opened_at);
    check_filled(index);
  }

  // The item count against the set cells, which loading the cells counted (BitCells).
  void check_filled(std::size_t index) const {
    if constexpr (std::is_same_v<Cells, BitCells>) {
      const slice_type& s = slices.back();
      check_items_cover_cells(index, s.items(), s.cells().set_count(), s.shape().probes);
    }
  }
};

}  // namespace detail

// Cereal: saves a filter of any registered kind (layout at the top of this file).
template <class Archive, SerializableFilter F>
void CEREAL_SAVE_FUNCTION_NAME(Archive& ar, const F& filter, std::uint32_t /*version*/) {
  const Options& o = filter.options();
  const bool timed = o.slice_lifetime.count() > 0;
  const auto layout = static_cast<std::uint8_t>(static_cast<std::uint8_t>(o.layout) |
                                                (timed ? detail::kTimedFlag : 0) |
                                                (detail::any_triple_hashing(filter) ? detail::kProbingFlag : 0));
  ar(cereal::make_nvp("kind", FilterKind<F>::id), cereal::make_nvp("capacity", o.capacity),
     cereal::make_nvp("false_positive_rate", o.false_positive_rate),
     cereal::make_nvp("max_slices", static_cast<std::uint8_t>(o.max_slices)),
     cereal::make_nvp("layout", layout), cereal::make_nvp("growth", o.growth),
     cereal::make_nvp("tightening", o.tightening), cereal::make_nvp("seed", o.seed));
  if (timed) {
    ar(cereal::make_nvp("slice_lifetime", static_cast<std::uint64_t>(o.slice_lifetime.count())));
  }
  ar(cereal::make_nvp("rotations", filter.rotations()),
     cereal::make_nvp("slices", detail::SlicesOut<F>{filter}));
}

namespace detail {

// The body of every load: reads and checks the fields after the class version.
template <class F, class Archive>
F load_filter(Archive& ar, std::uint32_t version) {
  try {
    check_archive_version(version);
    check_kind(load_byte(ar, "kind"), FilterKind<F>::id);
    Options o;
    ar(cereal::make_nvp("capacity", o.capacity),
       cereal::make_nvp("false_positive_rate", o.false_positive_rate));
    o.max_slices = load_byte(ar, "max_slices");
    bool timed = false, probing = false;
    o.layout = flagged_layout_of(load_byte(ar, "layout"), timed, probing);
    ar(cereal::make_nvp("growth", o.growth), cereal::make_nvp("tightening", o.tightening),
       cereal::make_nvp("seed", o.seed));
    if (timed) {
      std::uint64_t lifetime = 0;
      ar(cereal::make_nvp("slice_lifetime", lifetime));
      o.slice_lifetime = lifetime_of(lifetime);
    }
    std::uint64_t rotations = 0;
    ar(cereal::make_nvp("rotations", rotations));
    check_options(o);
    std::vector<typename F::slice_type> slices;
    ar(cereal::make_nvp("slices", SlicesIn<F>{o, rotations, probing, load_context(ar), slices}));
    try {
      return F(from_parts, o, std::move(slices), rotations);
    } catch (const std::invalid_argument& e) {
      throw FormatError(e.what());
    }
  } catch (const cereal::Exception& e) {
    throw FormatError(std::string("segbloom: archive truncated or malformed: ") + e.what());
  }
}

}  // namespace detail

// Cereal: loads a filter of kind F, checking everything (see "Validation" above).
// Throws FormatError; the filter is unchanged unless the load succeeds.
template <class Archive, SerializableFilter F>
void CEREAL_LOAD_FUNCTION_NAME(Archive& ar, F& filter, std::uint32_t version) {
  filter = detail::load_filter<F>(ar, version);
}

// --- The envelope ----------------------------------------------------------------

// The filter in a checked envelope (envelope.hpp). Its size: the cell arrays plus
// 79 + 17 bytes per slice.
template <SerializableFilter F>
std::string to_bytes(const F& filter) {
  std::size_t cell_bytes = 0;
  for (const auto& slice : filter.slices()) cell_bytes += slice.cells().words().size_bytes();
  std::string blob;
  blob.reserve(envelope::kHeaderBytes + 57 + 17 * filter.slice_count() + cell_bytes);
  blob.resize(envelope::kHeaderBytes);
  {
    detail::StringOutput buffer(blob);
    std::ostream stream(&buffer);
    cereal::PortableBinaryOutputArchive ar(stream,
                                           cereal::PortableBinaryOutputArchive::Options::LittleEndian());
    ar(filter);
  }
  envelope::seal(blob, FilterKind<F>::id);
  return blob;
}

// The filter in `blob`, which must be exactly one envelope of kind F. Throws FormatError
// naming what is wrong (see "Validation"); never allocates more than about twice the
// blob's size, nor cell arrays above limits.max_bytes.
template <SerializableFilter F>
F from_bytes(std::string_view blob, const LoadLimits& limits = {}) {
  const envelope::Unverified opened = envelope::open_unverified(blob, FilterKind<F>::id, limits);
  detail::VerifyingInput buffer(opened.payload);
  std::istream stream(&buffer);
  detail::LoadContext context{limits, &buffer};
  std::optional<F> filter;
  try {
    // An input archive's option names the host's order to load into (Cereal swaps when it
    // differs from the stream's flag, which envelope::open checked is 1, little-endian):
    // the host's, not LittleEndian(), which on a big-endian host would swap nothing and
    // read every stored integer byte-reversed (until 2 Dec 2026).
    WithLoadLimits<cereal::PortableBinaryInputArchive> ar(
        context, stream, cereal::PortableBinaryInputArchive::Options::Default());
    // The class version Cereal writes first (layout above); read here so that no
    // default-constructed filter is built only to be replaced.
    std::uint32_t version = 0;
    ar(version);
    filter.emplace(detail::load_filter<F>(ar, version));
  } catch (const cereal::Exception& e) {
    buffer.verify(opened.checksum);  // a damaged payload is reported as such
    throw FormatError(std::string("segbloom: payload truncated: ") + e.what());
  } catch (const FormatError&) {
    buffer.verify(opened.checksum);
    throw;
  }
  buffer.verify(opened.checksum);
  if (buffer.remaining() != 0) {
    throw FormatError("segbloom: " + std::to_string(buffer.remaining()) +
                      " unexpected bytes after the last slice");
  }
  return std::move(*filter);
}

// Writes to_bytes(filter) to `out`.
template <SerializableFilter F>
void to_stream(std::ostream& out, const F& filter) {
  const std::string blob = to_bytes(filter);
  out.write(blob.data(), static_cast<std::streamsize>(blob.size()));
}

namespace detail {
// Reads one envelope (header and the payload it declares) from `in`, checking the header
// before reading on; the payload is read in chunks, so a short stream costs what it holds.
std::string read_envelope(std::istream& in, std::uint8_t expected_kind, const LoadLimits& limits);
}  // namespace detail

// Reads exactly one envelope of kind F from `in` and loads it, as from_bytes: a short or
// malformed stream is a FormatError whatever exceptions() the stream has turned on; only an
// I/O error (badbit) that the stream reports by exception propagates (std::ios_base::failure).
template <SerializableFilter F>
F from_stream(std::istream& in, const LoadLimits& limits = {}) {
  return from_bytes<F>(detail::read_envelope(in, FilterKind<F>::id, limits), limits);
}

}  // namespace segbloom
