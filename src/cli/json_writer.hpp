// segbloom CLI: a minimal JSON writer (for `info --json`).
//
// Writes one value with nested objects and arrays, indented by two spaces, commas placed
// for the caller. Strings are escaped per RFC 8259 (quote, backslash and control
// characters) and the output is valid UTF-8: well-formed UTF-8 is copied as is, and each
// byte that is not part of a well-formed sequence (a Latin-1 file name, an overlong form,
// a surrogate, past U+10FFFF) becomes \ufffd. Doubles are written in
// the shortest form that reads back to the same value; NaN and infinities, which JSON
// cannot hold, become null.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace segbloom::cli {

// The JSON string literal for `text`, quotes included.
std::string json_string(std::string_view text);

// The JSON number for `value` (or null).
std::string json_number(double value);

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  // Containers: inside an object, give the member's key; inside an array or at the top
  // level, none.
  void begin_object(std::string_view key = {});
  void end_object();
  void begin_array(std::string_view key = {});
  void end_array();

  void field(std::string_view key, std::string_view value);
  void field(std::string_view key, const char* value) { field(key, std::string_view(value)); }
  void field(std::string_view key, std::uint64_t value);
  void field(std::string_view key, double value);
  void field(std::string_view key, std::int64_t value);
  void field(std::string_view key, bool value);
  void null_field(std::string_view key);

 private:
  void open(std::string_view key, char bracket);
  void close(char bracket);
  void member(std::string_view key);  // comma, newline, indent, and "key": inside objects

  std::ostream& out_;
  std::vector<bool> has_members_;  // one per open container
};

}  // namespace segbloom::cli
