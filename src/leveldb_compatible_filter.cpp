#include "segbloom/leveldb_compatible_filter.hpp"

#include <algorithm>
#include <string_view>

#include "segbloom/serialization.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace segbloom {
namespace {

// Throws std::invalid_argument with `what` when the options or their first slice are out
// of range; returns the options otherwise.
const Options& checked_for_leveldb(const Options& options) {
  validate(options);
  try {
    (void)LevelDbScheme::adjust_shape(slice_shape(options, 0, LevelDbScheme::kMaxProbes));
  } catch (const std::length_error& e) {
    throw std::invalid_argument(std::string("segbloom: Options do not fit LevelDB's format: ") +
                                e.what());
  }
  return options;
}

// Slice bits -> blob bytes, little-endian within each 64-bit word, so that bit j of the
// slice is bit j % 8 of byte j / 8 on any host.
void append_words(std::span<const std::uint64_t> words, std::string& out) {
  for (const std::uint64_t word : words) {
    for (unsigned b = 0; b < 8; ++b) out.push_back(static_cast<char>((word >> (8 * b)) & 0xff));
  }
}

std::vector<std::uint64_t> read_words(std::string_view bytes) {
  std::vector<std::uint64_t> words(bytes.size() / 8);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::uint64_t word = 0;
    for (unsigned b = 0; b < 8; ++b) word |= std::uint64_t{p[8 * i + b]} << (8 * b);
    words[i] = word;
  }
  return words;
}

// Items that leave `set` of `bits` bits set with k probes each, on average.
std::uint64_t estimated_items(std::uint64_t set, std::uint64_t bits, unsigned k) {
  if (set >= bits) return 0;  // unreachable for a slice that stops at half full
  const double m = static_cast<double>(bits);
  const double n = -m / k * std::log1p(-static_cast<double>(set) / m);
  return static_cast<std::uint64_t>(std::llround(n));
}

}  // namespace

void LevelDbScheme::check_shape(const SliceShape& shape) {
  if (shape.layout != Layout::classic) {
    throw std::length_error("segbloom: LevelDB's format has the classic layout only");
  }
  if (shape.probes < 1 || shape.probes > kMaxProbes) {
    throw std::length_error("segbloom: probe count " + std::to_string(shape.probes) +
                            " outside LevelDB's [1, " + std::to_string(kMaxProbes) + "]");
  }
  if (shape.bits > kMaxBits) {
    throw std::length_error("segbloom: a slice of " + std::to_string(shape.bits) +
                            " bits exceeds 2^32 bits, the most LevelDB's 32-bit probes reach");
  }
}

SliceShape LevelDbScheme::adjust_shape(const SliceShape& shape) {
  const unsigned needed = probes_for_rate(shape.false_positive_rate) + kExtraProbes;
  if (needed > kMaxProbes) {
    throw std::length_error("segbloom: a slice at false-positive rate " +
                            std::to_string(shape.false_positive_rate) + " needs " +
                            std::to_string(needed) + " probes with LevelDB's probing; its " +
                            "format holds at most " + std::to_string(kMaxProbes));
  }
  SliceShape adjusted = shape;
  adjusted.probing = Probing::scheme;  // LevelDB's own probing, whatever the size
  adjusted.probes = needed;
  adjusted.bits = capacity_bits(shape.capacity, needed);
  check_shape(adjusted);
  return adjusted;
}

LevelDbCompatibleFilter::LevelDbCompatibleFilter(const Options& options, const Clock& clock)
    : SegmentedFilter(checked_for_leveldb(options), clock) {}

std::string LevelDbCompatibleFilter::slice_blob(std::size_t i) const {
  if (i >= slice_count()) {
    throw std::out_of_range("segbloom: slice " + std::to_string(i) + " requested of " +
                            std::to_string(slice_count()));
  }
  const slice_type& slice = slices()[i];
  std::string blob;
  blob.reserve(slice.shape().bits / 8 + 1);
  append_words(slice.cells().words(), blob);
  blob.push_back(static_cast<char>(slice.shape().probes));
  return blob;
}

std::vector<std::string> LevelDbCompatibleFilter::slice_blobs() const {
  std::vector<std::string> blobs;
  blobs.reserve(slice_count());
  for (std::size_t i = 0; i < slice_count(); ++i) blobs.push_back(slice_blob(i));
  return blobs;
}

