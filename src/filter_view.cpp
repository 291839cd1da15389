// FilterView's parser: reads the payload layout of serialization.hpp by hand, making the
// same checks, in the same order, as the Cereal loader (detail::load_filter).
#include "segbloom/filter_view.hpp"

#include <bit>

#include "segbloom/detail/expiry.hpp"
#include "segbloom/serialization.hpp"

namespace segbloom {
namespace {

// Little-endian fields from a payload, refusing to read past its end.
class PayloadReader {
 public:
  explicit PayloadReader(std::string_view bytes) : bytes_(bytes) {}

  std::uint64_t remaining() const noexcept { return bytes_.size() - pos_; }

  const unsigned char* skip(std::uint64_t n) {
    need(n);
    const auto* p = reinterpret_cast<const unsigned char*>(bytes_.data() + pos_);
    pos_ += static_cast<std::size_t>(n);
    return p;
  }
  std::uint64_t uint(unsigned size) {
    const unsigned char* p = skip(size);
    std::uint64_t value = 0;
    for (unsigned i = size; i-- > 0;) value = (value << 8) | p[i];
    return value;
  }
  std::uint8_t u8() { return static_cast<std::uint8_t>(uint(1)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(uint(4)); }
  std::uint64_t u64() { return uint(8); }
  double f64() { return std::bit_cast<double>(uint(8)); }

 private:
  void need(std::uint64_t n) const {
    if (n > remaining()) {
      throw FormatError("segbloom: payload truncated: " + std::to_string(n) + " bytes needed, " +
                        std::to_string(remaining()) + " left");
    }
  }

  std::string_view bytes_;
  std::size_t pos_ = 0;
};

}  // namespace

FilterView::FilterView(std::string_view blob, const LoadLimits& limits) {
  const std::string_view payload = envelope::open(blob, 0, limits);
  kind_ = static_cast<std::uint8_t>(blob[5]);
  if (!visit_kind(FilterKinds{}, kind_, [&]<class F>() { parse<F>(payload, limits); })) {
    throw FormatError("segbloom: the blob holds a " + std::string(kind_name(kind_)) + " (kind " +
                      std::to_string(kind_) + "), which FilterView does not read");
  }
}

FilterView::FilterView(std::string_view blob, const LoadLimits& limits, const Clock& clock)
    : FilterView(blob, limits) {
  if (options_.slice_lifetime.count() > 0) {
    first_ = detail::expired_slices(count_, options_.slice_lifetime.count(), detail::filter_time(clock),
                                    [this](std::size_t i) { return slices_[i].opened_at; });
  }
}

template <class F>
void FilterView::parse(std::string_view payload, const LoadLimits& limits) {
  using Cells = typename F::slice_type::cells_type;
  PayloadReader r(payload);
  r.u8();  // endianness flag, checked by envelope::open
  detail::check_archive_version(r.u32());
  detail::check_kind(r.u8(), FilterKind<F>::id);
  Options o;
  o.capacity = r.u64();
  o.false_positive_rate = r.f64();
  o.max_slices = r.u8();
  bool timed = false, probing = false;
  o.layout = detail::flagged_layout_of(r.u8(), timed, probing);
  o.growth = r.f64();
  o.tightening = r.f64();
  o.seed = r.u64();
  if (timed) o.slice_lifetime = detail::lifetime_of(r.u64());
  const std::uint64_t rotations = r.u64();
  detail::check_options(o);
  // As the kind's own constructor refuses it (from_bytes): the blocked layout needs the
  // 128-bit digest. Without this the view read such a blob whose slices' rates fell below
  // the blocked floor (their shapes then classic) where from_bytes refused it.
  if (o.layout == Layout::blocked && !F::slice_type::kBlockable) {
    throw FormatError("segbloom: a " + std::string(FilterKind<F>::name) +
                      " cannot have Options::layout = blocked (the blocked layout needs the 128-bit XXH3 digest)");
  }
  const std::uint8_t count = r.u8();
  detail::check_slice_count(o, count, rotations);
  std::uint64_t total = 0;
  bool used_triple = false;
  for (std::size_t i = 0; i < count; ++i) {
    StoredSlice& s = slices_[i];
    const std::uint64_t cells = r.u64();
    const std::uint8_t probes = r.u8();
    const std::uint8_t probing_byte = probing ? r.u8() : 0;
    s.items = r.u64();
    detail::check_items(i, s.items);
    std::size_t planned = i;
    if (timed) {
      planned = r.u8();
      s.opened_at = static_cast<std::int64_t>(r.u64());
      detail::check_timed_slice(i, planned, s.opened_at, o.max_slices != 0, i > 0 ? slices_[i - 1].opened_at : 0);
    }
    const std::uint64_t bytes = detail::check_cells(i, cells, CellsLayout<Cells>::kCellsPerWord,
                                                    total, limits, r.remaining());
    s.shape = detail::stored_shape<F>(o, planned, cells, probes, probing_byte);
    s.full_cells = detail::full_cells_of<typename F::slice_type::scheme_type>(s.shape);
    s.cells = r.skip(bytes);
    used_triple |= s.shape.probing != Probing::scheme;
  }
  detail::check_probing_used(probing, used_triple);
  if (r.remaining() != 0) {
    throw FormatError("segbloom: " + std::to_string(r.remaining()) +
                      " unexpected bytes after the last slice");
  }
  // Growing mode: distinct sequence indices, as the filter's own check requires.
  std::uint64_t used = 0;
  for (std::size_t i = 0; i < count && o.max_slices == 0; ++i) {
    const std::uint32_t index = slices_[i].shape.index;
    if ((used >> index) & 1) {
      throw FormatError("segbloom: slice " + std::to_string(i) + ": sequence index " +
                        std::to_string(index) + " repeated or above 63");
    }
    used |= std::uint64_t{1} << index;
  }
  options_ = o;
  rotations_ = rotations;
  count_ = count;
}

}  // namespace segbloom
