// Writes the golden blobs of tests/data/ (support/golden_specs.hpp). Built with the
// tests, never run by them: run it by hand only when a new format version adds blobs,
// never to "fix" a failing golden test (that would hide a breaking change).
//   ./build/tests/make_golden tests/data
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "segbloom/serialization.hpp"
#include "segbloom/transition_serialization.hpp"
#include "support/golden_specs.hpp"
#include "support/transition_golden.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_golden OUTPUT_DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  for (const auto& spec : segbloom::test::golden_specs()) {
    std::string blob;
    segbloom::visit_kind(segbloom::FilterKinds{}, spec.kind, [&]<class F>() {
      blob = segbloom::to_bytes(segbloom::test::build_golden<F>(spec));
    });
    std::ofstream out(dir + "/" + spec.file, std::ios::binary);
    out.write(blob.data(), static_cast<std::streamsize>(blob.size()));
    if (!out) {
      std::cerr << "make_golden: cannot write " << dir << "/" << spec.file << "\n";
      return 1;
    }
    std::cout << spec.file << ": " << blob.size() << " bytes\n";
  }
  // The transition pair (support/transition_golden.hpp).
  using Golden = segbloom::test::TransitionGolden;
  segbloom::ManualClock clock;
  const std::string pair = segbloom::to_bytes(Golden::build(clock));
  std::ofstream out(dir + "/" + Golden::kFile, std::ios::binary);
  out.write(pair.data(), static_cast<std::streamsize>(pair.size()));
  if (!out) {
    std::cerr << "make_golden: cannot write " << dir << "/" << Golden::kFile << "\n";
    return 1;
  }
  std::cout << Golden::kFile << ": " << pair.size() << " bytes\n";
  return 0;
}
