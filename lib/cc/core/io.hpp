// Small file helpers shared by every tool: read an input named on the command
// line ("-" is stdin), write a file atomically, find the data directory.
#pragma once

#include <string>
#include <string_view>

#include "cc/core/result.hpp"

namespace cc::io {

// Whole contents of `path`, or of stdin when path is "-". Errors name the file;
// a file that cannot be opened (missing, unreadable, a directory) is an input
// error (Errc::input, exit 2), a failing read an I/O error.
Result<std::string> read_input(const std::string& path);

// Write via a temporary file in the same directory and rename(2), so a reader
// never sees a half-written file and a failure leaves nothing behind.
Status write_file_atomic(const std::string& path, const std::string& data, unsigned mode = 0644);

// The one write-all and read-all loop pair for file descriptors (blocking
// ones; EINTR is retried). write_all returns 0 or the errno that stopped it
// (EIO for a write of nothing); read_all reads to end of file.
int write_all(int fd, std::string_view data);
Result<std::string> read_all(int fd, const std::string& name);

// Where share/cc lives: $CC_DATA_DIR, else the installed datadir, else the
// source tree's share/cc (running from a build directory).
std::string data_dir();

}  // namespace cc::io
