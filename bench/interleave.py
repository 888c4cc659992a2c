#!/usr/bin/env python3
"""Whole-process wall time of several commands, run interleaved (A B C A B C
...) so that drift in the machine's load falls on all of them alike; prints
one JSON object {name: {"median_ms", "runs"}}. Usage:
    interleave.py [--before SHELL] RUNS NAME=COMMAND [NAME=COMMAND ...]
    (COMMAND split on spaces; leading K=V words set environment variables for
    that command only; --before runs SHELL, untimed, before every run)
Each run is posix_spawn + waitpid, stdout and stderr to /dev/null; a non-zero
exit status fails the whole measurement."""
import json, os, statistics, subprocess, sys, time

args = sys.argv[1:]
before = None
if args[:1] == ["--before"]:
    before, args = args[1], args[2:]
runs = int(args[0])
cmds = []
for arg in args[1:]:
    name, _, cmd = arg.partition("=")
    words, env = cmd.split(), dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith("/"):
        k, _, v = words.pop(0).partition("=")
        env[k] = v
    cmds.append((name, words, env))
null = os.open(os.devnull, os.O_RDWR)
acts = [(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
times = {n: [] for n, _, _ in cmds}
for i in range(runs + 3):  # the first three rounds warm up
    for name, argv, env in cmds:
        if before is not None and subprocess.run(["sh", "-c", before]).returncode != 0:
            sys.exit(f"interleave.py: --before {before!r} failed")
        t = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=acts)
        _, status = os.waitpid(pid, 0)
        dt = time.perf_counter() - t
        if status != 0 and not name.endswith("!"):  # NAME! : a failing exit is expected
            sys.exit(f"interleave.py: {name} exited with status {status}")
        if i >= 3:
            times[name].append(dt * 1000)
print(json.dumps({n: {"median_ms": round(statistics.median(v), 2), "runs": len(v)} for n, v in times.items()}))
