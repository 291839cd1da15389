// sizing_table: prints how segbloom sizes slices, for the README's sizing section.
//   sizing_table            the p -> bpe, k, bytes per 1000 items table
//   sizing_table --growth   memory of growing filters at 1x..100x capacity for
//                           several (growth, tightening) pairs
#include <cmath>
#include <cstdio>
#include <cstring>

#include "segbloom/segbloom.hpp"

namespace {

void rate_table() {
  std::printf("| p | bpe (textbook) | k | textbook bytes / 1000 items | segbloom bytes / 1000 items "
              "| bits / item | rate when full, (1/2)^k |\n|---|---|---|---|---|---|---|\n");
  for (double p : {0.1, 0.05, 0.01, 0.005, 0.001, 0.0001, 0.00001}) {
    const unsigned k = segbloom::probes_for_rate(p);
    const std::uint64_t textbook = segbloom::textbook_bits(1000, p);
    const std::uint64_t actual = segbloom::capacity_bits(1000, k);
    std::printf("| %g | %.3f | %u | %llu | %llu | %.2f | %.3g |\n", p, segbloom::bits_per_element(p),
                k, (unsigned long long)textbook / 8, (unsigned long long)actual / 8, actual / 1000.0,
                std::pow(0.5, k));
  }
}

// Bits allocated per item held by a growing filter after `load` times its capacity.
double bits_per_item(double growth, double tightening, double load) {
  segbloom::Options o;
  o.capacity = 10000;
  o.false_positive_rate = 0.001;
  o.growth = growth;
  o.tightening = tightening;
  const double items = load * o.capacity;
  double held = 0, bits = 0;
  for (std::uint32_t i = 0; held < items; ++i) {
    const segbloom::SliceShape s = segbloom::slice_shape(o, i);
    held += s.capacity;
    bits += s.bits;
  }
  return bits / items;
}

void growth_table() {
  std::printf("| growth | tightening | 1x | 10x | 30x | 100x | mean over 10x-100x |\n"
              "|---|---|---|---|---|---|---|\n");
  for (double s : {1.5, 2.0, 4.0}) {
    for (double r : {0.5, 0.7, 0.8, 0.9}) {
      double mean = 0;
      for (int j = 0; j <= 100; ++j) mean += bits_per_item(s, r, std::pow(10.0, 1 + j / 100.0));
      std::printf("| %g | %g | %.1f | %.1f | %.1f | %.1f | %.1f |\n", s, r, bits_per_item(s, r, 1),
                  bits_per_item(s, r, 10), bits_per_item(s, r, 30), bits_per_item(s, r, 100),
                  mean / 101);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--growth") == 0) {
    growth_table();
  } else {
    rate_table();
  }
  return 0;
}
