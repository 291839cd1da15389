// segbloom: a leveldb::FilterPolicy that writes and reads LevelDB's built-in Bloom filter
// format with segbloom's implementation (leveldb_format.hpp). Built only when LevelDB's
// development files are installed; link against the `segbloom_leveldb` library.
//
//   std::unique_ptr<const leveldb::FilterPolicy> policy = segbloom::new_leveldb_filter_policy(10);
//   leveldb::Options options;
//   options.filter_policy = policy.get();   // keep it alive until every DB using it is closed
//
// Interchangeable with leveldb::NewBloomFilterPolicy(bits_per_key): the same name
// ("leveldb.BuiltinBloomFilter2"), so tables written by either are read by the other with
// their filters in use, and the same bytes for the same keys.
#pragma once

#include <memory>

#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

namespace segbloom {

class LevelDbFilterPolicy final : public leveldb::FilterPolicy {
 public:
  // bits_per_key: 0 or more, as for leveldb::NewBloomFilterPolicy (10 gives ~1 %
  // false positives). Throws std::invalid_argument when negative.
  explicit LevelDbFilterPolicy(int bits_per_key);

  const char* Name() const override;

  // Appends the filter of keys[0, n) to *dst (n <= 0: a filter of no keys), leaving the
  // bytes already there untouched.
  void CreateFilter(const leveldb::Slice* keys, int n, std::string* dst) const override;

  bool KeyMayMatch(const leveldb::Slice& key, const leveldb::Slice& filter) const override;

  int bits_per_key() const noexcept { return bits_per_key_; }

 private:
  int bits_per_key_;
};

// Like leveldb::NewBloomFilterPolicy, but owned by the caller through a unique_ptr.
std::unique_ptr<const leveldb::FilterPolicy> new_leveldb_filter_policy(int bits_per_key);

}  // namespace segbloom
