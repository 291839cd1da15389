// libFuzzer target: from_bytes<LevelDbCompatibleFilter>, FilterView and the bare Cereal archive on
// arbitrary bytes (see fuzz_from_bytes.hpp). Run by scripts/fuzz.sh.
#include "fuzz_from_bytes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return segbloom::fuzz::from_bytes_one_input<segbloom::LevelDbCompatibleFilter>(data, size);
}
