// segbloom CLI: a one-line progress display on standard error for long `add` runs.
//
// Shown when standard error is a terminal and the run is long: after 1 s, or once more
// than 100 000 ids are done, whichever comes first. `--progress` forces it on from the
// first update (tests, logs); it is never shown otherwise when standard error is not a
// terminal, so pipelines and scripts see no control characters. The line is redrawn
// in place with '\r' at most 10 times a second and cleared by finish().
//
//   \r1250000 ids, 3410000 ids/s
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>

namespace segbloom::cli {

class Progress {
 public:
  // `enabled`: may show at all (a terminal, or forced); `forced`: show from the start.
  Progress(std::ostream& out, bool enabled, bool forced);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  // `done` ids so far. Cheap when nothing is drawn (one clock read).
  void update(std::uint64_t done);

  // Clears the line, if one was drawn. Called by the destructor too.
  void finish();

  // True when standard error (fd 2) is a terminal.
  static bool stderr_is_terminal();

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr std::uint64_t kShowAfterIds = 100'000;
  static constexpr std::chrono::milliseconds kShowAfter{1000};
  static constexpr std::chrono::milliseconds kRedrawEvery{100};

  void draw(std::uint64_t done, Clock::time_point now);

  std::ostream& out_;
  bool enabled_;
  bool forced_;
  bool drawn_ = false;
  std::size_t width_ = 0;  // characters of the last line drawn
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

}  // namespace segbloom::cli
