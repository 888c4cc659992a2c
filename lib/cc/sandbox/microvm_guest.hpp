// The microvm backend's two in-sandbox programs, one static binary
// (cc-wrap-vm, built from microvm_guest.cpp and microvm_host.cpp):
//
// * the host step, run by bubblewrap inside the native sandbox as
//     /run/cc/vm/cc-wrap-vm --internal-vm-host -- qemu-system-x86_64 ARGS...
//   It starts the VM monitor with five socket pairs on fds 3..7 (the guest's
//   stdin, stdout, stderr, its status channel and its serial console), copies
//   them to and from its own stdio, sends the guest its plan when the guest
//   says "ready" (at once after a snapshot restore), forwards
//   SIGTERM/SIGINT/SIGHUP into the guest ("kill N"), and exits with the
//   status the guest reports (125 with the console's last lines when the
//   guest reported none).
//
// * the guest init: /init of the initramfs (PID 1 in the VM). It reads
//   /cc/boot.json, loads the listed modules (finit_module), brings up the
//   ports and the network, says "ready" and reads its plan from the status
//   port (a snapshot is saved at that point), reseeds its random generator
//   and sets its clock from the plan, mounts the host
//   step's filesystem view (virtio-9p tag "ccroot", everything bubblewrap
//   binds, read-only where bubblewrap made it so), gives the command a fresh
//   /proc and /dev, runs it as the plan's unprivileged uid, reports
//   "exit N" or "signal N" on the status port and powers off.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cc::sandbox {

// File descriptors the host step hands the VM monitor (the plan's qemu argv
// names them in its -chardev socket,fd=N options).
inline constexpr int vm_fd_stdin = 3;
inline constexpr int vm_fd_stdout = 4;
inline constexpr int vm_fd_stderr = 5;
inline constexpr int vm_fd_status = 6;
inline constexpr int vm_fd_console = 7;
// Only with a snapshot: the monitor's human monitor (saving: the file is
// handed over it with "getfd"), and the snapshot read (-incoming fd:9).
inline constexpr int vm_fd_monitor = 8;
inline constexpr int vm_fd_snapshot_in = 9;

// Names of the virtio-serial ports inside the guest.
inline constexpr const char* vm_port_stdin = "cc.stdin";
inline constexpr const char* vm_port_stdout = "cc.stdout";
inline constexpr const char* vm_port_stderr = "cc.stderr";
inline constexpr const char* vm_port_status = "cc.status";

// Bytes as lowercase hex, the form the plan carries the filter and the seed
// in (JSON strings hold text only).
inline std::string vm_hex(std::string_view b) {
    static const char d[] = "0123456789abcdef";
    std::string out;
    out.reserve(b.size() * 2);
    for (unsigned char c : b) {
        out += d[c >> 4];
        out += d[c & 15];
    }
    return out;
}

// argv after "--internal-vm-host": [--plan FILE] [--restore FILE | --save
// FILE], "--", then the monitor's argv. --plan: the session's plan, sent to
// the guest once it is ready (with fresh random bytes and the time added).
// --restore: the monitor starts from that snapshot. --save: no command runs;
// the booted guest is saved to FILE where it waits for its plan, and the
// host step exits 0 once the save is complete.
int vm_host_main(const std::vector<std::string>& args);

// The relay of one guest connection to a proxy (microvm_relay.cpp), which
// the monitor runs as `cc-wrap-vm --internal-vm-relay PORT http|socks`; at
// most vm_relay_slots at once per VM (flock on vm_relay_dir/N, which the
// host step makes before it starts the monitor: vm_relay_setup, 0 or an
// errno).
inline constexpr int vm_relay_slots = 64;
inline constexpr const char* vm_relay_dir = "/run/cc-relay";
int vm_relay_setup();
// write(2) until all of p is written; false on an error or end of file.
bool vm_write_all(int fd, const char* p, std::size_t n);
int vm_relay_main(const std::vector<std::string>& args);
// PID 1 inside the guest. Never returns.
[[noreturn]] void vm_guest_main();

}  // namespace cc::sandbox
