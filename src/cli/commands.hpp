// segbloom CLI: the commands. Each takes the arguments after its name, writes its
// results to `out` and returns the exit code (exit_codes.hpp); errors are thrown
// (UsageError, IoError, RefusedError, segbloom::FormatError) and reported by main.
// `--help` is handled by main from each command's help text.
#pragma once

#include <istream>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace segbloom::cli {

struct CommandContext {
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
};

using CommandFn = int (*)(const std::vector<std::string>& args, CommandContext& io);

struct Command {
  std::string_view name;
  std::string_view summary;  // one line, for `segbloom --help`
  std::string_view help;     // the full text of `segbloom NAME --help`; empty: run answers it
  CommandFn run;
};

int run_create(const std::vector<std::string>& args, CommandContext& io);
int run_add(const std::vector<std::string>& args, CommandContext& io);
int run_check(const std::vector<std::string>& args, CommandContext& io);
int run_info(const std::vector<std::string>& args, CommandContext& io);
int run_merge(const std::vector<std::string>& args, CommandContext& io);
int run_convert(const std::vector<std::string>& args, CommandContext& io);

// Every command, in the order `segbloom --help` lists them.
std::span<const Command> commands();

}  // namespace segbloom::cli
