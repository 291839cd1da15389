// The `segbloom` command-line tool (src/cli), run as a process: outputs, exit codes,
// files it writes. SEGBLOOM_CLI is the tool's path (tests/meson.build).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "segbloom/counting_bloom_filter.hpp"
#include "segbloom/leveldb_compatible_filter.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "segbloom/serialization.hpp"
#include "segbloom/transition_filter.hpp"
#include "segbloom/transition_serialization.hpp"
#include "support/stats.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void spit(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// A temporary directory with the tool's files; removed at the end of the test.
class Workspace {
 public:
  Workspace() {
    std::string pattern = (fs::temp_directory_path() / "segbloom-cli-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
  }
  ~Workspace() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs `program args...` with `input` on standard input; captures both outputs.
  Result run_program(const std::string& program, const std::vector<std::string>& args,
                     const std::string& input = "") const {
    const fs::path in = dir_ / ".stdin", out = dir_ / ".stdout", err = dir_ / ".stderr";
    spit(in, input);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> argv_storage{program};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    Result result;
    if (rc != 0) return result;  // code -1: could not start
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = slurp(out);
    result.err = slurp(err);
    return result;
  }

  Result cli(const std::vector<std::string>& args, const std::string& input = "") const {
    return run_program(SEGBLOOM_CLI, args, input);
  }

 private:
  fs::path dir_;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// One "segbloom: ..." line, and the exit code expected.
void require_error(const Result& r, int code, const std::string& fragment) {
  INFO("stderr: " << r.err);
  CHECK(r.code == code);
  CHECK(r.err.rfind("segbloom: ", 0) == 0);
  CHECK(lines_of(r.err).size() == 1);
  CHECK(r.err.find(fragment) != std::string::npos);
  CHECK(r.out.empty());
}

// "N ids, M new, K already present" -> M.
std::uint64_t new_count(const std::string& out) {
  std::uint64_t total = 0, fresh = 0, present = 0;
  REQUIRE(std::sscanf(out.c_str(), "%" SCNu64 " ids, %" SCNu64 " new, %" SCNu64 " already present", &total, &fresh, &present) == 3);
  REQUIRE(total == fresh + present);
  return fresh;
}

// What `print_fields` (Python, over the parsed document `d`) prints for the JSON document
// `json`, through Python's own JSON parser; nothing (with a warning) where python3 is
// missing. A broken document must be refused by the same parser, so the check can fail.
// The bytes are decoded as strict UTF-8 (RFC 8259), not in the locale's encoding, which
// may let any byte through.
std::optional<std::string> python_json_fields(const Workspace& ws, const std::string& print_fields,
                                              const std::string& json) {
  const std::string script =
      "import json, sys\nd = json.loads(sys.stdin.buffer.read().decode('utf-8'))\n" + print_fields;
  const Result parsed = ws.run_program("python3", {"-c", script}, json);
  if (parsed.code == -1) {
    WARN("python3 not found: JSON parse check skipped");
    return std::nullopt;
  }
  INFO(parsed.err);
  REQUIRE(parsed.code == 0);
  CHECK(ws.run_program("python3", {"-c", script}, json.substr(0, json.size() / 2)).code != 0);
  return parsed.out;
}

std::string numbers(std::uint64_t from, std::uint64_t to) {  // "from\n...to-1\n"
  std::string text;
  for (std::uint64_t i = from; i < to; ++i) text += std::to_string(i) + "\n";
  return text;
}

}  // namespace

TEST_CASE("segbloom --help lists every command, and each command has --help", "[cli]") {
  Workspace ws;
  const Result top = ws.cli({"--help"});
  REQUIRE(top.code == 0);
  for (const std::string command : {"create", "add", "check", "info", "merge", "convert"}) {
    INFO(command);
    CHECK(top.out.find("\n  " + command + " ") != std::string::npos);
    const Result help = ws.cli({command, "--help"});
    CHECK(help.code == 0);
    CHECK(help.out.rfind("usage: segbloom " + command, 0) == 0);
  }
  CHECK(top.out.find("\n  demo ") != std::string::npos);
  const Result demo_help = ws.cli({"demo", "--help"});  // dispatched to run_demo (demo.hpp)
  CHECK(demo_help.code == 0);
  CHECK(demo_help.out.find("segbloom demo") != std::string::npos);
  CHECK(top.out.find("exit codes") != std::string::npos);
  // No command at all: the usage on standard error, bad usage.
  const Result none = ws.cli({});
  CHECK(none.code == 2);
  CHECK(none.err.find("usage: segbloom") != std::string::npos);
}

TEST_CASE("create, add and check: text ids from arguments", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("seen.sbf");
  const Result created = ws.cli({"create", f, "--capacity", "500", "--rate", "0.01"});
  REQUIRE(created.code == 0);
  CHECK(created.out.find("scalable filter") != std::string::npos);

  const Result added = ws.cli({"add", f, "video:a", "video:b", "video:c"});
  REQUIRE(added.code == 0);
  CHECK(added.out == "3 ids, 3 new, 0 already present\n");
  // video:d is not a false positive of the 3-item filter, so the count below is exact.
  REQUIRE(ws.cli({"check", f, "video:d"}).out == "video:d\tabsent\n");
  const Result again = ws.cli({"add", f, "video:b", "video:c", "video:d"});
  REQUIRE(again.code == 0);
  CHECK(again.out == "3 ids, 1 new, 2 already present\n");  // video:d; b and c were there already

  const Result checked = ws.cli({"check", f, "video:a", "video:d", "video:b"});
  REQUIRE(checked.code == 0);
  CHECK(checked.out == "video:a\tpresent\nvideo:d\tpresent\nvideo:b\tpresent\n");
  // The file is one envelope the library reads, with text keys: the id's bytes.
  const auto filter = segbloom::from_bytes<segbloom::ScalableBloomFilter>(slurp(f));
  CHECK(filter.contains(std::string_view("video:a")));
  CHECK(filter.contains(std::string_view("video:d")));
  CHECK(filter.options().capacity == 500);
  CHECK(filter.options().false_positive_rate == 0.01);
  // Ids starting with '-' after "--".
  REQUIRE(ws.cli({"add", f, "--", "-x"}).code == 0);
  CHECK(ws.cli({"check", f, "--", "-x"}).out == "-x\tpresent\n");
}

TEST_CASE("add and check: many --u64 ids from standard input, no false negatives", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("ids.sbf");
  REQUIRE(ws.cli({"create", f, "--capacity", "5k", "--rate", "0.001"}).code == 0);
  constexpr std::uint64_t kIds = 20'000;  // four times the capacity: the filter grows
  const Result added = ws.cli({"add", f, "--u64"}, numbers(0, kIds));
  REQUIRE(added.code == 0);
  const std::uint64_t fresh = new_count(added.out);
  CHECK(added.out.rfind(std::to_string(kIds) + " ids, ", 0) == 0);  // every id read
  CHECK(static_cast<double>(kIds - fresh) <= segbloom::test::binomial_upper(kIds, 0.001));
  CHECK(added.err.empty());  // not a terminal, no --progress: no progress line

  // Every id added is present.
  const Result present = ws.cli({"check", f, "--u64"}, numbers(0, kIds));
  REQUIRE(present.code == 0);
  const auto lines = lines_of(present.out);
  REQUIRE(lines.size() == kIds);
  for (std::uint64_t i = 0; i < kIds; ++i) REQUIRE(lines[i] == std::to_string(i) + "\tpresent");

  // Ids never added: absent, but for false positives. The answers must be exactly the
  // library's for the file (--u64 keys are the integers SeenStore uses). The rate bound
  // is only a wiring check (6 sigma over 20 000 ids lets ~3x the target through); the
  // filter's rate itself is checked tightly by check_rate in test_false_positives.cpp.
  const auto filter = segbloom::from_bytes<segbloom::ScalableBloomFilter>(slurp(f));
  const Result absent = ws.cli({"check", f, "--u64"}, numbers(1'000'000, 1'000'000 + kIds));
  REQUIRE(absent.code == 0);  // 0 even though ids are absent
  const auto absent_lines = lines_of(absent.out);
  REQUIRE(absent_lines.size() == kIds);
  std::uint64_t false_positives = 0;
  for (std::uint64_t i = 0; i < kIds; ++i) {
    const std::uint64_t id = 1'000'000 + i;
    REQUIRE(absent_lines[i] == std::to_string(id) + (filter.contains(id) ? "\tpresent" : "\tabsent"));
    false_positives += filter.contains(id);
  }
  CHECK(static_cast<double>(false_positives) <= segbloom::test::binomial_upper(kIds, 0.001));

  CHECK(filter.slice_count() > 1);
  for (std::uint64_t i = 0; i < kIds; i += 97) REQUIRE(filter.contains(i));
  CHECK(filter.size() == fresh);

  // CRLF and empty lines on standard input.
  REQUIRE(ws.cli({"add", f}, "alpha\r\n\r\n\nbeta\n").out == "2 ids, 2 new, 0 already present\n");
  CHECK(ws.cli({"check", f}, "alpha\nbeta\n").out == "alpha\tpresent\nbeta\tpresent\n");
}

TEST_CASE("counting, LevelDB-compatible and window filters through the tool", "[cli]") {
  Workspace ws;
  SECTION("counting: add counts, convert gives the plain filter") {
    const std::string c = ws.path("c.sbf"), p = ws.path("p.sbf");
    REQUIRE(ws.cli({"create", c, "--kind", "counting", "--capacity", "1000"}).code == 0);
    REQUIRE(ws.cli({"add", c, "x", "y"}).out == "2 ids, 2 new, 0 already present\n");
    REQUIRE(ws.cli({"add", c, "x"}).out == "1 ids, 0 new, 1 already present\n");
    const auto counting = segbloom::from_bytes<segbloom::CountingBloomFilter>(slurp(c));
    CHECK(counting.count_estimate(std::string_view("x")) >= 2);

    const Result converted = ws.cli({"convert", c, p, "--to", "scalable"});
    REQUIRE(converted.code == 0);
    CHECK(converted.out.find("converted") == 0);
    const auto plain = segbloom::from_bytes<segbloom::ScalableBloomFilter>(slurp(p));
    CHECK(plain == counting.to_plain());
    CHECK(ws.cli({"check", p, "x", "y"}).out == "x\tpresent\ny\tpresent\n");
    CHECK(fs::file_size(p) < fs::file_size(c));

    require_error(ws.cli({"convert", p, ws.path("q.sbf"), "--to", "counting"}), 5, "no conversion from scalable to counting");
    require_error(ws.cli({"convert", c, p, "--to", "scalable"}), 5, "exists");
    require_error(ws.cli({"convert", c, ws.path("q.sbf")}), 2, "--to");
    require_error(ws.cli({"convert", c, ws.path("q.sbf"), "--to", "bloomier"}), 2, "bloomier");
    CHECK(!fs::exists(ws.path("q.sbf")));
  }
  SECTION("leveldb: text keys are the bytes LevelDB hashes") {
    const std::string l = ws.path("l.sbf");
    REQUIRE(ws.cli({"create", l, "--kind", "leveldb", "--capacity", "1000", "--rate", "0.01"}).code == 0);
    REQUIRE(ws.cli({"add", l, "key1", "key2"}).code == 0);
    const auto filter = segbloom::from_bytes<segbloom::LevelDbCompatibleFilter>(slurp(l));
    CHECK(filter.contains(std::string_view("key1")));
    CHECK(filter.contains(std::string_view("key2")));
    CHECK(ws.cli({"info", l}).out.find("leveldb (segbloom::LevelDbCompatibleFilter") != std::string::npos);
  }
  SECTION("window: rotations shown by info") {
    const std::string w = ws.path("w.sbf");
    REQUIRE(ws.cli({"create", w, "--window", "3", "--capacity", "300", "--rate", "0.01"}).code == 0);
    REQUIRE(ws.cli({"add", w, "--u64"}, numbers(0, 2000)).code == 0);
    const Result info = ws.cli({"info", w});
    REQUIRE(info.code == 0);
    CHECK(info.out.find("window of 3 slices") != std::string::npos);
    const auto filter = segbloom::from_bytes<segbloom::ScalableBloomFilter>(slurp(w));
    CHECK(filter.rotations() > 0);
    CHECK(info.out.find("rotations:             " + std::to_string(filter.rotations()) + "\n") !=
          std::string::npos);
  }
}

TEST_CASE("create refuses bad options and existing files", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("f.sbf");
  require_error(ws.cli({"create", f, "--capacity", "12x"}), 2, "--capacity");
  require_error(ws.cli({"create", f, "--capacity", "99999999999999999999999"}), 2, "--capacity");
  require_error(ws.cli({"create", f, "--rate", "2"}), 2, "--rate 2 is out of range");
  require_error(ws.cli({"create", f, "--rate", "abc"}), 2, "--rate");
  // Range errors name the tool's options, never the library's Options fields.
  require_error(ws.cli({"create", f, "--capacity", "0"}), 2, "--capacity 0 is out of range");
  require_error(ws.cli({"create", f, "--capacity", "3", "--window", "4"}), 2, "at least --window (4)");
  require_error(ws.cli({"create", f, "--growth", "17"}), 2, "--growth 17 is out of range");
  require_error(ws.cli({"create", f, "--tightening", "1"}), 2, "--tightening 1 is out of range");
  require_error(ws.cli({"create", f, "--lifetime", "36600d"}), 2, "--lifetime (s) 3162240000");
  require_error(ws.cli({"create", f, "--capacity", "200G", "--rate", "1e-300"}), 2, "the options describe");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--rate", "2"}, {"--capacity", "0"}, {"--capacity", "3", "--window", "4"}, {"--growth", "17"},
           {"--tightening", "1"}, {"--lifetime", "36600d"}, {"--capacity", "200G", "--rate", "1e-300"},
           {"--kind", "leveldb", "--layout", "blocked"}}) {
    std::vector<std::string> command{"create", f};
    command.insert(command.end(), args.begin(), args.end());
    const Result r = ws.cli(command);
    INFO("stderr: " << r.err);
    CHECK(r.err.find("Options") == std::string::npos);
  }
  require_error(ws.cli({"create", f, "--window", "65"}), 2, "--window");
  require_error(ws.cli({"create", f, "--lifetime", "30x"}), 2, "--lifetime");
  require_error(ws.cli({"create", f, "--lifetime", "1d12"}), 2, "--lifetime");
  // Sums past 2^63 - 1 seconds, which an unsigned check once let wrap (to 1 s, or negative).
  require_error(ws.cli({"create", f, "--lifetime", "1000s18446744073709550617s"}), 2, "within 64 bits");
  require_error(ws.cli({"create", f, "--lifetime", "9223372036854775808s"}), 2, "within 64 bits");
  require_error(ws.cli({"create", f, "--kind", "cuckoo"}), 2, "cuckoo");
  require_error(ws.cli({"create", f, "--layout", "diagonal"}), 2, "diagonal");
  require_error(ws.cli({"create", f, "--kind", "leveldb", "--layout", "blocked"}), 2, "classic");
  require_error(ws.cli({"create", f, "--capacity"}), 2, "needs a value");
  require_error(ws.cli({"create"}), 2, "FILE");
  require_error(ws.cli({"create", f, ws.path("g.sbf")}), 2, "unexpected argument");
  CHECK(!fs::exists(f));

  REQUIRE(ws.cli({"create", f, "--rate", "0.5%", "--capacity", "2k", "--seed", "0x10"}).code == 0);
  const auto filter = segbloom::from_bytes<segbloom::ScalableBloomFilter>(slurp(f));
  CHECK(filter.options().false_positive_rate == Approx(0.005));
  CHECK(filter.options().capacity == 2000);
  CHECK(filter.options().seed == 16);
  const std::string before = slurp(f);
  require_error(ws.cli({"create", f, "--capacity", "10"}), 5, "exists");
  // Bad usage is exit 2 whether or not the file exists.
  require_error(ws.cli({"create", f, "--kind", "cuckoo"}), 2, "cuckoo");
  require_error(ws.cli({"create", f, "--rate", "2"}), 2, "--rate 2 is out of range");
  require_error(ws.cli({"create", f, "--kind", "leveldb", "--layout", "blocked"}), 2, "classic");
  CHECK(slurp(f) == before);
  REQUIRE(ws.cli({"create", f, "--capacity", "10", "--force"}).code == 0);
  CHECK(segbloom::from_bytes<segbloom::ScalableBloomFilter>(slurp(f)).options().capacity == 10);
}

