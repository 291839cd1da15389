#include "progress.hpp"

#include <unistd.h>

#include <string>

namespace segbloom::cli {

Progress::Progress(std::ostream& out, bool enabled, bool forced)
    : out_(out), enabled_(enabled || forced), forced_(forced), start_(Clock::now()) {}

Progress::~Progress() { finish(); }

bool Progress::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void Progress::update(std::uint64_t done) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (!drawn_) {
    if (forced_ || done > kShowAfterIds || now - start_ >= kShowAfter) draw(done, now);
    return;
  }
  if (now - last_draw_ >= kRedrawEvery) draw(done, now);
}

void Progress::draw(std::uint64_t done, Clock::time_point now) {
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::string line = std::to_string(done) + " ids";
  if (seconds > 0) {
    line += ", " + std::to_string(static_cast<std::uint64_t>(static_cast<double>(done) / seconds)) + " ids/s";
  }
  // Pad over a longer previous line (the rate can shrink by a digit).
  const std::size_t width = line.size();
  if (width < width_) line.append(width_ - width, ' ');
  out_ << '\r' << line << std::flush;
  width_ = std::max(width_, width);
  drawn_ = true;
  last_draw_ = now;
}

void Progress::finish() {
  if (!drawn_) return;
  out_ << '\r' << std::string(width_, ' ') << '\r' << std::flush;
  drawn_ = false;
  enabled_ = false;
}

}  // namespace segbloom::cli
