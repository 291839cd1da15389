// segbloom CLI: command-line parsing.
//
// A command declares its options (flags, and options that take a value); parse() splits
// the arguments after the command name into positionals and options. Accepted forms:
// `--name value`, `--name=value`, `--flag`; `--` ends the options (later arguments are
// positionals even when they start with '-'); a lone `-` is a positional. Anything else
// starting with '-' is an unknown option. Every error is a UsageError (exit code 2).
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace segbloom::cli {

struct OptionSpec {
  std::string_view name;  // without the leading "--"
  bool takes_value = false;
};

class Arguments {
 public:
  // Throws UsageError for an unknown option, a flag given a value, a value missing.
  Arguments(std::string_view command, const std::vector<std::string>& args,
            std::initializer_list<OptionSpec> specs);

  const std::vector<std::string>& positionals() const noexcept { return positionals_; }
  bool flag(std::string_view name) const { return values_.count(std::string(name)) != 0; }
  // The value of the last occurrence of an option, if given.
  std::optional<std::string> value(std::string_view name) const;

  // Throws UsageError unless there are between `min` and `max` positionals; `what`
  // names them in the message ("FILE", "OUT A B ...").
  void expect_positionals(std::size_t min, std::size_t max, std::string_view what) const;

 private:
  std::string command_;
  std::vector<std::string> positionals_;
  std::map<std::string, std::string> values_;
};

// Parsers for option values; each throws UsageError naming `what` and the bad text.

// Unsigned decimal integer, optionally with a k/M/G suffix (x 10^3, 10^6, 10^9) or a
// 0x prefix (hexadecimal, no suffix). No sign, no spaces, no overflow.
std::uint64_t parse_count(std::string_view text, std::string_view what);

// Unsigned 64-bit integer as an id: decimal digits only (what SeenStore's numeric ids are).
std::uint64_t parse_u64_id(std::string_view text);

// A finite real number; a trailing '%' divides by 100 ("0.1%" = 0.001).
double parse_real(std::string_view text, std::string_view what);

// A duration: one or more <number><unit> groups, units s, m (minutes), h, d, w
// ("30d", "12h", "90s", "1d12h"); a bare number is seconds; "0" is no duration.
std::chrono::seconds parse_duration(std::string_view text, std::string_view what);

// "30d", "12h", "1d12h", "90s", "0s": the shortest exact rendering in those units.
std::string format_duration(std::chrono::seconds duration);

}  // namespace segbloom::cli
