#include "arguments.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "exit_codes.hpp"

namespace segbloom::cli {
namespace {

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

[[noreturn]] void bad_value(std::string_view what, std::string_view text, std::string_view expected) {
  throw UsageError(std::string(what) + ": " + quoted(text) + " is not " + std::string(expected));
}

// Multiplies with an overflow check.
bool times(std::uint64_t& value, std::uint64_t factor) {
  if (factor != 0 && value > std::numeric_limits<std::uint64_t>::max() / factor) return false;
  value *= factor;
  return true;
}

// Parses all of `digits` as an unsigned integer in `base`; false on anything else.
// `overflow` (when given) tells a number too large from text that is not one.
bool parse_unsigned(std::string_view digits, int base, std::uint64_t& value, bool* overflow = nullptr) {
  if (digits.empty()) return false;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value, base);
  if (overflow != nullptr) *overflow = ec == std::errc::result_out_of_range && ptr == end;
  return ec == std::errc() && ptr == end;
}

// Too large, however it was written ("99999999999999999999", "20000000000G", "0x1" + 16 zeros).
[[noreturn]] void out_of_64_bits(std::string_view what, std::string_view text) {
  throw UsageError(std::string(what) + ": " + quoted(text) +
                   " is out of the 64-bit range (at most 18446744073709551615)");
}

}  // namespace

Arguments::Arguments(std::string_view command, const std::vector<std::string>& args,
                     std::initializer_list<OptionSpec> specs)
    : command_(command) {
  bool options_ended = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_ended || arg.size() < 2 || arg[0] != '-') {
      positionals_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }
    if (arg[1] != '-') {
      throw UsageError(command_ + ": unknown option " + quoted(arg) + " (options start with --; " +
                       "see segbloom " + command_ + " --help)");
    }
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : specs) {
      if (s.name == name) spec = &s;
    }
    if (spec == nullptr) {
      throw UsageError(command_ + ": unknown option " + quoted("--" + name) + " (see segbloom " +
                       command_ + " --help)");
    }
    if (!spec->takes_value) {
      if (eq != std::string::npos) throw UsageError(command_ + ": --" + name + " takes no value");
      values_[name] = "";
    } else if (eq != std::string::npos) {
      values_[name] = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      values_[name] = args[++i];
    } else {
      throw UsageError(command_ + ": --" + name + " needs a value");
    }
  }
}

std::optional<std::string> Arguments::value(std::string_view name) const {
  const auto it = values_.find(std::string(name));
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

void Arguments::expect_positionals(std::size_t min, std::size_t max, std::string_view what) const {
  const std::size_t n = positionals_.size();
  if (n < min) {
    throw UsageError(command_ + ": missing argument(s): expected " + std::string(what) + " (see segbloom " +
                     command_ + " --help)");
  }
  if (n > max) {
    throw UsageError(command_ + ": unexpected argument " + quoted(positionals_[max]) + ": expected " +
                     std::string(what));
  }
}

std::uint64_t parse_count(std::string_view text, std::string_view what) {
  constexpr std::string_view expected = "a non-negative integer (digits, optional k/M/G suffix, or 0x hex)";
  std::uint64_t value = 0;
  bool overflow = false;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    if (!parse_unsigned(text.substr(2), 16, value, &overflow)) {
      if (overflow) out_of_64_bits(what, text);
      bad_value(what, text, expected);
    }
    return value;
  }
  std::uint64_t factor = 1;
  std::string_view digits = text;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'k': case 'K': factor = 1'000; break;
      case 'M': factor = 1'000'000; break;
      case 'G': factor = 1'000'000'000; break;
      default: break;
    }
    if (factor != 1) digits.remove_suffix(1);
  }
  if (!parse_unsigned(digits, 10, value, &overflow)) {
    if (overflow) out_of_64_bits(what, text);
    bad_value(what, text, expected);
  }
  if (!times(value, factor)) out_of_64_bits(what, text);
  return value;
}

std::uint64_t parse_u64_id(std::string_view text) {
  std::uint64_t value = 0;
  if (!parse_unsigned(text, 10, value)) {
    throw UsageError("id " + quoted(text) + " is not an unsigned 64-bit decimal integer (--u64)");
  }
  return value;
}

double parse_real(std::string_view text, std::string_view what) {
  std::string_view number = text;
  const bool percent = !number.empty() && number.back() == '%';
  if (percent) number.remove_suffix(1);
  double value = 0;
  const char* end = number.data() + number.size();
  const auto [ptr, ec] = std::from_chars(number.data(), end, value);
  if (number.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    bad_value(what, text, "a number (such as 0.001, 1e-3 or 0.1%)");
  }
  return percent ? value / 100 : value;
}

std::chrono::seconds parse_duration(std::string_view text, std::string_view what) {
  constexpr std::string_view expected = "a duration (such as 30d, 12h, 90s, 1d12h; units s m h d w)";
  if (text.empty()) bad_value(what, text, expected);
  std::uint64_t total = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t digits_end = pos;
    while (digits_end < text.size() && text[digits_end] >= '0' && text[digits_end] <= '9') ++digits_end;
    std::uint64_t amount = 0;
    if (!parse_unsigned(text.substr(pos, digits_end - pos), 10, amount)) bad_value(what, text, expected);
    std::uint64_t unit = 1;
    if (digits_end < text.size()) {
      switch (text[digits_end]) {
        case 's': unit = 1; break;
        case 'm': unit = 60; break;
        case 'h': unit = 3600; break;
        case 'd': unit = 86400; break;
        case 'w': unit = 7 * 86400; break;
        default: bad_value(what, text, expected);
      }
      ++digits_end;
    } else if (pos != 0) {
      bad_value(what, text, expected);  // "1d12": the last group needs a unit too
    }
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (!times(amount, unit) || amount > kMax || total > kMax - amount) {  // (unsigned: no wrap)
      bad_value(what, text, "a duration within 64 bits of seconds");
    }
    total += amount;
    pos = digits_end;
  }
  return std::chrono::seconds(static_cast<std::int64_t>(total));
}

std::string format_duration(std::chrono::seconds duration) {
  std::int64_t left = duration.count();
  if (left <= 0) return std::to_string(left) + "s";
  std::string out;
  constexpr std::pair<std::int64_t, char> kUnits[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
  for (const auto& [seconds, unit] : kUnits) {
    if (left >= seconds) {
      out += std::to_string(left / seconds) + unit;
      left %= seconds;
    }
  }
  return out;
}

}  // namespace segbloom::cli
