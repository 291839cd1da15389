#include "keys.hpp"

#include "exit_codes.hpp"

namespace segbloom::cli {

bool IdSource::next(std::vector<std::string>& batch, std::size_t max) {
  batch.clear();
  if (!ids_.empty()) {
    while (batch.size() < max && next_index_ < ids_.size()) batch.push_back(ids_[next_index_++]);
    return !batch.empty();
  }
  std::string line;
  while (batch.size() < max && std::getline(in_, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) batch.push_back(std::move(line));
  }
  if (in_.bad()) throw IoError("standard input: read error");
  return !batch.empty();
}

}  // namespace segbloom::cli
