// segbloom tests: values put into a LevelDB database directly, past the backend (another
// writer's values, damaged version fields), before a backend opens it.
#pragma once

#include <leveldb/db.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace segbloom::test {

inline void put_raw_leveldb(const std::string& path,
                            const std::vector<std::pair<std::string, std::string>>& values) {
  leveldb::DB* raw = nullptr;
  leveldb::Options options;
  options.create_if_missing = true;
  if (!leveldb::DB::Open(options, path, &raw).ok()) throw std::runtime_error("cannot open LevelDB at " + path);
  const std::unique_ptr<leveldb::DB> db(raw);
  for (const auto& [key, value] : values) {
    if (!db->Put(leveldb::WriteOptions(), key, value).ok()) throw std::runtime_error("LevelDB put failed");
  }
}

}  // namespace segbloom::test