TEST_CASE("create --lifetime sets the slice lifetime", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("timed.sbf");
  REQUIRE(ws.cli({"create", f, "--lifetime", "30d"}).code == 0);
  const auto filter = segbloom::from_bytes<segbloom::ScalableBloomFilter>(slurp(f));
  CHECK(filter.options().slice_lifetime == std::chrono::seconds(30 * 86400));
  CHECK(ws.cli({"info", f}).out.find("slice lifetime:        30d\n") != std::string::npos);
  REQUIRE(ws.cli({"create", f, "--lifetime", "1d12h", "--force"}).code == 0);
  CHECK(segbloom::from_bytes<segbloom::ScalableBloomFilter>(slurp(f)).options().slice_lifetime ==
        std::chrono::seconds(36 * 3600));
  REQUIRE(ws.cli({"add", f, "a", "b"}).code == 0);
  CHECK(ws.cli({"check", f, "a", "b"}).out == "a\tpresent\nb\tpresent\n");
}

namespace {
// How many lines of `text` contain `what`.
std::size_t lines_with(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (const std::string& line : lines_of(text)) count += line.find(what) != std::string::npos;
  return count;
}
}  // namespace

TEST_CASE("info prints the filter's state as text and as valid JSON", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("info \"quoted\".sbf");  // a name JSON must escape
  REQUIRE(ws.cli({"create", f, "--kind", "counting", "--capacity", "1000", "--rate", "0.01"}).code == 0);
  REQUIRE(ws.cli({"add", f, "--u64"}, numbers(0, 3000)).code == 0);
  const auto filter = segbloom::from_bytes<segbloom::CountingBloomFilter>(slurp(f));
  REQUIRE(filter.slice_count() >= 2);

  const Result text = ws.cli({"info", f});
  REQUIRE(text.code == 0);
  CHECK(text.out.find("kind:                  counting") != std::string::npos);
  CHECK(text.out.find("items:                 " + std::to_string(filter.size()) + "\n") != std::string::npos);
  CHECK(text.out.find("slices:                " + std::to_string(filter.slice_count()) + "\n") != std::string::npos);
  CHECK(text.out.find("file bytes:            " + std::to_string(fs::file_size(f)) + "\n") != std::string::npos);

  const Result json = ws.cli({"info", f, "--json"});
  REQUIRE(json.code == 0);
  CHECK(json.out.find("\"kind\": \"counting\"") != std::string::npos);
  CHECK(json.out.find("\"items\": " + std::to_string(filter.size()) + ",") != std::string::npos);
  // Parsed back by Python's JSON parser, with its values checked.
  const auto fields = python_json_fields(
      ws,
      "print(d['file'], d['kind'], d['options']['capacity'], d['items'], d['slice_count'],\n"
      "      len(d['slices']), sum(s['items'] for s in d['slices']), d['file_bytes'], sep='|')\n",
      json.out);
  if (fields) {
    const std::string n = std::to_string(filter.slice_count());
    CHECK(*fields == f + "|counting|1000|" + std::to_string(filter.size()) + "|" + n + "|" + n + "|" +
                         std::to_string(filter.size()) + "|" + std::to_string(fs::file_size(f)) + "\n");
  }
  require_error(ws.cli({"info", f, "--yaml"}), 2, "--yaml");
  require_error(ws.cli({"info"}), 2, "FILE");

  // Slices that probe by triple hashing (sizing.hpp) say so; the others do not.
  const std::string small = ws.path("small.sbf");
  REQUIRE(ws.cli({"create", small, "--capacity", "100", "--rate", "0.001", "--window", "4"}).code == 0);
  REQUIRE(ws.cli({"add", small, "--u64"}, numbers(0, 60)).code == 0);
  const auto small_filter = segbloom::from_bytes<segbloom::ScalableBloomFilter>(slurp(small));
  REQUIRE(small_filter.slices().front().shape().probing == segbloom::Probing::triple_hashing);
  const Result small_text = ws.cli({"info", small});
  REQUIRE(small_text.code == 0);
  CHECK(lines_with(small_text.out, "triple hashing") == small_filter.slice_count());
  CHECK(lines_with(text.out, "triple hashing") == 0);
  const Result small_json = ws.cli({"info", small, "--json"});
  REQUIRE(small_json.code == 0);
  CHECK(lines_with(small_json.out, "\"triple_hashing\": true") == small_filter.slice_count());
  CHECK(lines_with(json.out, "\"triple_hashing\": false") == filter.slice_count());
}