std::vector<std::uint64_t> LevelDbCompatibleFilter::slice_items() const {
  std::vector<std::uint64_t> items;
  items.reserve(slice_count());
  for (const auto& slice : slices()) items.push_back(slice.items());
  return items;
}

LevelDbCompatibleFilter LevelDbCompatibleFilter::from_blobs(
    const Options& options, std::span<const std::string_view> blobs,
    std::span<const std::uint64_t> items, std::uint64_t rotations) {
  checked_for_leveldb(options);
  if (options.slice_lifetime.count() > 0) {
    // Blobs hold no open times nor sequence indices: restored slices would all look
    // expired (opened in 1970), and the first write would drop every key.
    throw std::invalid_argument(
        "segbloom: LevelDB blobs cannot restore a filter with a slice lifetime (they hold no open times); "
        "store it with to_bytes");
  }
  // The loaders' checks of what the blobs do not hold (slice count and rotations, item
  // counts), so that no filter comes back whose to_bytes they refuse; as std::invalid_argument.
  const auto loaders_check = [](auto&& check) {
    try {
      check();
    } catch (const FormatError& e) {
      const std::string_view what = e.what(), prefix = "segbloom: ";
      throw std::invalid_argument("segbloom: LevelDB blobs: " +
                                  std::string(what.substr(what.starts_with(prefix) ? prefix.size() : 0)));
    }
  };
  loaders_check([&] { detail::check_slice_count(options, blobs.size(), rotations); });
  if (!items.empty() && items.size() != blobs.size()) {
    throw std::invalid_argument("segbloom: " + std::to_string(items.size()) +
                                " item counts given for " + std::to_string(blobs.size()) +
                                " LevelDB blobs");
  }
  std::vector<slice_type> slices;
  slices.reserve(blobs.size());
  for (std::size_t i = 0; i < blobs.size(); ++i) {
    const auto index = static_cast<std::uint32_t>(options.max_slices == 0 ? i : 0);
    SliceShape shape;
    try {
      shape = LevelDbScheme::adjust_shape(slice_shape(options, index, LevelDbScheme::kMaxProbes));
    } catch (const std::length_error& e) {
      throw std::invalid_argument("segbloom: LevelDB blob " + std::to_string(i) +
                                  ": the options give no valid slice: " + e.what());
    }
    const std::string where = "segbloom: LevelDB blob " + std::to_string(i) + ": ";
    const std::string_view blob = blobs[i];
    const std::uint64_t expected = shape.bits / 8 + 1;
    if (blob.size() != expected) {
      throw std::invalid_argument(where + std::to_string(blob.size()) +
                                  " bytes; the options give this slice " +
                                  std::to_string(expected) + " (" + std::to_string(shape.bits / 8) +
                                  " filter bytes + 1 probe-count byte)");
    }
    const auto probes = static_cast<unsigned char>(blob.back());
    if (probes != shape.probes) {
      throw std::invalid_argument(where + "probe count " + std::to_string(probes) +
                                  "; the options give this slice " + std::to_string(shape.probes));
    }
    BitCells cells = BitCells::from_words(read_words(blob.substr(0, blob.size() - 1)));
    // An estimate rounds: never below what the set cells need.
    const std::uint64_t count =
        items.empty() ? std::max(estimated_items(cells.set_count(), shape.bits, shape.probes),
                                 detail::fewest_items(cells.set_count(), shape.probes))
                      : items[i];
    loaders_check([&] {
      detail::check_items(i, count);
      detail::check_items_cover_cells(i, count, cells.set_count(), shape.probes);
    });
    slices.emplace_back(shape, std::move(cells), count);
  }
  return LevelDbCompatibleFilter(from_parts, options, std::move(slices), rotations);
}

LevelDbCompatibleFilter LevelDbCompatibleFilter::from_blobs(const Options& options,
                                                            std::span<const std::string> blobs,
                                                            std::span<const std::uint64_t> items,
                                                            std::uint64_t rotations) {
  std::vector<std::string_view> views(blobs.begin(), blobs.end());
  return from_blobs(options, std::span<const std::string_view>(views), items, rotations);
}

}  // namespace segbloom
