#!/usr/bin/env python3
"""Every option --help lists (for the tool and each subcommand) appears in the
tool's generated bash, zsh and fish completion; the bash one parses and
answers a real completion request; an unknown shell is exit 2."""
import glob
import os
import re
import shutil
import subprocess
import sys

build = os.environ["CC_BIN_DIR"]
failed = 0


def fail(msg):
    global failed
    print("FAIL " + msg)
    failed += 1


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=30)


def help_options(exe, sub=None):
    out = run([exe] + ([sub] if sub else []) + ["--help"]).stdout
    opts = set(re.findall(r"(?m)^\s+(?:-\w,)?(--[\w-]+)", out))
    subs = []
    if "Subcommands:" in out:
        subs = re.findall(r"(?m)^  (\w[\w-]*)\s{2,}", out.split("Subcommands:", 1)[1])
    return opts, subs


tools = sorted(t for t in glob.glob(os.path.join(build, "cmd", "cc-*", "cc-*"))
               if os.access(t, os.X_OK) and os.path.isfile(t) and not t.endswith(("cc-wrap-init", "cc-wrap-vm")))
if not tools:
    fail("no tools built")
for exe in tools:
    name = os.path.basename(exe)
    scripts = {}
    for shell in ("bash", "zsh", "fish"):
        r = run([exe, "--generate-completion", shell])
        if r.returncode != 0 or not r.stdout:
            fail(f"{name} --generate-completion {shell}: status {r.returncode}: {r.stderr.strip()}")
            continue
        scripts[shell] = r.stdout
        installed = {"bash": name, "zsh": "_" + name, "fish": name + ".fish"}[shell]
        path = os.path.join(build, "completions", installed)
        if not os.path.exists(path) or open(path).read() != r.stdout:
            fail(f"{name}: build/completions/{installed} is missing or not what the tool generates")
    top, subs = help_options(exe)
    wanted = [(None, o) for o in top] + [(s, o) for s in subs for o in help_options(exe, s)[0]]
    for sub, opt in wanted:
        where = f"{name} {sub}" if sub else name
        if "bash" in scripts and opt not in scripts["bash"]:
            fail(f"{where}: {opt} missing from the bash completion")
        if "zsh" in scripts and f"'{opt}[" not in scripts["zsh"]:
            fail(f"{where}: {opt} missing from the zsh completion")
        if "fish" in scripts and f"-l {opt[2:]}" not in scripts["fish"]:
            fail(f"{where}: {opt} missing from the fish completion")
    for s in subs:
        if "fish" in scripts and f"-a {s} " not in scripts["fish"]:
            fail(f"{name}: subcommand {s} missing from the fish completion")
    if "bash" in scripts:
        if run(["bash", "-n", "-c", scripts["bash"]]).returncode != 0:
            fail(f"{name}: the bash completion does not parse")
        # A real request: the words after the tool name, completing "--".
        line = [name] + ([subs[0]] if subs else []) + ["--"]
        probe = scripts["bash"] + "\nCOMP_WORDS=(%s); COMP_CWORD=%d; %s; printf '%%s\\n' \"${COMPREPLY[@]}\"\n" % (
            " ".join(line), len(line) - 1, "_" + name.replace("-", "_"))
        got = set(run(["bash", "-c", probe]).stdout.split())
        want = help_options(exe, subs[0] if subs else None)[0]
        if not want <= got:
            fail(f"{name}: bash completion of '{' '.join(line)}' lacks {sorted(want - got)}")
    # An option with fixed values ("{a,b}" in --help) completes to them.
    if "bash" in scripts:
        helptext = run([exe, "--help"]).stdout
        for opt, values in re.findall(r"(?m)^\s+(--[\w-]+) (?:TEXT:)?\{([\w,-]+)\}", helptext):
            line = [name, opt, ""]
            probe = scripts["bash"] + "\nCOMP_WORDS=(%s ''); COMP_CWORD=2; %s; printf '%%s\\n' \"${COMPREPLY[@]}\"\n" % (
                " ".join(line[:2]), "_" + name.replace("-", "_"))
            got = set(run(["bash", "-c", probe]).stdout.split())
            if got != set(values.split(",")):
                fail(f"{name}: bash completion of '{name} {opt} ' gives {sorted(got)}, not {values}")
            if "zsh" in scripts and f"'{opt}[" in scripts["zsh"] and ":value:( " + " ".join(values.split(",")) + ")" not in scripts["zsh"]:
                fail(f"{name}: zsh completion of {opt} lacks its values")
            if "fish" in scripts and "-a '" + " ".join(values.split(",")) + "'" not in scripts["fish"]:
                fail(f"{name}: fish completion of {opt} lacks its values")
    if shutil.which("zsh") and "zsh" in scripts and run(["zsh", "-n", "-c", scripts["zsh"]]).returncode != 0:
        fail(f"{name}: the zsh completion does not parse")
    if shutil.which("fish") and "fish" in scripts and run(["fish", "--no-execute", "-c", scripts["fish"]]).returncode != 0:
        fail(f"{name}: the fish completion does not parse")
    bad = run([exe, "--generate-completion", "tcsh"])
    if bad.returncode != 2 or "unknown shell 'tcsh'" not in bad.stderr:
        fail(f"{name} --generate-completion tcsh: status {bad.returncode}, {bad.stderr.strip()!r}")
    if not failed:
        print(f"ok   {name}: {len(wanted)} options in bash, zsh and fish completions")
sys.exit(1 if failed else 0)
