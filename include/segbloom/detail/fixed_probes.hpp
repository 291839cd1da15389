// segbloom: kernels instantiated for a fixed number of probes. A loop over k probes whose
// k is a compile-time constant unrolls, and its per-probe steps (a salt, an offset) become
// immediates; so the hot kernels come in one instance per k up to kMaxFixedProbes, picked
// once per call by the slice's k, and one for k at run time (instance 0) beyond that.
// The blocked layout's inserts (blocked/insert.hpp) and the classic layout's group inserts
// (DoubleHashingScheme::set_many) take theirs from a table of function pointers
// (table_by_probes); per-key classic inserts (Slice::mark_cells, DoubleHashingScheme::probe)
// branch to theirs, inlined (with_fixed_probes).
#pragma once

#include <array>
#include <type_traits>
#include <utility>

namespace segbloom::detail {

// The largest k with an instance of its own.
inline constexpr unsigned kMaxFixedProbes = 16;
static_assert(kMaxFixedProbes <= 16, "the instances' unroll pragmas (for_each_probe, "
                                     "DoubleHashingScheme::probe) unroll at most 16 probes");

// {instance<0>(), instance<1>(), ..., instance<16>()}: [k] = a kernel's instance for k
// probes, [0] = its instance for k at run time. by_probes(table, k) picks the one for k.
template <class Fn, class Instance, unsigned... K>
constexpr auto table_by_probes(Instance instance, std::integer_sequence<unsigned, K...>) noexcept {
  return std::array<Fn, sizeof...(K) + 1>{instance.template operator()<0>(),
                                          instance.template operator()<K + 1>()...};
}
template <class Fn, class Instance>
constexpr auto table_by_probes(Instance instance) noexcept {
  return table_by_probes<Fn>(instance, std::make_integer_sequence<unsigned, kMaxFixedProbes>{});
}
template <class Table>
auto by_probes(const Table& table, unsigned k) noexcept {
  return table[k < table.size() ? k : 0];
}

// Calls probe(i) for each i < k. kFixedProbes != 0: k is that constant, so the loop
// unrolls (asked for: GCC 12 at -O2 unrolls only k <= 2 by itself); 0: k from the
// argument. A SIMD kernel's probe carries its target but cannot be always_inline (this
// function has no target); it is inlined once this function is, into the kernel (no call
// is left, at -O2 or -O3).
template <unsigned kFixedProbes, class Probe>
[[gnu::always_inline]] inline void for_each_probe(unsigned k, const Probe& probe) {
  if constexpr (kFixedProbes != 0) {
#pragma GCC unroll 16
    for (unsigned i = 0; i < kFixedProbes; ++i) probe(i);
  } else {
    for (unsigned i = 0; i < k; ++i) probe(i);
  }
}

// f(std::integral_constant<unsigned, k>{}) for 1 <= k <= kMaxFixedProbes, else
// f(std::integral_constant<unsigned, 0>{}), called once: an inlined kernel's instance for k,
// where a table (table_by_probes) would cost a call. f returns the same default-constructible
// value type for every instance (GCC turns the compares into one jump table).
template <class F>
[[gnu::always_inline]] inline auto with_fixed_probes(unsigned k, F&& f) {
  return [&]<unsigned... K>(std::integer_sequence<unsigned, K...>) {
    decltype(f(std::integral_constant<unsigned, 0>{})) result{};
    const bool fixed =
        ((k == K + 1 && ((void)(result = f(std::integral_constant<unsigned, K + 1>{})), true)) || ...);
    return fixed ? result : f(std::integral_constant<unsigned, 0>{});
  }(std::make_integer_sequence<unsigned, kMaxFixedProbes>{});
}

}  // namespace segbloom::detail