TEST_CASE("info --json is valid UTF-8 whatever the file name's bytes", "[cli]") {
  Workspace ws;
  // Valid UTF-8 (2-, 3- and 4-byte sequences) is copied as is.
  const std::string utf8 = ws.path("caf\xc3\xa9-\xe6\x97\xa5-\xf0\x9f\x98\x80.sbf");
  // Latin-1 \xe9; an overlong '/' (c0 af); a surrogate U+D800 (ed a0 80); U+110000
  // (f4 90 80 80); a 3-byte sequence cut short (e2 82) before ".sbf". Each invalid byte
  // becomes U+FFFD.
  const std::string latin1 = ws.path("caf\xe9 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82.sbf");
  const std::string replaced = ws.path(
      "caf\\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd.sbf");
  const std::string replaced_utf8 = ws.path(
      "caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
      "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd.sbf");
  for (const auto& [name, in_json, parsed] :
       {std::tuple{utf8, utf8, utf8}, std::tuple{latin1, replaced, replaced_utf8}}) {
    INFO(in_json);
    REQUIRE(ws.cli({"create", name, "--capacity", "100"}).code == 0);
    const Result json = ws.cli({"info", name, "--json"});
    REQUIRE(json.code == 0);
    CHECK(json.out.find("\"file\": \"" + in_json + "\",\n") != std::string::npos);
    const auto file = python_json_fields(ws, "sys.stdout.buffer.write(d['file'].encode('utf-8'))\n", json.out);
    if (file) CHECK(*file == parsed);
    // The text output shows the name's bytes as they are.
    CHECK(ws.cli({"info", name}).out.find("file:                  " + name + "\n") != std::string::npos);
  }
}

