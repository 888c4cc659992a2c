// One way for a tool to run another program: no shell, an environment the
// caller spells out name by name, nothing of the tool's own descriptors, and a
// deadline after which the child and everything it started are killed.
//
//   cc::child::Spec s;
//   s.argv = {"git", "-C", dir, "config", "--get", "remote.origin.url"};
//   s.env = cc::child::environment_of(cc::child::not_git);
//   s.deadline = std::chrono::seconds(10);
//   auto r = cc::child::run(s);
//   if (!r) return r.error();          // could not start
//   if (r->late) ...                   // killed at the deadline
//   if (r->status != 0) ...            // it ran and said no
//
// Every child of every tool goes through run() (the sandbox's own launch,
// which builds a whole process tree, is the exception, in lib/cc/sandbox).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::child {

struct Spec {
    // argv[0] holding a '/' is run as is; otherwise it is looked up on the
    // PATH of this process (not of `env`).
    std::vector<std::string> argv;
    // The child's whole environment: nothing else is inherited.
    std::map<std::string, std::string> env;
    // What the child reads on stdin; none: an empty stdin (end of file).
    std::optional<std::string> input;
    // Past this the child's process group is killed (SIGKILL) and the
    // outcome is `late`.
    std::chrono::milliseconds deadline{std::chrono::seconds(300)};
    // Kept of each output stream; the rest is read and dropped, so a child
    // that writes without end costs no memory.
    std::size_t output_cap = 1 << 20;
    bool capture_out = true;  // false: stdout to /dev/null
    bool capture_err = true;  // false: stderr to /dev/null
    // Descriptors of this process given to the child as 3, 4, ... in order
    // (a secret on a pipe rather than in argv or the environment); the
    // caller still owns and closes them.
    std::vector<int> pass_fds;
};

struct Outcome {
    bool late = false;  // killed at the deadline: status and output are not an answer
    int status = -1;    // exit status; 128+N when killed by signal N
    std::string out, err;
};

// Runs the child to its end (or its deadline). Errors: the program is not
// found or cannot be started (io).
Result<Outcome> run(const Spec& spec);

// This process's environment, only the names `keep` accepts.
std::map<std::string, std::string> environment_of(const std::function<bool(const std::string&)>& keep);

// Not one of git's variables (GIT_*: where the repository, its objects, its
// configuration and its helpers are). What a helper the operator names (a
// token command, an approver) inherits: the tool's environment without
// anything that would steer a git it runs into another repository.
bool not_git(const std::string& name);

}  // namespace cc::child
