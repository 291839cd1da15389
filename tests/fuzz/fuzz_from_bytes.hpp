// The body of every from_bytes fuzz target (one per kind: fuzz_from_bytes_<kind>.cpp).
//
// Each input is tried three ways:
//  1. as a whole blob: from_bytes and FilterView must refuse it with FormatError or
//     accept it, nothing else (almost every input stops at the checksum);
//  2. as a payload sealed in a valid envelope of the target's kind (the checksum
//     recomputed), which takes every input through the payload checks: from_bytes and
//     FilterView must agree, refuse the same blobs and answer the same for the rest;
//  3. as a bare Cereal portable binary archive (no envelope, chunked cell reads), which
//     must load exactly what the envelope loaded.
// Any disagreement aborts, which libFuzzer reports as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "segbloom/filter_view.hpp"
#include "segbloom/serialization.hpp"

namespace segbloom::fuzz {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz_from_bytes: %s\n", what);
  std::abort();
}

template <class F>
int from_bytes_one_input(const std::uint8_t* data, std::size_t size) {
  LoadLimits limits;
  limits.max_bytes = std::uint64_t{1} << 20;  // keeps the fuzzer's memory small
  const std::string_view raw(reinterpret_cast<const char*>(data), size);

  try {
    const F filter = from_bytes<F>(raw, limits);
    (void)filter.contains(std::uint64_t{1});
  } catch (const FormatError&) {
  }
  try {
    const FilterView view(raw, limits);
    (void)view.contains(std::uint64_t{1});
  } catch (const FormatError&) {
  }

  // Payload: the input after an envelope header when it has one, else the whole input.
  const bool has_header = raw.size() >= envelope::kHeaderBytes && raw.substr(0, 4) == "SGBF";
  const std::string_view payload = has_header ? raw.substr(envelope::kHeaderBytes) : raw;
  std::string blob(envelope::kHeaderBytes, '\0');
  blob.append(payload);
  envelope::seal(blob, FilterKind<F>::id);

  std::optional<F> loaded;
  try {
    loaded.emplace(from_bytes<F>(blob, limits));
  } catch (const FormatError&) {
  }
  std::optional<FilterView> view;
  try {
    view.emplace(blob, limits);
  } catch (const FormatError&) {
  }
  if (loaded.has_value() != view.has_value()) fail("from_bytes and FilterView disagree on a blob");
  if (loaded) {
    if (view->size() != loaded->size()) fail("FilterView::size differs");
    for (std::uint64_t key = 0; key < 64; ++key) {
      if (view->contains(key) != loaded->contains(key)) fail("FilterView answers differently");
    }
    F copy = *loaded;  // a loaded filter must take writes like any other
    try {
      for (std::uint64_t key = 0; key < 64; ++key) copy.insert(key + 1000);
    } catch (const std::length_error&) {
      // a growing filter at its slice limit
    }
  }

  std::istringstream stream{std::string(payload)};
  try {
    WithLoadLimits<cereal::PortableBinaryInputArchive> ar(limits, stream);
    F plain;
    ar(plain);
    const bool consumed = stream.peek() == std::char_traits<char>::eof();
    if (loaded && !(plain == *loaded)) fail("the bare archive loads another filter");
    if (!loaded && consumed && payload.size() > 0 && payload[0] == 1) {
      fail("the bare archive loads a payload the envelope refuses");
    }
  } catch (const FormatError&) {
    if (loaded) fail("the bare archive refuses a payload the envelope loads");
  } catch (const cereal::Exception&) {
    // Cereal's own fields, read before the filter's load runs (endianness flag, class
    // version: 5 bytes), are its business; everything after them must be FormatError.
    if (payload.size() >= 5) fail("cereal::Exception escaped the loader");
  }
  return 0;
}

}  // namespace segbloom::fuzz
