#include <catch2/catch.hpp>

#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>

#include "segbloom/segbloom.hpp"

using namespace segbloom;

namespace {

// Expects std::invalid_argument whose message names `parameter`.
void require_rejected(const Options& o, const std::string& parameter) {
  try {
    ScalableBloomFilter filter(o);
    FAIL("accepted invalid " << parameter);
  } catch (const std::invalid_argument& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(parameter) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("every invalid parameter is rejected with std::invalid_argument", "[options]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double p : {0.0, 1.0, -0.1, 1.5, nan, inf}) {
    Options o;
    o.false_positive_rate = p;
    require_rejected(o, "false_positive_rate");
  }
  {
    Options o;
    o.capacity = 0;
    require_rejected(o, "capacity");
    o.capacity = kMaxCapacity + 1;
    require_rejected(o, "capacity");
  }
  for (double g : {0.0, 0.5, 0.999, 17.0, nan}) {
    Options o;
    o.growth = g;
    require_rejected(o, "growth");
  }
  for (double r : {0.0, 1.0, -0.5, 2.0, nan}) {
    Options o;
    o.tightening = r;
    require_rejected(o, "tightening");
  }
  {
    Options o;
    o.max_slices = 8;
    o.capacity = 7;  // fewer items than slices
    require_rejected(o, "capacity");
    o.capacity = 1000;
    o.max_slices = kMaxSlices + 1;
    require_rejected(o, "max_slices");
  }
  {
    Options o;
    o.layout = static_cast<Layout>(2);  // e.g. a value from a newer build
    require_rejected(o, "layout");
  }
  for (const auto lifetime : {std::chrono::seconds{-1}, kMaxSliceLifetime + std::chrono::seconds{1}}) {
    Options o;
    o.slice_lifetime = lifetime;
    require_rejected(o, "slice_lifetime");
  }
  {
    // A size that overflows: 2^48 items at a rate far below double precision's reach
    // would need more than 2^46 bits.
    Options o;
    o.capacity = kMaxCapacity;
    o.false_positive_rate = 1e-300;
    require_rejected(o, "slice");
  }
}

TEST_CASE("boundary values are accepted", "[options]") {
  Options o;
  o.capacity = 1;
  o.false_positive_rate = 0.999;
  o.growth = 1.0;
  o.tightening = 0.001;
  CHECK_NOTHROW(ScalableBloomFilter(o));
  o.max_slices = 1;
  CHECK_NOTHROW(ScalableBloomFilter(o));
  o.capacity = 64;
  o.max_slices = 64;
  o.growth = 16;
  CHECK_NOTHROW(ScalableBloomFilter(o));
}

TEST_CASE("a growing filter that would exceed 64 slices throws std::length_error", "[options]") {
  Options o;
  o.capacity = 1;
  o.growth = 1.0;
  o.false_positive_rate = 0.5;
  o.tightening = 0.99;
  ScalableBloomFilter f(o);
  std::uint64_t i = 0;
  bool threw = false;
  try {
    for (; i < 100000; ++i) f.insert(i);
  } catch (const std::length_error&) {
    threw = true;
  }
  CHECK(threw);
  CHECK(f.slice_count() == kMaxSlices);
  // Nothing written before the throw was lost.
  for (std::uint64_t j = 0; j < i; ++j) CHECK(f.contains(j));
}
