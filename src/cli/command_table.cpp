// segbloom CLI: every command's name, summary and --help text.
#include "commands.hpp"
#include "demo.hpp"

namespace segbloom::cli {
namespace {

constexpr std::string_view kCreateHelp = R"(usage: segbloom create FILE [options]

Writes a new, empty filter to FILE. Refuses to replace an existing file unless --force.

options (defaults in brackets):
  --kind K          scalable | counting | leveldb [scalable]
                    counting: 4-bit counters (removal; 4x the memory);
                    leveldb: slices are LevelDB BuiltinBloomFilter2 blobs (seed ignored)
  --capacity N      items before the filter first grows or rotates [1000]; k/M/G suffixes
  --rate P          target false-positive rate, in (0, 1) [0.001]; "0.1%" also accepted
  --window W        0: growing mode; W in 1..64: keep a window of W slices [0]
  --growth G        growing mode: capacity factor from one slice to the next, 1..16 [2]
  --tightening R    growing mode: rate factor from one slice to the next, (0, 1) [0.8]
  --seed S          hash seed; filters merge only with equal seeds [0]
  --layout L        classic | blocked (one cache line per lookup; not leveldb) [classic]
  --lifetime D      slice lifetime: a slice older than D expires, e.g. 30d, 12h, 90s,
                    1d12h; 0 = never [0]
  --force           replace FILE if it exists

example: segbloom create seen.sbf --capacity 100k --rate 0.001 --window 4
)";

constexpr std::string_view kAddHelp = R"(usage: segbloom add FILE [IDS...] [--u64] [--progress]

Adds the ids to the filter in FILE and writes it back (atomically). With no IDS, reads
ids from standard input, one per line (a trailing CR is dropped, empty lines skipped).
Prints how many ids were new. Counting filters count: an id added twice needs two
removes.

  --u64        ids are unsigned 64-bit decimal integers, hashed as integers (as SeenStore
               stores numeric item ids); without it an id's key is its text bytes
  --progress   show the progress line on standard error even when it is not a terminal
               (it is shown on a terminal for runs above 1 s or 100 000 ids)

example: seq 1 1000000 | segbloom add seen.sbf --u64
)";

constexpr std::string_view kCheckHelp = R"(usage: segbloom check FILE [IDS...] [--u64]

Prints "<id><TAB>present" or "<id><TAB>absent" for each id, in order, and exits 0
whatever the answers. With no IDS, reads ids from standard input, one per line.
"present" may be a false positive (at about the filter's rate); "absent" is certain.
Reads every kind, transition pairs included (both filters answer during the period).

  --u64        ids are unsigned 64-bit decimal integers (see segbloom add --help)
)";

constexpr std::string_view kInfoHelp = R"(usage: segbloom info FILE [--json]

Prints the filter's kind, options, items, slices (capacity, rate, probes, bits, items,
fill, estimated rate, bytes each; open time with a slice lifetime), estimated
false-positive rate, memory and file bytes, and rotations. For a transition pair
(a filter whose options are changing): when the transition ends, then both filters.

  --json       one JSON object instead of text
)";

constexpr std::string_view kMergeHelp = R"(usage: segbloom merge OUT A B [MORE...] [--force]

Writes the union of the filters A, B, ... to OUT: every id any input holds is present in
OUT. The inputs must have the same kind and options (seed included). Refused (exit 5)
when they differ, or when the union's estimated false-positive rate would exceed the
target rate, now or as it fills further (the filters hold too much together; see
include/segbloom/merge.hpp). Transition pairs do not merge. Refuses to replace OUT
unless --force; with --force, OUT may be one of the inputs.
)";

constexpr std::string_view kConvertHelp = R"(usage: segbloom convert IN OUT --to KIND [--force]

Converts the filter in IN and writes it to OUT. The one conversion: a counting filter
--to scalable, the plain filter with the same answers in a quarter of the memory (no
removal). Other conversions are refused (exit 5). Refuses to replace OUT unless --force.
)";

// `segbloom demo`: demo.hpp's entry point, which parses its own options and --help.
int run_demo_command(const std::vector<std::string>& args, CommandContext& io) {
  return run_demo(args, io.out, io.err);
}

constexpr Command kCommands[] = {
    {"create", "write a new, empty filter file from options", kCreateHelp, run_create},
    {"add", "add ids (arguments or standard input) to a filter file", kAddHelp, run_add},
    {"check", "print whether each id is present in a filter file", kCheckHelp, run_check},
    {"info", "show a filter file's options, slices, fill and rates (--json)", kInfoHelp, run_info},
    {"merge", "write the union of filters of one kind and options", kMergeHelp, run_merge},
    {"convert", "convert a counting filter to the plain (scalable) filter", kConvertHelp, run_convert},
    // No help text: run_demo answers --help itself.
    {"demo", "run the simulated feed served through the seen-store", {}, run_demo_command},
};

}  // namespace

std::span<const Command> commands() { return kCommands; }

}  // namespace segbloom::cli
