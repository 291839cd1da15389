// segbloom: the command-line tool. Dispatches to a command, answers --help, and turns
// every error into one "segbloom: ..." line on standard error and its exit code
// (exit_codes.hpp).
#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "segbloom/errors.hpp"

namespace {

using namespace segbloom::cli;

constexpr std::string_view kExitCodes = R"(exit codes:
  0  success (check: whatever the answers)
  1  internal error
  2  bad usage: unknown command or option, bad or missing argument
  3  bad file: not a segbloom filter file, truncated or corrupt
  4  I/O error: a file cannot be read or written
  5  refused: merge or conversion not possible, output exists (use --force)
)";

void print_usage(std::ostream& out) {
  out << "usage: segbloom COMMAND [ARGS...]\n"
         "       segbloom COMMAND --help\n\n"
         "Segmented scalable Bloom filters in files (each file is one segbloom envelope).\n\n"
         "commands:\n";
  for (const Command& c : commands()) {
    out << "  " << c.name << std::string(10 - c.name.size(), ' ') << c.summary << '\n';
  }
  out << '\n' << kExitCodes;
}

bool wants_help(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

// "segbloom: <message>" on one line. The library starts its messages with "segbloom: "
// too, and a message wrapping another repeats it: every inner one is dropped.
void report(std::ostream& err, const std::string& message) {
  const std::string prefix = "segbloom: ";
  std::string text = message;
  for (std::size_t at; (at = text.find(prefix)) != std::string::npos;) text.erase(at, prefix.size());
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  err << prefix << text << '\n';
}

int run(int argc, char** argv) {
  if (argc < 2) {
    print_usage(std::cerr);
    return kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(std::cout);
    return kExitOk;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command& c : commands()) {
    if (c.name != name) continue;
    if (!c.help.empty() && wants_help(args)) {
      std::cout << c.help;
      return kExitOk;
    }
    CommandContext io{std::cin, std::cout, std::cerr};
    try {
      const int code = c.run(args, io);
      std::cout.flush();
      if (!std::cout) {
        report(std::cerr, "cannot write to standard output");
        return kExitIo;
      }
      return code;
    } catch (const UsageError& e) {
      report(std::cerr, e.what());
      return kExitUsage;
    } catch (const segbloom::FormatError& e) {
      report(std::cerr, e.what());
      return kExitBadFile;
    } catch (const IoError& e) {
      report(std::cerr, e.what());
      return kExitIo;
    } catch (const RefusedError& e) {
      report(std::cerr, e.what());
      return kExitRefused;
    } catch (const OutOfMemoryError& e) {
      report(std::cerr, e.what());
      return kExitInternal;
    } catch (const std::bad_alloc&) {
      report(std::cerr, "out of memory");
      return kExitInternal;
    } catch (const std::exception& e) {
      report(std::cerr, std::string("internal error: ") + e.what());
      return kExitInternal;
    }
  }
  report(std::cerr, "unknown command '" + name + "' (see segbloom --help)");
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // A write past `ulimit -f` then fails (EFBIG) and is cleaned up as any failed write,
  // instead of killing the process with its temporary file left behind.
  std::signal(SIGXFSZ, SIG_IGN);
  std::ios::sync_with_stdio(false);
  return run(argc, argv);
}
