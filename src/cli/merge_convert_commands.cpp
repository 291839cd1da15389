// segbloom merge / convert: filter files in, one filter file out.
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include "arguments.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_file.hpp"
#include "segbloom/merge.hpp"

namespace segbloom::cli {
namespace {

std::string without_prefix(std::string message) {
  if (message.rfind("segbloom: ", 0) == 0) message.erase(0, 10);
  return message;
}

AnyFilter merge_two(const AnyFilter& a, const AnyFilter& b) {
  return std::visit(
      [&b](const auto& x) -> AnyFilter {
        using F = std::decay_t<decltype(x)>;
        if constexpr (MergeableFilter<F>) {
          return merged(x, std::get<F>(b));
        } else {
          throw RefusedError("merge refused: transition pairs do not merge (merge their filters "
                             "before or after the transition)");
        }
      },
      a);
}

bool valid_kind(std::string_view kind) {
  return kind == "scalable" || kind == "counting" || kind == "leveldb";
}

}  // namespace

int run_merge(const std::vector<std::string>& argv, CommandContext& io) {
  const Arguments args("merge", argv, {{"force", false}});
  args.expect_positionals(3, static_cast<std::size_t>(-1), "OUT A B [MORE...]");
  const std::vector<std::string>& files = args.positionals();
  const std::string& out_path = files[0];
  const bool force = args.flag("force");
  check_writable(out_path, force);

  LoadedFilter result = read_filter_file(files[1]);
  for (std::size_t i = 2; i < files.size(); ++i) {
    const LoadedFilter next = read_filter_file(files[i]);
    if (next.filter.index() != result.filter.index()) {
      throw RefusedError("merge refused: " + files[1] + " is a " + std::string(cli_kind_name(result.filter)) +
                         " filter, " + files[i] + " a " + std::string(cli_kind_name(next.filter)) +
                         " filter: only filters of one kind merge");
    }
    try {
      result.filter = merge_two(result.filter, next.filter);
    } catch (const std::invalid_argument& e) {
      throw RefusedError(files[1] + " + " + files[i] + ": " + without_prefix(e.what()));
    }
  }
  write_filter_file(out_path, result.filter, force, [&](std::uint64_t bytes) {
    std::visit(
        [&](const auto& f) {
          if constexpr (MergeableFilter<std::decay_t<decltype(f)>>) {  // what merge_two returns
            char rate[32];
            std::snprintf(rate, sizeof rate, "%.3g", f.estimated_false_positive_rate());
            std::ostringstream line;
            line << "merged " << files.size() - 1 << " filters into " << out_path << ": " << f.size()
                 << " items (upper bound), " << f.slice_count() << (f.slice_count() == 1 ? " slice" : " slices")
                 << ", estimated rate " << rate << ", " << bytes << " bytes\n";
            print_before_commit(io.out, line.str(), out_path);
          }
        },
        result.filter);
  });
  return kExitOk;
}

int run_convert(const std::vector<std::string>& argv, CommandContext& io) {
  const Arguments args("convert", argv, {{"to", true}, {"force", false}});
  args.expect_positionals(2, 2, "IN OUT");
  const std::string& in_path = args.positionals()[0];
  const std::string& out_path = args.positionals()[1];
  const auto to = args.value("to");
  if (!to) throw UsageError("convert: --to KIND is required (see segbloom convert --help)");
  if (!valid_kind(*to)) throw UsageError("--to '" + *to + "' is not one of: scalable, counting, leveldb");
  const bool force = args.flag("force");
  check_writable(out_path, force);

  const LoadedFilter loaded = read_filter_file(in_path);
  const std::string from(cli_kind_name(loaded.filter));
  const auto* counting = std::get_if<CountingBloomFilter>(&loaded.filter);
  if (counting == nullptr || *to != "scalable") {
    throw RefusedError("convert refused: no conversion from " + from + " to " + *to +
                       " (the one conversion is counting -> scalable)");
  }
  const AnyFilter plain = counting->to_plain();
  write_filter_file(out_path, plain, force, [&](std::uint64_t bytes) {
    print_before_commit(io.out,
                        "converted " + in_path + " (" + from + ", " + std::to_string(loaded.file_bytes) +
                            " bytes) to " + out_path + " (" + *to + ", " + std::to_string(bytes) + " bytes)\n",
                        out_path);
  });
  return kExitOk;
}

}  // namespace segbloom::cli
