// segbloom CLI: writing a file whole or not at all (filter files and the demo's outputs).
//
// The bytes go to a temporary file beside the target (.segbloom-PID-N.tmp: a short name, so
// that it fits NAME_MAX whatever the target's name), flushed to disk, then renamed over the
// target, and the directory is flushed too, so a reader never sees a half-written file and
// a crash leaves the old file or the new one. The temporary file is always created new
// (O_EXCL, O_NOFOLLOW): never written through a name or symbolic link planted in a shared
// directory. SIGINT, SIGTERM, SIGHUP and SIGPIPE while it exists remove it, then kill the
// process as they would have (the tool ignores SIGXFSZ: a write past `ulimit -f` fails
// with EFBIG and is cleaned up as any failed write).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace segbloom::cli {

// Writes `bytes` to `path` atomically. Unless `overwrite`, refuses (RefusedError) when
// `path` exists, also when it appears during the write. An existing `path` that is not a
// regular file (a device, FIFO, socket or directory) is never replaced (IoError); a
// symbolic link is (the link, not the file it names). A replaced regular file's mode, and
// its owner and group where the process may set them, pass to the new file (the file a
// link names gives them); a new file's mode is 0644 less the umask. `before_commit`, when
// given, runs once the bytes are on disk and before the rename: if it throws, the
// temporary file is removed, `path` is left as it was and the exception propagates.
// Throws IoError on any failure of the file system, naming `path` (not the temporary
// file) and the system's reason.
void write_file_atomically(const std::string& path, std::string_view bytes, bool overwrite,
                           const std::function<void()>& before_commit = {});

// Throws IoError when `path` exists and is neither a regular file nor a symbolic link:
// what write_file_atomically refuses, checked before work is done.
void check_replaceable(const std::string& path);

// The demo's outputs: a character device or a FIFO (after symbolic links: /dev/null,
// /dev/stdout, a shell's >(...)) is written into, never replaced; anything else is
// written by write_file_atomically (overwriting). check_output_file refuses beforehand
// what write_output_file would.
void write_output_file(const std::string& path, std::string_view bytes);
void check_output_file(const std::string& path);

// Gives the finished file `temp` the name `path` unless `path` exists (RefusedError; `temp`
// is removed either way): renameat2(RENAME_NOREPLACE), or where the file system does not
// implement it a hard link then unlink (`try_rename` false goes there directly: tests).
// Throws IoError where the file system has neither.
void move_into_place_without_replacing(const std::string& temp, const std::string& path,
                                       bool try_rename = true);

// The directory that holds `path` ("." for a bare name), as open() takes it.
std::string directory_of(const std::string& path);

namespace detail {
// Called with the directory after write_file_atomically flushed it (tests).
extern std::function<void(const std::string&)> after_directory_flush_for_tests;
}  // namespace detail

}  // namespace segbloom::cli
