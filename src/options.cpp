#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "segbloom/options.hpp"
#include "segbloom/sizing.hpp"

namespace segbloom {
namespace {

[[noreturn]] void reject(const char* parameter, const std::string& range, double value) {
  std::ostringstream message;
  message << "segbloom: Options::" << parameter << " = " << value << " is out of range; allowed: "
          << range;
  throw std::invalid_argument(message.str());
}

}  // namespace

void validate(const Options& o) {
  if (!(o.false_positive_rate > 0.0 && o.false_positive_rate < 1.0)) {
    reject("false_positive_rate", "(0, 1)", o.false_positive_rate);
  }
  if (o.capacity == 0 || o.capacity > kMaxCapacity) {
    reject("capacity", "[1, 2^48]", static_cast<double>(o.capacity));
  }
  if (o.max_slices > kMaxSlices) {
    reject("max_slices", "0 (growing) or [1, 64] (window)", o.max_slices);
  }
  if (o.max_slices > 0 && o.capacity < o.max_slices) {
    reject("capacity", "at least max_slices (" + std::to_string(o.max_slices) + ") in window mode",
           static_cast<double>(o.capacity));
  }
  if (!(o.growth >= 1.0 && o.growth <= 16.0)) reject("growth", "[1, 16]", o.growth);
  if (!(o.tightening > 0.0 && o.tightening < 1.0)) reject("tightening", "(0, 1)", o.tightening);
  if (o.layout != Layout::classic && o.layout != Layout::blocked) {
    reject("layout", "classic (0) or blocked (1)", static_cast<double>(o.layout));
  }
  if (o.slice_lifetime < std::chrono::seconds{0} || o.slice_lifetime > kMaxSliceLifetime) {
    reject("slice_lifetime", "[0, 100 years] in seconds",
           static_cast<double>(o.slice_lifetime.count()));
  }
  // The first slice must be representable; later slices are checked as they open.
  try {
    (void)slice_shape(o, 0);
  } catch (const std::length_error& e) {
    throw std::invalid_argument(std::string("segbloom: Options describe a slice too large: ") +
                                e.what());
  }
}

}  // namespace segbloom
