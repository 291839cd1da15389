// Filters as a blob stored before triple hashing (1 Dec 2026 and earlier) loads them: their
// small slices at low rates probe by double hashing and close where classic_full_fill says
// (sizing.hpp). Built from parts here, so that tests reach that path for any options.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "segbloom/segbloom.hpp"

namespace segbloom::test {

// A new filter of kind F whose first (and only) slice has the planned shape but double
// hashing, at the size older versions gave it (capacity_bits where today's plan is triple
// hashing); the slices it opens later are today's.
template <class F>
F with_double_hashing_first_slice(const Options& options, std::size_t slices = 1) {
  SliceShape shape = F::planned_shape(options, 0);
  if (shape.probing == Probing::triple_hashing) shape.bits = capacity_bits(shape.capacity, shape.probes);
  shape.probing = Probing::scheme;
  std::vector<typename F::slice_type> parts;
  for (std::size_t i = 0; i < slices; ++i) parts.emplace_back(shape);
  return F(from_parts, options, std::move(parts), 0);
}

// A window (Options::max_slices = W) of W empty slices so stored.
template <class F>
F with_double_hashing_window(const Options& options) {
  return with_double_hashing_first_slice<F>(options, options.max_slices);
}

}  // namespace segbloom::test
