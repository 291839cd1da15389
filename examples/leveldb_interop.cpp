// segbloom and LevelDB's Bloom filter format: build a filter, store it, check it with
// LevelDB's own policy; then a segmented filter whose slices are LevelDB filters.
//
//   build/examples/leveldb_interop
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <leveldb/filter_policy.h>
#include <leveldb/slice.h>

#include "segbloom/leveldb_compatible_filter.hpp"
#include "segbloom/leveldb_format.hpp"

int main() {
  namespace lf = segbloom::leveldb_format;

  // 1. A filter in LevelDB's format, 10 bits per key (k = 6, about 1 % false positives).
  const std::vector<std::string_view> keys = {"video:abc", "video:def", "video:xyz"};
  std::string blob;
  lf::create_filter(keys, 10, &blob);

  // 2. Store it and read it back, as a service would.
  const char* path = "leveldb_interop.filter";
  std::ofstream(path, std::ios::binary) << blob;
  std::ifstream in(path, std::ios::binary);
  const std::string stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path);

  // 3. LevelDB's own policy answers for it; so does segbloom's reader.
  const std::unique_ptr<const leveldb::FilterPolicy> policy(leveldb::NewBloomFilterPolicy(10));
  for (std::string_view key : {"video:abc", "video:def", "video:xyz", "video:new"}) {
    const bool leveldb_says = policy->KeyMayMatch(leveldb::Slice(key.data(), key.size()),
                                                  leveldb::Slice(stored));
    std::printf("%-10s leveldb %-5s segbloom %s\n", std::string(key).c_str(),
                leveldb_says ? "yes" : "no", lf::key_may_match(key, stored) ? "yes" : "no");
  }

  // 4. A segmented filter whose every slice is a LevelDB filter blob.
  segbloom::Options options;
  options.capacity = 1000;
  options.false_positive_rate = 0.01;
  segbloom::LevelDbCompatibleFilter seen(options);
  for (int i = 0; i < 5000; ++i) seen.insert("video:" + std::to_string(i));
  const std::vector<std::string> blobs = seen.slice_blobs();
  int found = 0;
  for (int i = 0; i < 5000; ++i) {
    const std::string key = "video:" + std::to_string(i);
    for (const auto& b : blobs) {
      if (policy->KeyMayMatch(key, b)) {
        ++found;
        break;
      }
    }
  }
  std::printf("%zu slices; LevelDB finds %d of 5000 keys in them\n", blobs.size(), found);

  // 5. And back: the same filter from its blobs and item counts.
  const auto restored = segbloom::LevelDbCompatibleFilter::from_blobs(
      options, blobs, seen.slice_items(), seen.rotations());
  std::printf("restored equals original: %s\n", restored == seen ? "yes" : "no");

  // 6. Its false-positive rate against the target, over 10^6 absent keys, as it grows.
  for (double p : {0.01, 0.001}) {
    segbloom::Options o;
    o.capacity = 10'000;
    o.false_positive_rate = p;
    segbloom::LevelDbCompatibleFilter f(o);
    int inserted = 0;
    for (int load : {1, 8, 64}) {
      while (inserted < 10'000 * load) f.insert("item:" + std::to_string(inserted++));
      int hits = 0;
      for (int i = 0; i < 1'000'000; ++i) hits += f.contains("absent:" + std::to_string(i));
      std::printf("p %.3f, %2dx capacity: %zu slices, %.2f bits/item, measured rate %.5f\n", p,
                  load, f.slice_count(), 8.0 * static_cast<double>(f.memory_bytes()) / inserted,
                  hits / 1e6);
    }
  }
  return found == 5000 && restored == seen ? 0 : 1;
}
