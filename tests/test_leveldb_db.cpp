// End to end with a real LevelDB database: tables written with segbloom's policy are read
// with LevelDB's own policy (their filters in use), and the reverse.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <unistd.h>

#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/options.h>
#include <leveldb/slice.h>

#include "segbloom/leveldb_policy.hpp"
#include "support/stats.hpp"

namespace {

constexpr int kKeys = 100'000;
constexpr int kAbsent = 20'000;

// Present keys are even, absent keys odd, so an absent key falls inside the key range of
// some table and LevelDB has to ask that table's filter.
std::string key_of(int i) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "key%09d", i);
  return buffer;
}

// Wraps a policy under the same name (so LevelDB uses the stored filters) and counts
// KeyMayMatch calls and matches.
class CountingPolicy final : public leveldb::FilterPolicy {
 public:
  explicit CountingPolicy(const leveldb::FilterPolicy& inner) : inner_(inner) {}
  const char* Name() const override { return inner_.Name(); }
  void CreateFilter(const leveldb::Slice* keys, int n, std::string* dst) const override {
    created_ += 1;
    inner_.CreateFilter(keys, n, dst);
  }
  bool KeyMayMatch(const leveldb::Slice& key, const leveldb::Slice& filter) const override {
    const bool match = inner_.KeyMayMatch(key, filter);
    calls_ += 1;
    matches_ += match;
    return match;
  }
  long created() const { return created_; }
  long calls() const { return calls_; }
  long matches() const { return matches_; }
  void reset() { created_ = calls_ = matches_ = 0; }

 private:
  const leveldb::FilterPolicy& inner_;
  mutable std::atomic<long> created_{0};
  mutable std::atomic<long> calls_{0};
  mutable std::atomic<long> matches_{0};
};

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("segbloom-leveldb-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::unique_ptr<leveldb::DB> open(const std::string& path, const leveldb::FilterPolicy* policy) {
  leveldb::Options options;
  options.create_if_missing = true;
  options.filter_policy = policy;
  options.write_buffer_size = 256 * 1024;  // several tables, written while we write
  leveldb::DB* db = nullptr;
  const leveldb::Status status = leveldb::DB::Open(options, path, &db);
  INFO(status.ToString());
  REQUIRE(status.ok());
  return std::unique_ptr<leveldb::DB>(db);
}

// Writes the keys with `writer`, compacts everything into tables (so no table is left to
// be written at reopen with the other policy), closes, reopens with `reader`, and checks
// every key and the filtering of absent keys.
void round_trip(const leveldb::FilterPolicy& writer_policy,
                const leveldb::FilterPolicy& reader_policy) {
  TempDir dir;
  CountingPolicy writer(writer_policy);
  {
    auto db = open(dir.str(), &writer);
    for (int i = 0; i < kKeys; ++i) {
      REQUIRE(db->Put(leveldb::WriteOptions(), key_of(2 * i), "value" + std::to_string(i)).ok());
    }
    db->CompactRange(nullptr, nullptr);
  }
  CHECK(writer.created() > 0);  // the tables carry filters made by the writer

  CountingPolicy reader(reader_policy);
  auto db = open(dir.str(), &reader);
  CHECK(reader.created() == 0);  // nothing rewritten at reopen
  std::string value;
  for (int i = 0; i < kKeys; ++i) {
    const leveldb::Status status = db->Get(leveldb::ReadOptions(), key_of(2 * i), &value);
    REQUIRE(status.ok());
    REQUIRE(value == "value" + std::to_string(i));
  }
  // No false negatives: every present key's filter matched.
  CHECK(reader.matches() >= kKeys);
  reader.reset();
  for (int i = 0; i < kAbsent; ++i) {
    REQUIRE(db->Get(leveldb::ReadOptions(), key_of(2 * i + 1), &value).IsNotFound());
  }
  // Almost every absent lookup asks a filter; at 10 bits per key (k = 6) the rate is
  // about 0.84 %, far under the 2 % bound LevelDB's own test uses.
  INFO("filter calls " << reader.calls() << ", matches " << reader.matches());
  CHECK(reader.calls() >= kAbsent * 99 / 100);  // a key between two tables asks none
  CHECK(static_cast<double>(reader.matches()) <=
        segbloom::test::binomial_upper(static_cast<std::uint64_t>(reader.calls()), 0.02));
}

}  // namespace

TEST_CASE("a LevelDB database written with segbloom's policy is read with LevelDB's",
          "[leveldb][db]") {
  const auto ours = segbloom::new_leveldb_filter_policy(10);
  const std::unique_ptr<const leveldb::FilterPolicy> theirs(leveldb::NewBloomFilterPolicy(10));
  round_trip(*ours, *theirs);
}

TEST_CASE("a LevelDB database written with LevelDB's policy is read with segbloom's",
          "[leveldb][db]") {
  const auto ours = segbloom::new_leveldb_filter_policy(10);
  const std::unique_ptr<const leveldb::FilterPolicy> theirs(leveldb::NewBloomFilterPolicy(10));
  round_trip(*theirs, *ours);
}
