// The body of every from_bytes fuzz target (one per kind: fuzz_from_bytes_<kind>.cpp).
//
// Each input is tried three ways:
//  1. as a whole blob: from_bytes and FilterView must refuse it with FormatError or
//     accept it, nothing else (almost every input stops at the checksum);
//  2. as a payload sealed in a valid envelope of the target's kind (the checksum
//     recomputed), which takes every input through the payload checks: from_bytes and
//     FilterView must agree, refuse the same blobs (but the item count below the set
//     cells, which only from_bytes checks) and answer the same for the rest;
//  3. as a bare Cereal portable binary archive (no envelope, chunked cell reads), which
//     must load exactly what the envelope loaded; as a plain binary archive (FormatError
//     or a filter, nothing else); and, when the envelope loaded a filter, that filter
//     through a JSON archive and back (equal), then the JSON text with one character
//     changed (chosen by the input), which must load or be refused with FormatError (or
//     with cereal::Exception from the JSON parser, before any filter code runs);
//  4. as a stream (from_stream): it must load exactly what from_bytes loads from the
//     envelope the stream holds, and refuse what from_bytes refuses.
// Any disagreement aborts, which libFuzzer reports as a crash. The transition target
// (fuzz_from_bytes_transition.cpp) runs the same steps through check_whole/check_sealed/
// check_stream, for the pairs of all three kinds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <cereal/archives/binary.hpp>
#include <cereal/archives/json.hpp>

#include "segbloom/filter_view.hpp"
#include "segbloom/serialization.hpp"

namespace segbloom::fuzz {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz_from_bytes: %s\n", what);
  std::abort();
}

