// segbloom: the system clock (see clock.hpp).
#include "segbloom/clock.hpp"

namespace segbloom {
namespace {

class SystemClock final : public Clock {
 public:
  UnixSeconds now() const noexcept override {
    using namespace std::chrono;
    return duration_cast<seconds>(system_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

const Clock& system_clock() noexcept {
  static const SystemClock clock;
  return clock;
}

}  // namespace segbloom