TEST_CASE("merge writes the union and refuses what does not merge", "[cli]") {
  Workspace ws;
  const std::string a = ws.path("a.sbf"), b = ws.path("b.sbf"), c = ws.path("c.sbf"), out = ws.path("out.sbf");
  for (const auto& f : {a, b, c}) REQUIRE(ws.cli({"create", f, "--capacity", "10k", "--rate", "0.01"}).code == 0);
  REQUIRE(ws.cli({"add", a, "--u64"}, numbers(0, 2000)).code == 0);
  REQUIRE(ws.cli({"add", b, "--u64"}, numbers(2000, 4000)).code == 0);
  REQUIRE(ws.cli({"add", c, "--u64"}, numbers(4000, 6000)).code == 0);
  const Result merged = ws.cli({"merge", out, a, b, c});
  REQUIRE(merged.code == 0);
  CHECK(merged.out.find("merged 3 filters into") == 0);
  const Result checked = ws.cli({"check", out, "--u64"}, numbers(0, 6000));
  REQUIRE(checked.code == 0);
  const auto lines = lines_of(checked.out);
  REQUIRE(lines.size() == 6000);
  for (std::size_t i = 0; i < lines.size(); ++i) REQUIRE(lines[i] == std::to_string(i) + "\tpresent");

  SECTION("refusals") {
    const std::string seeded = ws.path("seeded.sbf"), counting = ws.path("counting.sbf"),
                      full1 = ws.path("full1.sbf"), full2 = ws.path("full2.sbf");
    REQUIRE(ws.cli({"create", seeded, "--capacity", "10k", "--rate", "0.01", "--seed", "7"}).code == 0);
    require_error(ws.cli({"merge", ws.path("x.sbf"), a, seeded}), 5, "seed 0 vs 7");
    REQUIRE(ws.cli({"create", counting, "--kind", "counting", "--capacity", "10k", "--rate", "0.01"}).code == 0);
    require_error(ws.cli({"merge", ws.path("x.sbf"), a, counting}), 5, "one kind");
    for (const auto& f : {full1, full2}) {
      REQUIRE(ws.cli({"create", f, "--capacity", "1000", "--rate", "0.01"}).code == 0);
    }
    REQUIRE(ws.cli({"add", full1, "--u64"}, numbers(0, 800)).code == 0);
    REQUIRE(ws.cli({"add", full2, "--u64"}, numbers(800, 1600)).code == 0);
    require_error(ws.cli({"merge", ws.path("x.sbf"), full1, full2}), 5, "hold too much together");
    require_error(ws.cli({"merge", out, a, b}), 5, "exists");
    require_error(ws.cli({"merge", ws.path("x.sbf"), a}), 2, "OUT A B");
    CHECK(!fs::exists(ws.path("x.sbf")));
    // --force replaces OUT, which may be an input.
    REQUIRE(ws.cli({"merge", a, a, b, "--force"}).code == 0);
    CHECK(ws.cli({"check", a, "--u64", "3999"}).out == "3999\tpresent\n");
  }
}

