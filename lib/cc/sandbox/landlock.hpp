// The Landlock layer: inside the sandbox, after bubblewrap has built the
// mounts, the init step restricts the command's writes to the paths the plan
// names as writable (the writable binds, the private tmpfs mounts, /dev and
// /proc). Reads are not handled: the mount namespace already decides what
// exists. A second layer under the read-only binds: a mistake in the mount
// plan that left something writable is still refused here.
//
//   std::string err;
//   if (!cc::sandbox::apply_landlock(abi, {"/work", "/tmp"}, err)) -> fail closed (125)
#pragma once

#include <string>
#include <vector>

namespace cc::sandbox {

// The ABI version the running kernel offers (0: none or disabled).
int landlock_abi_version();

// Restricts this process (and what it execs) to writing beneath `writable`
// only, with the rights ABI `abi` knows; paths that do not exist are skipped.
// False with `err` set when the kernel refuses any step.
bool apply_landlock(int abi, const std::vector<std::string>& writable, std::string& err);

}  // namespace cc::sandbox
