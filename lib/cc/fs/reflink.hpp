// Copy-on-write tree cloning and fd-based tree removal.
//
//   if (auto s = cc::fs::probe_reflink("/data/conversations/c1"); !s) ...  // Errc::unavailable: no FICLONE here
//   auto st = cc::fs::clone_tree("/src/app", "/data/conversations/c1/repos/app");
//   cc::fs::remove_tree(AT_FDCWD, "/data/conversations/c1");
//
// clone_tree shares every regular file's blocks with the source (ioctl
// FICLONE), never copying bytes: on a filesystem without reflink it fails.
// Directories, symlinks (verbatim target) and FIFOs are recreated; modes,
// access and modification times are kept, and owners when running as root.
// Sources are opened O_NOATIME where allowed, so the clone leaves the source
// tree as it was. Hard links are not kept: each name becomes its own inode
// sharing the same blocks, so no inode of the clone is shared with the
// source or with another name (a write through one name never shows through
// another). Sockets and device nodes are skipped and listed. A mount point
// inside the source is an error (FICLONE cannot cross filesystems).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::fs {

struct CloneStats {
    std::uint64_t files = 0;
    std::uint64_t directories = 0;
    std::uint64_t symlinks = 0;
    std::uint64_t bytes = 0;                    // logical size of the cloned files
    std::uint64_t hardlinks_split = 0;          // names whose inode had more than one link
    std::uint64_t absolute_symlinks_into_source = 0;  // still point at the source tree
    std::vector<std::string> skipped;           // sockets, devices (relative paths)
};

// Whether the filesystem holding `dir` clones with FICLONE. Makes and removes
// two small files in `dir`. Errc::unavailable naming the cause when not.
Status probe_reflink(const std::string& dir);

// Clone `src` (a directory) into `dst`, which must not exist. On failure the
// partial `dst` is left for the caller to remove.
Result<CloneStats> clone_tree(const std::string& src, const std::string& dst);

// Remove `name` under the directory `parent_fd` (AT_FDCWD: a path) without
// following symlinks, making read-only directories writable first. Refuses to
// descend into another filesystem (a mount point inside the tree).
Status remove_tree(int parent_fd, const std::string& name);

}  // namespace cc::fs