TEST_CASE("bad files: truncated, foreign, missing; bad ids and options", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("f.sbf");
  REQUIRE(ws.cli({"create", f}).code == 0);
  REQUIRE(ws.cli({"add", f, "a"}).code == 0);
  const std::string blob = slurp(f);

  const std::string truncated = ws.path("truncated.sbf");
  spit(truncated, blob.substr(0, blob.size() - 10));
  require_error(ws.cli({"check", truncated, "a"}), 3, "truncated");
  spit(truncated, blob.substr(0, 10));
  require_error(ws.cli({"info", truncated}), 3, "truncated");
  const std::string flipped = ws.path("flipped.sbf");
  std::string corrupt = blob;
  corrupt[corrupt.size() / 2] ^= 0x10;
  spit(flipped, corrupt);
  require_error(ws.cli({"add", flipped, "b"}), 3, "not a valid segbloom filter file");
  CHECK(slurp(flipped) == corrupt);  // not rewritten

  const std::string foreign = ws.path("notes.txt");
  spit(foreign, "this is a text file, not a segbloom filter at all\n");
  require_error(ws.cli({"info", foreign}), 3, "not a valid segbloom filter file");
  const std::string empty = ws.path("empty.sbf");
  spit(empty, "");
  require_error(ws.cli({"check", empty, "a"}), 3, "truncated");

  require_error(ws.cli({"check", ws.path("missing.sbf"), "a"}), 4, "missing.sbf");
  require_error(ws.cli({"add", ws.path("no/such/dir.sbf"), "a"}), 4, "dir.sbf");
  require_error(ws.cli({"info", ws.path("")}), 4, "directory");
  // Only regular files: /dev/zero would be read for ever, a FIFO block (and add rename over it).
  require_error(ws.cli({"info", "/dev/zero"}), 4, "not a regular file");
  // A read that fails mid-file is an I/O error, not a truncated file: /proc/self/mem is a
  // regular file of size 0 whose read at offset 0 (never mapped) fails with EIO.
  if (::access("/proc/self/mem", R_OK) == 0) {
    const Result unreadable = ws.cli({"info", "/proc/self/mem"});
    require_error(unreadable, 4, "/proc/self/mem: cannot read: ");
    CHECK(unreadable.err.find(std::strerror(EIO)) != std::string::npos);
  } else {
    WARN("/proc/self/mem not readable here: read-error check skipped");
  }
  const std::string fifo = ws.path("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  require_error(ws.cli({"add", fifo, "a"}), 4, "not a regular file");
  struct stat st {};
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));  // not replaced

  require_error(ws.cli({"frobnicate"}), 2, "unknown command 'frobnicate'");
  require_error(ws.cli({"add", f, "--bogus", "a"}), 2, "unknown option '--bogus'");
  require_error(ws.cli({"check", f, "-x"}), 2, "unknown option '-x'");
  require_error(ws.cli({"check", f, "--u64", "12", "twelve"}), 2, "'twelve'");
  require_error(ws.cli({"add", f, "--u64", "-5"}), 2, "unknown option");
  require_error(ws.cli({"add", f, "--u64", "18446744073709551616"}), 2, "18446744073709551616");
  require_error(ws.cli({"add", f, "--u64=yes", "1"}), 2, "takes no value");
  CHECK(slurp(f) == blob);  // failed adds wrote nothing
  CHECK(ws.cli({"check", f, "a"}).out == "a\tpresent\n");
}

