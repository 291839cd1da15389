// segbloom CLI: filter files.
//
// A filter file is exactly one segbloom envelope (segbloom::to_bytes): the same bytes a
// SeenStore keeps per user, so a stored blob saved to a file can be inspected with the
// tool. Reading checks the header, then loads the payload as the kind the header names
// (segbloom::from_bytes of that kind); writing goes to a temporary file in the same
// directory, flushed to disk, then renamed over the target, so a reader never sees a
// half-written file and a crash leaves the old file intact (atomic_file.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>

#include "segbloom/counting_bloom_filter.hpp"
#include "segbloom/leveldb_compatible_filter.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "segbloom/transition_filter.hpp"

namespace segbloom::cli {

// Every kind the tool reads and writes: the three segmented kinds (envelope kinds 1-3),
// then the policy-transition pairs of each (kinds 4-6; read, added to, checked and
// shown; not created, merged or converted).
using AnyFilter = std::variant<ScalableBloomFilter, CountingBloomFilter, LevelDbCompatibleFilter,
                               TransitionFilter<ScalableBloomFilter>, TransitionFilter<CountingBloomFilter>,
                               TransitionFilter<LevelDbCompatibleFilter>>;

// The kind's name on the command line: "scalable", "counting", "leveldb", or for a
// transition pair "transition-scalable", "transition-counting", "transition-leveldb".
std::string_view cli_kind_name(const AnyFilter& filter);

struct LoadedFilter {
  AnyFilter filter;
  std::uint64_t file_bytes = 0;
};

// Throws IoError when the file cannot be read, segbloom::FormatError when it is not
// exactly one intact envelope of a kind the tool knows (the header is checked before the
// rest is read), OutOfMemoryError naming the file when it is too large to load. Cell
// arrays up to the file's own size are accepted (LoadLimits::max_bytes is raised to it:
// the file is local, so the length is one its header declares and its size confirms).
LoadedFilter read_filter_file(const std::string& path);

// Writes the filter's envelope atomically (see above). Unless `overwrite`, refuses
// (RefusedError) when `path` exists. Throws IoError on any failure of the file system.
// Returns the bytes written.
// `announce(bytes)` runs before the file takes its name (write_file_atomically's
// before_commit): a command prints its summary there, so that a summary that cannot be
// written leaves the file unchanged.
std::uint64_t write_filter_file(const std::string& path, const AnyFilter& filter, bool overwrite,
                                const std::function<void(std::uint64_t)>& announce = {});

// Writes `line` to `out` and flushes it; IoError (naming `path`, not changed) if that fails.
void print_before_commit(std::ostream& out, const std::string& line, const std::string& path);

// Throws IoError when the regular file `path` may not be written (access(W_OK), or no
// write bit in its mode, which root's access() ignores): what `add` refuses to update.
void check_updatable(const std::string& path);

// Throws IoError when `path` exists and is not a regular file or a symbolic link,
// RefusedError when it exists and not `overwrite` (checked before work is done).
void check_writable(const std::string& path, bool overwrite);

}  // namespace segbloom::cli
