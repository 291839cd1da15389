// segbloom add / check: ids in, a filter file updated / answers out.
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

#include "arguments.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_file.hpp"
#include "keys.hpp"
#include "progress.hpp"

namespace segbloom::cli {
namespace {

// Ids per batch: large enough for insert_many's hashing and prefetching to pay off,
// small enough that the progress line stays current and memory stays flat.
constexpr std::size_t kBatch = 4096;

KeyMode key_mode(const Arguments& args) { return args.flag("u64") ? KeyMode::u64 : KeyMode::text; }

}  // namespace

int run_add(const std::vector<std::string>& argv, CommandContext& io) {
  const Arguments args("add", argv, {{"u64", false}, {"progress", false}});
  args.expect_positionals(1, static_cast<std::size_t>(-1), "FILE [IDS...]");
  const std::string& path = args.positionals()[0];
  const std::vector<std::string> ids(args.positionals().begin() + 1, args.positionals().end());
  const KeyMode mode = key_mode(args);

  LoadedFilter loaded = read_filter_file(path);
  check_updatable(path);
  IdSource source(ids, io.in);
  Progress progress(io.err, Progress::stderr_is_terminal(), args.flag("progress"));
  std::uint64_t total = 0;
  std::uint64_t fresh = 0;
  std::vector<std::string> batch;
  try {
    while (source.next(batch, kBatch)) {
      std::visit(
          [&](auto& filter) {
            with_keys(batch, mode, [&](auto keys) { fresh += filter.insert_many(keys); });
          },
          loaded.filter);
      total += batch.size();
      progress.update(total);
    }
  } catch (const std::length_error& e) {  // a growing filter at its slice limit
    // The library names its Options fields; here they are create's options.
    std::string message = e.what();
    const std::string_view field_names = "raise Options::capacity or Options::growth";
    if (const auto at = message.find(field_names); at != std::string::npos) {
      message.replace(at, field_names.size(), "create it again with a larger --capacity or --growth");
    }
    throw RefusedError(path + ": " + message + " (nothing written)");
  }
  progress.finish();
  write_filter_file(path, loaded.filter, true, [&](std::uint64_t) {
    print_before_commit(io.out,
                        std::to_string(total) + " ids, " + std::to_string(fresh) + " new, " +
                            std::to_string(total - fresh) + " already present\n",
                        path);
  });
  return kExitOk;
}

int run_check(const std::vector<std::string>& argv, CommandContext& io) {
  const Arguments args("check", argv, {{"u64", false}});
  args.expect_positionals(1, static_cast<std::size_t>(-1), "FILE [IDS...]");
  const std::string& path = args.positionals()[0];
  const std::vector<std::string> ids(args.positionals().begin() + 1, args.positionals().end());
  const KeyMode mode = key_mode(args);

  const LoadedFilter loaded = read_filter_file(path);
  IdSource source(ids, io.in);
  std::vector<std::string> batch;
  const auto found = std::make_unique<bool[]>(kBatch);
  while (source.next(batch, kBatch)) {
    std::visit(
        [&](const auto& filter) {
          with_keys(batch, mode, [&](auto keys) {
            filter.contains_many(keys, std::span<bool>(found.get(), keys.size()));
          });
        },
        loaded.filter);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      io.out << batch[i] << (found[i] ? "\tpresent\n" : "\tabsent\n");
    }
  }
  return kExitOk;
}

}  // namespace segbloom::cli