TEST_CASE("add --progress draws the progress line on standard error", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("p.sbf");
  REQUIRE(ws.cli({"create", f, "--capacity", "100k"}).code == 0);
  const Result forced = ws.cli({"add", f, "--u64", "--progress"}, numbers(0, 50'000));
  REQUIRE(forced.code == 0);
  CHECK(new_count(forced.out) > 49'000);
  // At least one line "\r<n> ids, <rate> ids/s", and cleared at the end. --progress draws
  // from the first update, which `add` makes after its first batch: kBatch = 4096 ids
  // (src/cli/add_check_commands.cpp).
  CHECK(forced.err.find("\r4096 ids") == 0);
  CHECK(forced.err.find(" ids/s") != std::string::npos);
  REQUIRE(!forced.err.empty());
  CHECK(forced.err.back() == '\r');
  CHECK(forced.err.find('\n') == std::string::npos);
  // Without --progress and without a terminal: nothing.
  const Result quiet = ws.cli({"add", f, "--u64"}, numbers(50'000, 60'000));
  REQUIRE(quiet.code == 0);
  CHECK(quiet.err.empty());
}

TEST_CASE("transition pairs: check, add and info read both filters", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("pair.sbf");
  segbloom::Options old_options;
  old_options.capacity = 1000;
  old_options.false_positive_rate = 0.01;
  segbloom::ScalableBloomFilter old_filter(old_options);
  for (std::uint64_t i = 0; i < 500; ++i) old_filter.insert(i);
  segbloom::Options next = old_options;
  next.false_positive_rate = 0.001;
  // The system clock: the tool loads with it, and the 7-day period is not over.
  const auto pair = segbloom::TransitionFilter<segbloom::ScalableBloomFilter>::begin(
      std::move(old_filter), next, std::chrono::hours(24 * 7));
  spit(f, segbloom::to_bytes(pair));

  const Result checked = ws.cli({"check", f, "--u64"}, numbers(0, 500));
  REQUIRE(checked.code == 0);
  for (const auto& line : lines_of(checked.out)) REQUIRE(line.ends_with("\tpresent"));
  CHECK(lines_of(checked.out).size() == 500);

  const Result added = ws.cli({"add", f, "new-1", "new-2"});
  REQUIRE(added.code == 0);
  CHECK(added.out == "2 ids, 2 new, 0 already present\n");
  const auto loaded = segbloom::from_bytes<segbloom::TransitionFilter<segbloom::ScalableBloomFilter>>(slurp(f));
  REQUIRE(loaded.in_transition());
  CHECK(loaded.current().contains(std::string_view("new-1")));  // writes go to the current one
  CHECK(loaded.current().size() == 2);
  CHECK(loaded.previous()->size() == pair.previous()->size());

  const Result text = ws.cli({"info", f});
  REQUIRE(text.code == 0);
  CHECK(text.out.find("kind:                  transition-scalable") != std::string::npos);
  CHECK(text.out.find("in transition:         yes") != std::string::npos);
  CHECK(text.out.find("transition period:     7d\n") != std::string::npos);
  CHECK(text.out.find("previous filter:\n") != std::string::npos);
  CHECK(text.out.find("target rate:           0.001\n") != std::string::npos);
  CHECK(text.out.find("target rate:           0.01\n") != std::string::npos);

  const Result json = ws.cli({"info", f, "--json"});
  REQUIRE(json.code == 0);
  const auto fields = python_json_fields(
      ws,
      "print(d['kind'], d['in_transition'], d['current']['items'], d['previous']['items'],\n"
      "      d['previous']['options']['false_positive_rate'], sep='|')\n",
      json.out);
  if (fields) {
    CHECK(*fields == "transition-scalable|True|2|" + std::to_string(pair.previous()->size()) + "|0.01\n");
  }
  require_error(ws.cli({"merge", ws.path("m.sbf"), f, f}), 5, "transition");
  require_error(ws.cli({"convert", f, ws.path("m.sbf"), "--to", "scalable"}), 5, "no conversion");
}

TEST_CASE("files named up to NAME_MAX are created and updated; errors name the file", "[cli]") {
  Workspace ws;
  // A temporary name of FILE plus a suffix would not fit beside a name of 255 bytes.
  const std::string f = ws.path(std::string(251, 'n') + ".sbf");
  REQUIRE(ws.cli({"create", f, "--capacity", "100"}).code == 0);
  const Result added = ws.cli({"add", f, "x"});
  INFO(added.err);
  REQUIRE(added.code == 0);
  CHECK(ws.cli({"check", f, "x"}).out == "x\tpresent\n");
  // An error names the user's file, not the temporary file beside it.
  const std::string nowhere = ws.path("nodir/x.sbf");
  const Result r = ws.cli({"create", nowhere});
  require_error(r, 4, nowhere + ": cannot create: ");
  CHECK(r.err.find(".tmp") == std::string::npos);
  std::size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(ws.path(""))) entries += entry.path().filename().string()[0] != '.';
  CHECK(entries == 1);  // no temporary file left behind
}

TEST_CASE("create, merge and convert never replace a FIFO or device, even with --force", "[cli]") {
  Workspace ws;
  const std::string counting = ws.path("c.sbf"), fifo = ws.path("fifo");
  REQUIRE(ws.cli({"create", counting, "--kind", "counting", "--capacity", "100"}).code == 0);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto still_a_fifo = [&] {
    struct stat st {};
    return ::lstat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
  };
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"create", fifo, "--force"}, {"create", fifo},
           {"merge", fifo, counting, counting, "--force"},
           {"convert", counting, fifo, "--to", "scalable", "--force"}}) {
    INFO(args[0] << " " << args.back());
    require_error(ws.cli(args), 4, fifo + ": not a regular file (not replaced)");
    CHECK(still_a_fifo());
  }
  // A symbolic link is replaced, as the README says (the link, not the file it names).
  const std::string target = ws.path("target.sbf"), link = ws.path("link.sbf");
  spit(target, "keep");
  fs::create_symlink(target, link);
  REQUIRE(ws.cli({"create", link, "--force"}).code == 0);
  CHECK(fs::is_regular_file(fs::symlink_status(link)));
  CHECK(slurp(target) == "keep");
}

