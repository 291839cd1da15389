// The CLI's whole-or-nothing writer (src/cli/atomic_file.cpp), in-process: a new file takes
// its name without replacing one that exists, by RENAME_NOREPLACE or, where a file system
// lacks it, by a hard link; both ways are run here on the test's file system.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../src/cli/atomic_file.hpp"
#include "../src/cli/exit_codes.hpp"

namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_all(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("segbloom-atomic-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("a new file takes its name only where none exists, by either way", "[cli]") {
  using segbloom::cli::move_into_place_without_replacing;
  const TempDir dir;
  for (const bool try_rename : {true, false}) {
    INFO("try_rename " << try_rename);
    const fs::path temp = dir.path / "f.tmp", target = dir.path / "f";
    fs::remove(target);

    write_all(temp, "new");
    move_into_place_without_replacing(temp.string(), target.string(), try_rename);
    CHECK(read_all(target) == "new");
    CHECK(!fs::exists(temp));

    write_all(temp, "newer");
    CHECK_THROWS_AS(move_into_place_without_replacing(temp.string(), target.string(), try_rename),
                    segbloom::cli::RefusedError);
    CHECK(read_all(target) == "new");  // the existing file is left as it was
    CHECK(!fs::exists(temp));

    write_all(temp, "lost");
    const fs::path nowhere = dir.path / "missing-dir" / "f";
    CHECK_THROWS_AS(move_into_place_without_replacing(temp.string(), nowhere.string(), try_rename),
                    segbloom::cli::IoError);
    CHECK(!fs::exists(temp));
    CHECK(!fs::exists(nowhere));
  }
}

TEST_CASE("write_file_atomically refuses an existing file unless told to replace it", "[cli]") {
  using segbloom::cli::write_file_atomically;
  const TempDir dir;
  const fs::path target = dir.path / "g";
  write_file_atomically(target.string(), "one", false);
  CHECK(read_all(target) == "one");
  CHECK_THROWS_AS(write_file_atomically(target.string(), "two", false), segbloom::cli::RefusedError);
  CHECK(read_all(target) == "one");
  write_file_atomically(target.string(), "three", true);
  CHECK(read_all(target) == "three");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path)) ++entries;
  CHECK(entries == 1);  // no temporary file left behind
}

TEST_CASE("write_file_atomically flushes the directory after the rename", "[cli]") {
  using segbloom::cli::write_file_atomically;
  namespace detail = segbloom::cli::detail;
  const TempDir dir;
  std::vector<std::string> flushed;
  detail::after_directory_flush_for_tests = [&](const std::string& d) { flushed.push_back(d); };
  const fs::path target = dir.path / "h";
  write_file_atomically(target.string(), "new", false);    // RENAME_NOREPLACE (or a link)
  write_file_atomically(target.string(), "newer", true);   // rename over it
  detail::after_directory_flush_for_tests = nullptr;
  CHECK(read_all(target) == "newer");
  CHECK(flushed == std::vector<std::string>{dir.path.string(), dir.path.string()});
  CHECK(segbloom::cli::directory_of("x.sbf") == ".");
  CHECK(segbloom::cli::directory_of("/x.sbf") == "/");
  CHECK(segbloom::cli::directory_of("a/b/x.sbf") == "a/b");
}
