#include "json_writer.hpp"

#include <charconv>
#include <cmath>

namespace segbloom::cli {

namespace {

// The length of the well-formed UTF-8 sequence that starts `text`, or 0 when none does
// (Unicode's table of well-formed byte sequences: the second byte's range rules out
// overlong forms, surrogates and code points above U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned char second_low = 0x80, second_high = 0xBF;
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_low = 0xA0;   // below: overlong
    if (lead == 0xED) second_high = 0x9F;  // above: surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_low = 0x90;   // below: overlong
    if (lead == 0xF4) second_high = 0x8F;  // above: past U+10FFFF
  } else {
    return 0;  // a continuation byte, an overlong lead (C0, C1) or past U+10FFFF (F5-FF)
  }
  if (text.size() < length || byte(1) < second_low || byte(1) > second_high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

std::string json_string(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) {
      // JSON text is UTF-8 (RFC 8259): a file name need not be, so a byte that does not
      // belong to a well-formed sequence becomes U+FFFD.
      const std::size_t length = utf8_sequence_length(text.substr(i));
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out += text.substr(i, length);
        i += length;
      }
      continue;
    }
    ++i;
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