TEST_CASE("add keeps the file's mode and owner, and refuses a read-only file", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("f.sbf");
  REQUIRE(ws.cli({"create", f, "--capacity", "100"}).code == 0);
  REQUIRE(::chmod(f.c_str(), 0640) == 0);
  const bool root = ::geteuid() == 0;
  if (root) REQUIRE(::chown(f.c_str(), 65534, 65534) == 0);  // nobody
  REQUIRE(ws.cli({"add", f, "a"}).code == 0);
  struct stat st {};
  REQUIRE(::stat(f.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
  if (root) {
    CHECK(st.st_uid == 65534);
    CHECK(st.st_gid == 65534);
  }
  // Read-only: no write bit (also for root, whom access() lets write anything).
  REQUIRE(::chmod(f.c_str(), 0444) == 0);
  const std::string before = slurp(f);
  require_error(ws.cli({"add", f, "b"}), 4, f + ": read-only (not changed)");
  CHECK(slurp(f) == before);
  REQUIRE(::stat(f.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0444);
  // --force replaces a file (a new filter, not an update): its mode is kept too.
  REQUIRE(ws.cli({"create", f, "--capacity", "100", "--force"}).code == 0);
  REQUIRE(::stat(f.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0444);
}

namespace {

// Starts the tool with the given descriptors as standard output and error (standard input
// empty) and the signals the test sends at their default actions.
pid_t spawn_cli(const std::vector<std::string>& args, int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> storage{SEGBLOOM_CLI};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, SEGBLOOM_CLI, &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  REQUIRE(rc == 0);
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Names in `dir` that start with '.' (the tool's temporary files; the workspace's own
// .stdin/.stdout/.stderr excepted).
std::vector<std::string> hidden_files(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name[0] == '.' && name != ".stdin" && name != ".stdout" && name != ".stderr") names.push_back(name);
  }
  return names;
}

}  // namespace

TEST_CASE("a command whose summary cannot be written leaves the file unchanged", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("f.sbf");
  REQUIRE(ws.cli({"create", f, "--kind", "counting", "--capacity", "100"}).code == 0);
  const std::string before = slurp(f);
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (full < 0) {
    WARN("/dev/full not available: check skipped");
    return;
  }
  const int err = ::open(ws.path("err.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(err >= 0);
  // A counting filter: an add retried after a non-zero exit must not count its ids twice.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"add", f, "a"}, {"create", f, "--capacity", "7", "--force"},
           {"convert", f, f, "--to", "scalable", "--force"}, {"merge", f, f, f, "--force"}}) {
    INFO(args[0]);
    const int status = wait_status(spawn_cli(args, full, err));
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 4);
    CHECK(slurp(f) == before);
  }
  ::close(full);
  ::close(err);
  CHECK(slurp(ws.path("err.txt")).find("cannot write to standard output (" + f + " not changed)") !=
        std::string::npos);
  CHECK(hidden_files(ws.path("")).empty());
}

TEST_CASE("a write killed by a signal or stopped by ulimit -f leaves no temporary file", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("f.sbf");
  REQUIRE(ws.cli({"create", f, "--capacity", "100"}).code == 0);
  const std::string before = slurp(f);
  const int err = ::open(ws.path("err.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(err >= 0);
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
    INFO("signal " << signal);
    // add prints its summary before the rename; with standard output a full pipe it
    // blocks there, its temporary file complete, until the signal comes.
    int pipe_fds[2];
    REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
    REQUIRE(::fcntl(pipe_fds[1], F_SETFL, O_NONBLOCK) == 0);
    const std::string filler(4096, 'x');
    while (::write(pipe_fds[1], filler.data(), filler.size()) > 0) {
    }
    REQUIRE(::fcntl(pipe_fds[1], F_SETFL, 0) == 0);  // shared with the child: it must block
    const pid_t pid = spawn_cli({"add", f, "a"}, pipe_fds[1], err);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (hidden_files(ws.path("")).empty() && std::chrono::steady_clock::now() < deadline) {
      ::usleep(1000);
    }
    REQUIRE(hidden_files(ws.path("")).size() == 1);  // the write is under way
    ::kill(pid, signal);
    const int status = wait_status(pid);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal);
    CHECK(hidden_files(ws.path("")).empty());
    CHECK(slurp(f) == before);
  }
  {
    // Standard output a pipe nobody reads: SIGPIPE at the summary, before the rename.
    int pipe_fds[2];
    REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
    ::close(pipe_fds[0]);
    const int status = wait_status(spawn_cli({"add", f, "a"}, pipe_fds[1], err));
    ::close(pipe_fds[1]);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGPIPE);
    CHECK(hidden_files(ws.path("")).empty());
    CHECK(slurp(f) == before);
  }
  ::close(err);
  // A file larger than `ulimit -f` allows (32 KiB): EFBIG, exit 4, not SIGXFSZ.
  const std::string big = ws.path("big.sbf");
  const Result r = ws.run_program("sh", {"-c", "ulimit -f 64 && exec \"$0\" \"$@\"", SEGBLOOM_CLI, "create", big,
                                         "--capacity", "1M"});
  require_error(r, 4, big + ": cannot write: " + std::strerror(EFBIG));
  CHECK(!fs::exists(big));
  CHECK(hidden_files(ws.path("")).empty());
}

// AddressSanitizer reserves terabytes of address space for its shadow memory at start-up, so
// a tool built with it cannot run under an address-space limit (ulimit -v).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

TEST_CASE("a large file is refused by its header before it is read", "[cli]") {
  Workspace ws;
  // Sparse files under a 1 GB address-space limit: the tool reserved the whole file first,
  // and ran out of memory (exit 1) instead of reading the 22-byte header. Under
  // AddressSanitizer without the limit: the refusals' exit codes and messages still count.
  if (kAddressSanitizer) WARN("built with AddressSanitizer: no address-space limit, no 64 GB case");
  const auto run_limited = [&](const std::vector<std::string>& args) {
    std::vector<std::string> command{"-c", kAddressSanitizer ? "exec \"$0\" \"$@\""
                                                             : "ulimit -v 1000000 && exec \"$0\" \"$@\"",
                                     SEGBLOOM_CLI};
    command.insert(command.end(), args.begin(), args.end());
    return ws.run_program("sh", command);
  };
  const std::string foreign = ws.path("foreign.bin");
  spit(foreign, "not a filter");
  fs::resize_file(foreign, std::uint64_t{3} << 30);
  require_error(run_limited({"info", foreign}), 3, foreign + ": not a valid segbloom filter file: wrong magic");

  // A valid filter with 3 GB after it: refused by the length its header declares.
  const std::string f = ws.path("f.sbf");
  REQUIRE(ws.cli({"create", f, "--capacity", "100"}).code == 0);
  std::string header = slurp(f).substr(0, 22);
  const std::uint64_t size = fs::file_size(f);
  fs::resize_file(f, size + (std::uint64_t{3} << 30));
  require_error(run_limited({"check", f, "a"}), 3,
                std::to_string(std::uint64_t{3} << 30) + " unexpected bytes after the payload");

  // A header that declares 64 GB, and a file that long: memory runs out, and the message
  // names the file.
  if (kAddressSanitizer) return;
  const std::uint64_t payload = std::uint64_t{64} << 30;
  for (int i = 0; i < 8; ++i) header[6 + i] = static_cast<char>(payload >> (8 * i));
  const std::string huge = ws.path("huge.sbf");
  spit(huge, header);
  fs::resize_file(huge, 22 + payload);
  require_error(run_limited({"info", huge}), 1, huge + ": out of memory");
}

TEST_CASE("messages: 64-bit overflow, exact integer ranges, the tool's option names", "[cli]") {
  Workspace ws;
  const std::string f = ws.path("f.sbf");
  for (const std::string too_large : {"99999999999999999999", "20000000000G", "0x10000000000000000"}) {
    require_error(ws.cli({"create", f, "--capacity", too_large}), 2,
                  "--capacity: '" + too_large + "' is out of the 64-bit range (at most 18446744073709551615)");
  }
  // Printed with %g, 2^48 + 1 read as 2.81475e+14, which looks like the bound itself.
  require_error(ws.cli({"create", f, "--capacity", "281474976710657"}), 2,
                "--capacity 281474976710657 is out of range; allowed: [1, 2^48]");
  require_error(ws.cli({"create", f, "--lifetime", "5300w"}), 2, "--lifetime (s) 3205440000 is out of range");
  // A growing filter at its 64 slices names create's options, not the library's fields.
  REQUIRE(ws.cli({"create", f, "--capacity", "1", "--growth", "1"}).code == 0);
  const Result full = ws.cli({"add", f, "--u64"}, numbers(0, 100000));
  require_error(full, 5, "reached 64 slices; create it again with a larger --capacity or --growth (nothing written)");
  CHECK(full.err.find("Options") == std::string::npos);
}
