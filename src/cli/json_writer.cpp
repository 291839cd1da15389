#include "json_writer.hpp"

#include <charconv>
#include <cmath>

namespace segbloom::cli {

std::string json_string(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (byte < 0x20) {
          out += "\\u00";
          out += kHex[byte >> 4];
          out += kHex[byte & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

void JsonWriter::member(std::string_view key) {
  if (has_members_.empty()) return;  // the top-level value
  if (has_members_.back()) out_ << ',';
  has_members_.back() = true;
  out_ << '\n' << std::string(2 * has_members_.size(), ' ');
  if (!key.empty()) out_ << json_string(key) << ": ";
}

void JsonWriter::open(std::string_view key, char bracket) {
  member(key);
  out_ << bracket;
  has_members_.push_back(false);
}

void JsonWriter::close(char bracket) {
  const bool had_members = has_members_.back();
  has_members_.pop_back();
  if (had_members) out_ << '\n' << std::string(2 * has_members_.size(), ' ');
  out_ << bracket;
  if (has_members_.empty()) out_ << '\n';
}

void JsonWriter::begin_object(std::string_view key) { open(key, '{'); }
void JsonWriter::end_object() { close('}'); }
void JsonWriter::begin_array(std::string_view key) { open(key, '['); }
void JsonWriter::end_array() { close(']'); }

void JsonWriter::field(std::string_view key, std::string_view value) {
  member(key);
  out_ << json_string(value);
}

void JsonWriter::field(std::string_view key, std::uint64_t value) {
  member(key);
  out_ << value;
}

void JsonWriter::field(std::string_view key, std::int64_t value) {
  member(key);
  out_ << value;
}

void JsonWriter::null_field(std::string_view key) {
  member(key);
  out_ << "null";
}

void JsonWriter::field(std::string_view key, double value) {
  member(key);
  out_ << json_number(value);
}

void JsonWriter::field(std::string_view key, bool value) {
  member(key);
  out_ << (value ? "true" : "false");
}

}  // namespace segbloom::cli
