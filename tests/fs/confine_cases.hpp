// The confinement table: each row is a path as an agent would name it, and
// what cc::fs::Confinement::check must answer. The fixture (test_confine.cpp,
// make_fixture) builds this tree in a scratch directory:
//
//   conf/work/                 the workdir ($W)
//     file.txt  sub/inner.txt  sub/deep/leaf.txt
//     link_file -> file.txt        link_sub -> sub          link_abs_in -> $W/file.txt
//     link_out_abs -> $O           link_out_rel -> ../out   link_out_file -> ../out/secret.txt
//     chain1 -> chain2 -> chain3 -> file.txt
//     chain_out1 -> chain_out2 -> link_out_rel
//     chain_back -> ../out/../work/file.txt
//     dangling -> missing-target   dangling_out -> ../out/not-there
//     dangling_abs_out -> /nonexistent-cc-dir/x
//     loop_a <-> loop_b            self -> .                up -> ..
//     sub/up2 -> ../..             sub/back -> ../file.txt  to_root -> ../root
//     proc_root -> /proc/self/root proc_cwd -> /proc/self/cwd  proc_fd -> /proc/self/fd
//     ünïcødé/ファイル.txt  "odd\x01\x7fname"  "new\nline"  "sp ace"  "-dash"
//     deep/ (20 levels of 250-byte names: a path past PATH_MAX)
//   conf/root/repo.txt         a shared root ($R)
//   conf/out/secret.txt        outside ($O)
//
// Tokens: $W $R $O are replaced by the real paths; {N255} / {N256} by a name of
// that many bytes; {DOTS} by "x/.." 1500 times (a 6000-byte path that resolves
// short); {DEEP} by the path past PATH_MAX.
#pragma once

struct ConfineCase {
    const char* path;
    bool allowed;
    const char* reason;
};

inline const ConfineCase confine_cases[] = {
    // plain relative paths
    {"file.txt", true, "inside-workdir"},
    {"./file.txt", true, "inside-workdir"},
    {"sub/inner.txt", true, "inside-workdir"},
    {"sub/deep/leaf.txt", true, "inside-workdir"},
    {"sub//inner.txt", true, "inside-workdir"},
    {".", true, "inside-workdir"},
    {"", false, "empty"},
    // dot-dot
    {"sub/../file.txt", true, "inside-workdir"},
    {"sub/./deep/../inner.txt", true, "inside-workdir"},
    {"..", false, "outside"},
    {"../out/secret.txt", false, "outside"},
    {"../../../../../../../../etc/passwd", false, "outside"},
    {"sub/../../out/secret.txt", false, "outside"},
    {"missing/../../out/secret.txt", false, "outside"},
    {"../work/file.txt", true, "inside-workdir"},
    // absolute paths, in and out
    {"$W/file.txt", true, "inside-workdir"},
    {"$W", true, "inside-workdir"},
    {"$W/", true, "inside-workdir"},
    {"$W/./sub/", true, "inside-workdir"},
    {"$W/sub/../file.txt", true, "inside-workdir"},
    {"$W/../out/secret.txt", false, "outside"},
    {"/etc/passwd", false, "outside"},
    {"//etc//passwd", false, "outside"},
    {"/", false, "outside"},
    {"$O/secret.txt", false, "outside"},
    // shared root
    {"$R/repo.txt", true, "inside-root"},
    {"../root/repo.txt", true, "inside-root"},
    {"$R/../out/secret.txt", false, "outside"},
    {"to_root/repo.txt", true, "inside-root"},
    // symlinks inside -> inside
    {"link_file", true, "inside-workdir"},
    {"link_sub/inner.txt", true, "inside-workdir"},
    {"link_abs_in", true, "inside-workdir"},
    {"sub/back", true, "inside-workdir"},
    {"link_sub/../file.txt", true, "inside-workdir"},  // physical "..": the parent of sub
    {"self/self/self/file.txt", true, "inside-workdir"},
    // symlinks inside -> outside
    {"link_out_abs", false, "symlink-escape"},
    {"link_out_abs/secret.txt", false, "symlink-escape"},
    {"link_out_rel/secret.txt", false, "symlink-escape"},
    {"link_out_file", false, "symlink-escape"},
    {"link_out_rel/new-file", false, "symlink-escape"},
    {"link_out_rel/..", false, "symlink-escape"},
    {"up/out/secret.txt", false, "symlink-escape"},
    {"sub/up2/etc/passwd", false, "symlink-escape"},
    {"$W/link_out_rel/secret.txt", false, "symlink-escape"},
    // out and back in: the end point decides
    {"chain_back", true, "inside-workdir"},
    {"up/work/file.txt", true, "inside-workdir"},
    {"link_out_rel/../work/file.txt", true, "inside-workdir"},
    {"link_out_abs/../work/file.txt", true, "inside-workdir"},
    // chains
    {"chain1", true, "inside-workdir"},
    {"chain_out1/secret.txt", false, "symlink-escape"},
    {"loop_a", false, "symlink-loop"},
    {"loop_a/x", false, "symlink-loop"},
    // dangling (write targets)
    {"dangling", true, "inside-workdir"},
    {"dangling_out", false, "symlink-escape"},
    {"dangling_abs_out", false, "symlink-escape"},
    {"missing/dir/new.txt", true, "inside-workdir"},
    {"file.txt/child", true, "inside-workdir"},
    // /proc tricks
    {"proc_root/etc/passwd", false, "magic-link"},
    {"proc_cwd/file.txt", false, "magic-link"},
    {"proc_fd/0", false, "magic-link"},
    {"/proc/self/root/etc/passwd", false, "magic-link"},
    {"/proc/self/root$W/file.txt", false, "magic-link"},
    {"/proc/self/cwd", false, "magic-link"},
    {"/proc/thread-self/root/etc", false, "magic-link"},
    {"/proc/1/root/etc/shadow", false, "magic-link"},
    // unicode and odd bytes
    {"ünïcødé/ファイル.txt", true, "inside-workdir"},
    {"ünïcødé/../../out/secret.txt", false, "outside"},
    {"odd\x01\x7fname", true, "inside-workdir"},
    {"bad\xff\xfeutf8", true, "inside-workdir"},
    {"new\nline", true, "inside-workdir"},
    {"sp ace", true, "inside-workdir"},
    {"-dash", true, "inside-workdir"},
    {"../out/\xff", false, "outside"},
    // length
    {"{N255}", true, "inside-workdir"},
    {"{N256}", false, "name-too-long"},
    {"sub/{DOTS}/inner.txt", true, "inside-workdir"},
    {"{DEEP}", false, "name-too-long"},
};