// Step 3's other archives: `payload` as a plain binary archive, and `loaded` (when the
// envelope loaded one) through JSON, as it is and with one character of the text changed.
template <class T, class Fresh>
void check_other_archives(const T* loaded, std::string_view payload, const LoadLimits& limits, Fresh&& fresh) {
  {
    std::istringstream stream{std::string(payload)};
    try {
      WithLoadLimits<cereal::BinaryInputArchive> ar(limits, stream);
      T plain = fresh();
      ar(plain);
    } catch (const FormatError&) {
    } catch (const cereal::Exception&) {
      if (payload.size() >= 4) fail("cereal::Exception escaped the binary archive's loader");  // past the class version
    }
  }
  if (loaded == nullptr) return;
  std::ostringstream out;
  {
    cereal::JSONOutputArchive ar(out);
    ar(*loaded);
  }
  std::string text = out.str();
  {
    std::istringstream in(text);
    WithLoadLimits<cereal::JSONInputArchive> ar(limits, in);
    T back = fresh();
    try {
      ar(back);
    } catch (const FormatError&) {
      fail("the JSON archive refuses a filter it saved");
    }
    if (!(back == *loaded)) fail("the JSON archive loads another filter");
  }
  // One character changed, at a place and to a value taken from the payload's bytes. Not
  // in or next to a number written with an exponent, and never to an 'e' or 'E': Debian's
  // RapidJSON 1.1.0 indexes its table of powers of ten out of bounds (internal/diyfp.h,
  // GetCachedPowerByIndex; found 2 Dec 2026) on a 17-digit number whose exponent is near
  // -340 (4.86e-137 with one digit changed to 4.86e-337) or on a long one, before any
  // segbloom code runs: read JSON from trusted sources only.
  std::uint64_t pick = 0x9E3779B97F4A7C15ull;
  for (const char c : payload) pick = (pick ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  static constexpr char kReplacements[] = "0123456789-+.\"{}[],: tfn";
  const std::size_t at = pick % text.size();
  const auto number_char = [&text](std::size_t i) {
    const char c = text[i];
    return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
  };
  std::size_t from = at, to = at;
  while (from > 0 && number_char(from - 1)) --from;
  while (to < text.size() && number_char(to)) ++to;
  const bool number = from < to && (text[from] == '-' || (text[from] >= '0' && text[from] <= '9'));
  if (number && text.find_first_of("eE", from) < to) return;
  text[at] = kReplacements[(pick >> 32) % (sizeof(kReplacements) - 1)];
  // Cereal's own part of the text, which it reads before the filter's load runs: up to the
  // end of the class version's value ({"value0": {"cereal_class_version": 1,).
  const std::size_t version = text.find("cereal_class_version");
  const std::size_t cereal_end = version == std::string::npos ? text.size() : text.find(',', version);
  std::istringstream in(text);
  std::optional<WithLoadLimits<cereal::JSONInputArchive>> ar;
  try {
    ar.emplace(limits, in);
  } catch (const cereal::Exception&) {
    return;  // not JSON any more: the parser's refusal, before any filter code
  }
  T changed = fresh();
  try {
    (*ar)(changed);
  } catch (const FormatError&) {
  } catch (const cereal::Exception&) {
    if (at > cereal_end) fail("cereal::Exception escaped the JSON archive's loader");
  }
}

// Step 4: the input as a stream. When from_stream loads a filter, from_bytes of the envelope
// it read (the stream's bytes up to where it stopped) loads the same; when from_bytes
// loads the whole input, from_stream loads the same.
template <class StreamLoad, class Load>
void check_stream(std::string_view raw, StreamLoad&& stream_load, Load&& load) {
  using T = decltype(load(std::string_view{}));
  std::istringstream in{std::string(raw)};
  std::optional<T> streamed;
  try {
    streamed.emplace(stream_load(in));
  } catch (const FormatError&) {
  }
  if (streamed) {
    const std::streamoff pos = in.tellg();
    const std::size_t read = pos < 0 ? raw.size() : static_cast<std::size_t>(pos);
    try {
      if (!(load(raw.substr(0, read)) == *streamed)) fail("from_stream and from_bytes load different filters");
    } catch (const FormatError&) {
      fail("from_bytes refuses the envelope from_stream loaded");
    }
  }
  try {
    const T whole = load(raw);
    if (!streamed || !(whole == *streamed)) fail("from_stream refuses or changes a blob from_bytes loads");
  } catch (const FormatError&) {
  }
}

// Steps 2 and 3 for `payload` sealed as kind `kind`: load(blob) (returning a T or
// throwing FormatError) and view_of(blob) must agree; a T from fresh() loaded from the
// bare archive must equal what the envelope loaded.
template <class Load, class ViewOf, class Fresh>
void check_sealed(std::string_view payload, std::uint8_t kind, const LoadLimits& limits,
                  Load&& load, ViewOf&& view_of, Fresh&& fresh) {
  using T = decltype(load(std::string_view{}));
  using View = decltype(view_of(std::string_view{}));
  std::string blob(envelope::kHeaderBytes, '\0');
  blob.append(payload);
  envelope::seal(blob, kind);

  std::optional<T> loaded;
  std::string refusal;
  try {
    loaded.emplace(load(std::string_view(blob)));
  } catch (const FormatError& e) {
    refusal = e.what();
  }
  std::optional<View> view;
  try {
    view.emplace(view_of(std::string_view(blob)));
  } catch (const FormatError&) {
  }
  // The one refusal a view does not make (filter_view.hpp): a bit slice counting fewer items
  // than its set cells need.
  const bool items_only = !loaded && view && refusal.find("so the set cells need at least") != std::string::npos;
  if (loaded.has_value() != view.has_value() && !items_only) fail("from_bytes and the view disagree on a blob");
  if (loaded) {
    if (view->size() != loaded->size()) fail("the view's size differs");
    if constexpr (requires { view->in_transition(); }) {
      if (view->in_transition() != loaded->in_transition()) fail("in_transition differs");
    }
    // What the view answers: the loaded filter's answer, but that a TransitionView (it has
    // a clock) skips the slices of timed inner filters that their next write would drop as
    // expired (transition_view.hpp), so a pair is asked through copies that dropped them.
    const auto as_viewed = [&] {
      if constexpr (requires { loaded->previous(); }) {
        auto current = loaded->current();
        current.expire();
        using Inner = std::remove_cvref_t<decltype(current)>;
        std::optional<Inner> previous;
        if (loaded->in_transition()) {
          previous.emplace(*loaded->previous());
          previous->expire();
        }
        return [current = std::move(current), previous = std::move(previous)](std::uint64_t key) {
          return current.contains(key) || (previous && previous->contains(key));
        };
      } else {
        return [&loaded](std::uint64_t key) { return loaded->contains(key); };
      }
    }();
    std::uint64_t keys[64];
    bool found[64];
    for (std::uint64_t key = 0; key < 64; ++key) {
      keys[key] = key;
      if (view->contains(key) != as_viewed(key)) fail("the view answers differently");
    }
    view->contains_many(std::span<const std::uint64_t>(keys), std::span<bool>(found));
    for (std::uint64_t key = 0; key < 64; ++key) {
      if (found[key] != as_viewed(key)) fail("the view's batch answers differently");
    }
    T copy = *loaded;  // a loaded filter must take writes like any other
    try {
      for (std::uint64_t key = 0; key < 64; ++key) copy.insert(key + 1000);
    } catch (const std::length_error&) {
      // a growing filter at its slice limit
    }
  }

  check_other_archives(loaded ? &*loaded : nullptr, payload, limits, fresh);

  std::istringstream stream{std::string(payload)};
  try {
    WithLoadLimits<cereal::PortableBinaryInputArchive> ar(limits, stream);
    T plain = fresh();
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
}

// Step 1 (the whole input as a blob), then the payload: the input after an envelope
// header when it has one, else the whole input.
template <class Load, class ViewOf>
std::string_view check_whole(std::string_view raw, Load&& load, ViewOf&& view_of) {
  try {
    (void)load(raw).contains(std::uint64_t{1});
  } catch (const FormatError&) {
  }
  try {
    (void)view_of(raw).contains(std::uint64_t{1});
  } catch (const FormatError&) {
  }
  const bool has_header = raw.size() >= envelope::kHeaderBytes && raw.substr(0, 4) == "SGBF";
  return has_header ? raw.substr(envelope::kHeaderBytes) : raw;
}

template <class F>
int from_bytes_one_input(const std::uint8_t* data, std::size_t size) {
  LoadLimits limits;
  limits.max_bytes = std::uint64_t{1} << 20;  // keeps the fuzzer's memory small
  const auto load = [&limits](std::string_view blob) { return from_bytes<F>(blob, limits); };
  const auto view_of = [&limits](std::string_view blob) { return FilterView(blob, limits); };
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  const std::string_view payload = check_whole(raw, load, view_of);
  check_sealed(payload, FilterKind<F>::id, limits, load, view_of, [] { return F{}; });
  check_stream(raw, [&limits](std::istream& in) { return from_stream<F>(in, limits); }, load);
  return 0;
}

}  // namespace segbloom::fuzz
