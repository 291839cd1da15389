// The main job, `segbloom demo`, run in-process with small sizes: its printed numbers,
// its CSV files and its SVG plot are checked (src/cli/demo.cpp and its helpers are
// compiled into the test binary).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../src/cli/demo.hpp"
#include "support/stats.hpp"

namespace {

namespace fs = std::filesystem;
using segbloom::test::binomial_upper;

struct Run {
  int code = -1;
  std::string out, err;
};

Run demo(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Run run;
  run.code = segbloom::cli::run_demo(args, out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

// The line of `text` that starts with `prefix` (without it); fails the test if none.
std::string line_after(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  FAIL("no line starting with '" << prefix << "' in:\n" << text);
  return {};
}

struct Count {
  unsigned long long hits = 0, trials = 0;
};

// "  wrongly skipped before: 12 of 3456 = ..." -> {12, 3456}
Count skipped(const std::string& text, const std::string& phase) {
  Count c;
  const std::string rest = line_after(text, "  wrongly skipped " + phase + ": ");
  REQUIRE(std::sscanf(rest.c_str(), "%llu of %llu", &c.hits, &c.trials) == 2);
  return c;
}

std::vector<std::vector<std::string>> read_csv(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// True when every tag is closed in order (enough of XML for a document without
// comments, CDATA or processing instructions, which the plot never writes).
bool tags_balanced(const std::string& xml) {
  std::vector<std::string> open;
  for (std::size_t i = xml.find('<'); i != std::string::npos; i = xml.find('<', i + 1)) {
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return false;
    const std::string tag = xml.substr(i + 1, end - i - 1);
    if (tag.empty()) return false;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return false;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
  }
  return open.empty();
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "segbloom-test-demo-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// Small sizes: 100 users x 10 days x 5 requests, the change on day 5 with a 2-day
// transition, rates 1 % -> 0.1 % so that a few thousand checked candidates say
// something. About a second under AddressSanitizer.
constexpr unsigned kUsers = 100, kDays = 10;
constexpr double kRate = 0.01, kNewRate = 0.001;

std::vector<std::string> small_args(const fs::path& out) {
  return {"--users", std::to_string(kUsers), "--days", std::to_string(kDays),
          "--requests-per-day", "5", "--candidates", "40", "--shown", "8",
          "--catalog", "20k", "--capacity", "0x40", "--rate", "1%", "--new-rate", "0.001",
          "--transition-day", "5", "--transition-period", "2",
          "--curve-capacity", "2000", "--probes", "20000", "--out", out.string()};
}

void check_feed_numbers(const Run& run) {
  INFO(run.out << run.err);
  REQUIRE(run.code == 0);
  CHECK(line_after(run.out, "  repeats: ") == "0");
  const Count before = skipped(run.out, "before");
  const Count during = skipped(run.out, "during");
  const Count after = skipped(run.out, "after");
  // Every shown video was an unseen candidate, or one forgotten with the old filter
  // (dropped after the transition period, by design).
  const unsigned long long shown = std::stoull(line_after(run.out, "  videos shown: "));
  const unsigned long long forgotten =
      std::stoull(line_after(run.out, "  forgotten with the old policy: "));
  CHECK(before.trials + during.trials + after.trials + forgotten >= shown);
  CHECK(before.trials >= 10'000);
  CHECK(after.trials >= 5'000);
  // Rates within their targets (binomial bounds, exceeded with probability ~1e-9).
  CHECK(before.hits <= binomial_upper(before.trials, kRate));
  CHECK(during.hits <= binomial_upper(during.trials, kRate + kNewRate));
  CHECK(after.hits <= binomial_upper(after.trials, kNewRate));
  // The filters really fill: at capacity 64 and ~40 new videos a user a day, false
  // positives occur before the change (expected several dozen).
  CHECK(before.hits > 0);
  // The transition happened: every user ends on the new policy.
  CHECK(line_after(run.out, "  users on the new policy: ") ==
        std::to_string(kUsers) + " of " + std::to_string(kUsers));
}

}  // namespace

TEST_CASE("demo: the feed on LevelDB, with a policy change, and its files", "[demo]") {
  TempDir dir;
  const Run run = demo(small_args(dir.path));
  check_feed_numbers(run);
  CHECK(run.out.find("store: leveldb") != std::string::npos);

  // Per-day CSV: a header and one row per day, phases in order, repeats 0, the last
  // day with every user on the new policy.
  const auto days = read_csv(dir.path / "segbloom-demo.csv");
  REQUIRE(days.size() == kDays + 1);
  REQUIRE(days[0][0] == "day");
  REQUIRE(days[0][5] == "repeats");
  REQUIRE(days[0][14] == "users_new_policy");
  unsigned long long shown = 0;
  for (unsigned d = 0; d < kDays; ++d) {
    const auto& row = days[d + 1];
    REQUIRE(row.size() == days[0].size());
    CHECK(row[0] == std::to_string(d));
    CHECK(row[1] == (d < 5 ? "before" : d < 7 ? "during" : "after"));
    CHECK(row[5] == "0");
    shown += std::stoull(row[4]);
  }
  CHECK(std::to_string(shown) == line_after(run.out, "  videos shown: "));
  CHECK(days.back()[14] == std::to_string(kUsers));
  CHECK(days[1][12] == std::to_string(kUsers));  // day 0: all on the old policy

  // Curve CSV: 1/4, 1/2, 3/4, then every 1/2 up to 16 C. The segmented filter stays
  // within its target; the fixed one, past its design load, far above it.
  const auto curve = read_csv(dir.path / "segbloom-demo-fp.csv");
  REQUIRE(curve.size() == 1 + 3 + 31);
  REQUIRE(curve[0][3] == "segmented_false_positives");
  REQUIRE(curve[0][7] == "fixed_false_positives");
  for (std::size_t i = 1; i < curve.size(); ++i) {
    CHECK(std::stoull(curve[i][2]) == 20'000);
    CHECK(std::stoull(curve[i][3]) <= binomial_upper(20'000, kRate));
  }
  CHECK(std::stod(curve.back()[1]) == 16.0);
  CHECK(std::stoull(curve.back()[7]) > 10 * binomial_upper(20'000, kRate));
  CHECK(std::stoull(curve.back()[5]) >= 4);  // slices opened

  // SVG: one well-formed document with the three series.
  const std::string svg = read_file(dir.path / "segbloom-demo-fp.svg");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") == svg.size() - 7);
  CHECK(tags_balanced(svg));
  CHECK(svg.find("data-name=\"segmented filter") != std::string::npos);
  CHECK(svg.find("data-name=\"fixed-size Bloom filter") != std::string::npos);
  CHECK(svg.find("data-name=\"target p = 1 %\"") != std::string::npos);
  CHECK(svg.find("<polyline") != std::string::npos);
}

TEST_CASE("demo: the feed on Redis", "[demo][redis]") {
  const char* socket = std::getenv("SEGBLOOM_REDIS_SOCKET");
  if (socket == nullptr || *socket == '\0') {
    WARN("SEGBLOOM_REDIS_SOCKET not set (scripts/test.sh sets it): Redis demo skipped");
    return;
  }
  TempDir dir;
  auto args = small_args(dir.path);
  args.insert(args.end(), {"--redis", socket});
  const Run run = demo(args);
  check_feed_numbers(run);
  CHECK(run.out.find("store: redis") != std::string::npos);
}

TEST_CASE("demo: a store that fails is exit 4, one line with one prefix", "[demo]") {
  TempDir dir;
  auto args = small_args(dir.path);
  args.insert(args.end(), {"--db", "/dev/null/db"});  // LevelDB cannot create a directory there
  const Run run = demo(args);
  INFO(run.err);
  CHECK(run.code == 4);
  CHECK(run.err.rfind("segbloom: demo: ", 0) == 0);
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  CHECK(run.err.find("segbloom: ", 1) == std::string::npos);  // the store's own prefix dropped
}

TEST_CASE("demo: output files are never written through a name planted at the temporary name", "[demo]") {
  // The demo runs in this process, so its temporary names (.segbloom-PID-N.tmp, N = 0, 1,
  // ... until one is free) are known.
  TempDir dir;
  const std::string prefix = ".segbloom-" + std::to_string(::getpid()) + "-";
  const fs::path victim = dir.path / "victim.txt", csv = dir.path / "segbloom-demo.csv";
  {
    std::ofstream(victim) << "keep\n";
  }
  fs::create_symlink(victim, dir.path / (prefix + "0.tmp"));
  // A dangling link: following it would create the file it names.
  const fs::path created_through_link = dir.path / "created-through-link";
  fs::create_symlink(created_through_link, dir.path / (prefix + "1.tmp"));

  const Run run = demo(small_args(dir.path));
  INFO(run.err);
  REQUIRE(run.code == 0);
  CHECK(read_file(victim) == "keep\n");
  CHECK(!fs::exists(fs::symlink_status(created_through_link)));
  CHECK(fs::is_regular_file(fs::symlink_status(csv)));  // written, not a renamed link
  CHECK(read_csv(csv).size() == kDays + 1);
  CHECK(fs::is_regular_file(fs::symlink_status(dir.path / "segbloom-demo-fp.csv")));
  CHECK(fs::is_symlink(fs::symlink_status(dir.path / (prefix + "0.tmp"))));  // left alone
  CHECK(fs::is_symlink(fs::symlink_status(dir.path / (prefix + "1.tmp"))));
}

TEST_CASE("demo: a FIFO or device as an output is written into, never replaced", "[demo]") {
  TempDir dir;
  const fs::path fifo = dir.path / "days.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Opened for reading and writing: the demo's open for writing does not wait for a
  // reader, and its bytes (a few KB) stay in the pipe until read here.
  const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(fd >= 0);
  std::vector<std::string> args = small_args(dir.path);
  args.insert(args.end(), {"--csv", fifo.string()});
  const Run run = demo(args);
  INFO(run.err);
  CHECK(run.code == 0);
  std::string bytes;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) bytes.append(chunk, static_cast<std::size_t>(n));
  ::close(fd);
  CHECK(bytes.rfind("day,", 0) == 0);
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  // Anything else that is not a regular file is refused before the run.
  args = small_args(dir.path);
  args.insert(args.end(), {"--svg", dir.path.string()});
  const Run refused = demo(args);
  CHECK(refused.code == 4);
  CHECK(refused.err == "segbloom: demo: " + dir.path.string() + ": is a directory (not replaced)\n");
}

TEST_CASE("demo: bad arguments", "[demo]") {
  const std::vector<std::vector<std::string>> bad = {
      {"--users"},                    // no value
      {"--bogus", "1"},               // unknown
      {"--users", "-5"},              // not a whole number
      {"--users", "0"},               // out of range
      {"--rate", "2"},                // not a rate
      {"--new-rate", "abc"},
      {"--days", "10x"},
      {"--db", "/tmp/x", "--redis", "/tmp/y"},
      {"stray"},
  };
  for (const auto& args : bad) {
    const Run run = demo(args);
    INFO(args.front());
    CHECK(run.code == 2);
    CHECK(run.out.empty());
    CHECK(run.err.rfind("segbloom: demo: ", 0) == 0);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);  // one line
    CHECK(run.err.find("segbloom: ", 1) == std::string::npos);  // no library prefix inside
  }
  // A library refusal names the option that was out of range.
  const Run zero = demo({"--capacity", "0"});
  CHECK(zero.code == 2);
  CHECK(zero.err.find("capacity") != std::string::npos);
  CHECK(zero.err.find("segbloom: ", 1) == std::string::npos);
  // Output files in a directory that is not there: refused before the run (exit 4).
  TempDir dir;
  const Run nowhere = demo(small_args(dir.path / "missing"));
  CHECK(nowhere.code == 4);
  CHECK(nowhere.out.empty());
  CHECK(nowhere.err.find("is not a directory") != std::string::npos);
  const Run help = demo({"--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("usage: segbloom demo") != std::string::npos);
  CHECK(help.out.find("--transition-day") != std::string::npos);
}
