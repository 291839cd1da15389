// segbloom: the registry of serializable filter kinds and how their cells are stored.
//
// Every kind is a SegmentedFilter<Cells, Scheme> whose whole state is its options, its
// slices and its rotation count, so one generic serializer (serialization.hpp) and one
// zero-copy reader (filter_view.hpp) serve them all. A kind is identified in storage by a
// one-byte id that never changes once released.
//
// Adding a kind: one SEGBLOOM_FILTER_KIND line at the bottom of this file (a new id) and
// its type in `FilterKinds`; a new cell type also needs a CellsLayout specialisation.
#pragma once

#include <cstdint>
#include <string_view>

#include <cereal/cereal.hpp>

#include "segbloom/bit_cells.hpp"
#include "segbloom/counter_cells.hpp"
#include "segbloom/counting_bloom_filter.hpp"
#include "segbloom/detail/bits.hpp"
#include "segbloom/leveldb_compatible_filter.hpp"
#include "segbloom/scalable_bloom_filter.hpp"

namespace segbloom {

// How a cell type's words hold its cells, and a read-only view of cells stored as
// little-endian 64-bit words at any (unaligned) address: the same test(i) as the cells,
// read without assuming alignment or the host's byte order.
template <class Cells>
struct CellsLayout;

template <>
struct CellsLayout<BitCells> {
  static constexpr std::uint64_t kCellsPerWord = 64;
  // Bit i is bit i % 64 of word i / 64, that is bit i % 8 of byte i / 8.
  struct View {
    const unsigned char* bytes = nullptr;
    bool test(std::uint64_t i) const noexcept { return (bytes[i >> 3] >> (i & 7)) & 1u; }
    // Word w in host order, as BitCells::words()[w] (one unaligned load on little-endian
    // hosts), and the address of the first word: with them a slice over the view takes
    // the bit array's word-wise lookups and blocked kernels (Slice::contains), not a byte
    // per probe.
    std::uint64_t word(std::uint64_t w) const noexcept { return detail::load_le64(bytes + 8 * w); }
    const void* data() const noexcept { return bytes; }
  };
};

template <>
struct CellsLayout<CounterCells> {
  static constexpr std::uint64_t kCellsPerWord = CounterCells::kCountersPerWord;
  // Counter i is bits 4 (i % 16) .. +3 of word i / 16: the low nibble of byte i / 2 for
  // even i, the high nibble for odd i. Set when non-zero.
  struct View {
    const unsigned char* bytes = nullptr;
    bool test(std::uint64_t i) const noexcept { return (bytes[i >> 1] >> ((i & 1) * 4)) & 0xFu; }
  };
};

// FilterKind<F>::id and ::name for every serializable kind F; undefined for others.
template <class F>
struct FilterKind;

template <class F>
concept SerializableFilter = requires {
  { FilterKind<F>::id } -> std::convertible_to<std::uint8_t>;
  typename F::slice_type::cells_type;
  typename F::slice_type::scheme_type;
};

template <class... F>
struct KindList {};

// Calls fn.template operator()<F>() for the kind F whose id is `id`; returns false when
// no kind has that id.
template <class... F, class Fn>
bool visit_kind(KindList<F...>, std::uint8_t id, Fn&& fn) {
  return ((id == FilterKind<F>::id ? (fn.template operator()<F>(), true) : false) || ...);
}

// Layout version of each kind's archive (Cereal's class version). A reader accepts every
// version up to this one.
inline constexpr std::uint32_t kArchiveVersion = 1;

}  // namespace segbloom

// Registers `Type` (a SegmentedFilter kind) under the one-byte id `Id`; at global scope.
#define SEGBLOOM_FILTER_KIND(Type, Id)                    \
  template <>                                             \
  struct segbloom::FilterKind<Type> {                     \
    static constexpr std::uint8_t id = Id;                \
    static constexpr std::string_view name = #Type;       \
  };                                                      \
  CEREAL_CLASS_VERSION(Type, segbloom::kArchiveVersion)

SEGBLOOM_FILTER_KIND(segbloom::ScalableBloomFilter, 1)
SEGBLOOM_FILTER_KIND(segbloom::CountingBloomFilter, 2)
SEGBLOOM_FILTER_KIND(segbloom::LevelDbCompatibleFilter, 3)

namespace segbloom {

// Every registered kind, for code that picks one by its stored id (FilterView).
using FilterKinds = KindList<ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter>;

// Transition pairs (transition_filter.hpp) of the kind with id i are stored as kind
// kTransitionKindOffset + i: 4, 5, 6. They are not in FilterKinds (a pair is two filters;
// TransitionView reads them, FilterView does not).
inline constexpr std::uint8_t kTransitionKindOffset = 3;
inline constexpr std::string_view kTransitionKindNames[] = {
    "segbloom::TransitionFilter<segbloom::ScalableBloomFilter>",
    "segbloom::TransitionFilter<segbloom::CountingBloomFilter>",
    "segbloom::TransitionFilter<segbloom::LevelDbCompatibleFilter>"};

// The name of the kind with this id, or "unknown kind".
inline std::string_view kind_name(std::uint8_t id) {
  std::string_view name = "unknown kind";
  visit_kind(FilterKinds{}, id, [&]<class F>() { name = FilterKind<F>::name; });
  if (id > kTransitionKindOffset && id <= kTransitionKindOffset + std::size(kTransitionKindNames)) {
    name = kTransitionKindNames[id - kTransitionKindOffset - 1];
  }
  return name;
}

}  // namespace segbloom
