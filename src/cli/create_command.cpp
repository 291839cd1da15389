// segbloom create: options -> a new, empty filter file.
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "arguments.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_file.hpp"
#include "segbloom/options.hpp"

namespace segbloom::cli {
namespace {

Options options_from(const Arguments& args) {
  Options options;
  if (auto v = args.value("capacity")) options.capacity = parse_count(*v, "--capacity");
  if (auto v = args.value("rate")) options.false_positive_rate = parse_real(*v, "--rate");
  if (auto v = args.value("window")) {
    const std::uint64_t window = parse_count(*v, "--window");
    if (window > kMaxSlices) {
      throw UsageError("--window " + *v + " is out of range; allowed: 0 (growing) to " +
                       std::to_string(kMaxSlices));
    }
    options.max_slices = static_cast<std::uint32_t>(window);
  }
  if (auto v = args.value("growth")) options.growth = parse_real(*v, "--growth");
  if (auto v = args.value("tightening")) options.tightening = parse_real(*v, "--tightening");
  if (auto v = args.value("seed")) options.seed = parse_count(*v, "--seed");
  if (auto v = args.value("layout")) {
    if (*v == "classic") {
      options.layout = Layout::classic;
    } else if (*v == "blocked") {
      options.layout = Layout::blocked;
    } else {
      throw UsageError("--layout '" + *v + "' is not one of: classic, blocked");
    }
  }
  if (auto v = args.value("lifetime")) options.slice_lifetime = parse_duration(*v, "--lifetime");
  return options;
}

void check_kind(std::string_view kind) {
  if (kind != "scalable" && kind != "counting" && kind != "leveldb") {
    throw UsageError("--kind '" + std::string(kind) + "' is not one of: scalable, counting, leveldb");
  }
}

AnyFilter make_filter(std::string_view kind, const Options& options) {
  if (kind == "counting") return CountingBloomFilter(options);
  if (kind == "leveldb") return LevelDbCompatibleFilter(options);
  return ScalableBloomFilter(options);
}

// Replaces the number the library printed after `option ` (with %g: 2^48 + 1 looked like
// 2^48) by `exact`.
void exact_value(std::string& message, std::string_view option, const std::string& exact) {
  const auto at = message.find(std::string(option) + " ");
  if (at == std::string::npos) return;
  const auto from = at + option.size() + 1;
  message.replace(from, message.find(' ', from) - from, exact);
}

// The library names the Options field it refused; the user typed an option of this tool.
std::string with_cli_names(std::string message, const Options& options) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"Options::false_positive_rate =", "--rate"}, {"Options::capacity =", "--capacity"},
      {"Options::max_slices =", "--window"},        {"Options::growth =", "--growth"},
      {"Options::tightening =", "--tightening"},    {"Options::slice_lifetime =", "--lifetime (s)"},
      {"max_slices", "--window"}};
  for (const auto& [field, option] : kNames) {
    for (auto at = message.find(field); at != std::string::npos; at = message.find(field, at)) {
      message.replace(at, field.size(), option);
      at += option.size();
    }
  }
  if (message.rfind("Options ", 0) == 0) message.replace(0, 7, "the options");  // "Options describe ..."
  if (message.find("--capacity ") != std::string::npos && message.find(" is out of range") != std::string::npos) {
    exact_value(message, "--capacity", std::to_string(options.capacity));
  }
  exact_value(message, "--lifetime (s)", std::to_string(options.slice_lifetime.count()));
  return message;
}

// Options out of range (options.hpp) are bad usage; the message without the library's prefix.
template <class Make>
auto as_usage_error(const Options& options, Make&& make) {
  try {
    return make();
  } catch (const std::invalid_argument& e) {
    std::string message = e.what();
    if (message.rfind("segbloom: ", 0) == 0) message.erase(0, 10);
    throw UsageError(with_cli_names(std::move(message), options));
  }
}

}  // namespace

int run_create(const std::vector<std::string>& argv, CommandContext& io) {
  const Arguments args("create", argv,
                       {{"kind", true}, {"capacity", true}, {"rate", true}, {"window", true},
                        {"growth", true}, {"tightening", true}, {"seed", true}, {"layout", true},
                        {"lifetime", true}, {"force", false}});
  args.expect_positionals(1, 1, "FILE");
  const std::string& path = args.positionals()[0];
  const bool force = args.flag("force");
  const Options options = options_from(args);
  const std::string kind = args.value("kind").value_or("scalable");
  // Usage first, then the file: a bad kind or option is exit 2 whether or not FILE exists.
  // So the filter is built before write_filter_file looks at FILE: only its constructor
  // refuses some pairs of valid options (leveldb with the blocked layout).
  check_kind(kind);
  as_usage_error(options, [&] { validate(options); return 0; });
  const AnyFilter filter = as_usage_error(options, [&] { return make_filter(kind, options); });
  write_filter_file(path, filter, force, [&](std::uint64_t bytes) {
    print_before_commit(io.out, "created " + path + ": " + kind + " filter, " + std::to_string(bytes) + " bytes\n",
                        path);
  });
  return kExitOk;
}

}  // namespace segbloom::cli
