#!/usr/bin/env python3
"""The install layout the .deb is made from: `meson install --destdir` puts
every built tool in bin/, its man page in man1/, cc-json.5 in man5/ and
share/cc/ (default policy, schemas) in place; and the debian/ build dependencies are all
installed by `make deps` (dpkg-checkbuilddeps)."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

root = os.environ["CC_SOURCE_DIR"]
build = os.environ["CC_BIN_DIR"]
failed = 0


def fail(msg):
    global failed
    print("FAIL " + msg)
    failed += 1


dest = tempfile.mkdtemp(prefix="cc-install-")
try:
    r = subprocess.run(["meson", "install", "-C", build, "--no-rebuild", "--destdir", dest, "--quiet"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("meson install: " + r.stderr.strip()[-300:])
    prefix = subprocess.run(["meson", "introspect", build, "--buildoptions"], capture_output=True, text=True).stdout
    import json
    opts = {o["name"]: o["value"] for o in json.loads(prefix)}
    base = dest + opts["prefix"]
    tools = [os.path.basename(t) for t in glob.glob(os.path.join(build, "cmd", "cc-*", "cc-*"))
             if os.path.isfile(t) and os.access(t, os.X_OK)]
    for t in tools:
        if t in ("cc-wrap-init", "cc-wrap-vm"):  # helpers, not commands
            if not os.access(os.path.join(base, opts["libexecdir"], "cc", t), os.X_OK):
                fail(f"{t} not installed in libexec/cc/")
            if os.path.exists(os.path.join(base, opts["bindir"], t)):
                fail(f"{t} installed on PATH (bin/); it belongs in libexec/cc/")
            continue
        if not os.access(os.path.join(base, opts["bindir"], t), os.X_OK):
            fail(f"{t} not installed in bin/")
        if not os.path.exists(os.path.join(base, opts["mandir"], "man1", t + ".1")):
            fail(f"{t}.1 not installed")
    for rel in ("man5/cc-json.5",):
        if not os.path.exists(os.path.join(base, opts["mandir"], rel)):
            fail(rel + " not installed")
    share = os.path.join(base, opts["datadir"], "cc")
    for rel in ("policy/default.json", "schema/sandbox-spec.schema.json"):
        if not os.path.exists(os.path.join(share, rel)):
            fail("share/cc/" + rel + " not installed")
    # cc-classify's shipped command data is compiled in: installed as
    # documentation only, never where it would be read as an operator's file.
    if os.path.exists(os.path.join(share, "classify", "git.json")) or os.path.exists(os.path.join(share, "classify", "builtin")):
        fail("share/cc/classify holds the shipped command data (it is compiled in; it belongs under doc/cc/classify)")
    for t in tools:
        if t in ("cc-wrap-init", "cc-wrap-vm"):
            continue
        for rel in (f"bash-completion/completions/{t}", f"zsh/vendor-completions/_{t}", f"fish/vendor_completions.d/{t}.fish"):
            if not os.path.exists(os.path.join(base, opts["datadir"], rel)):
                fail(f"{rel} not installed")
    doc = os.path.join(base, opts["datadir"], "doc", "cc")
    for rel in ("README.md", "examples/session.sh", "examples/policy.json", "examples/spec.json",
                "examples/claude-settings.json", "examples/allowlist.txt", "classify/git.json", "classify/readers.json"):
        if not os.path.exists(os.path.join(doc, rel)):
            fail("doc/cc/" + rel + " not installed")
    if os.path.exists(os.path.join(share, "examples")):
        fail("share/cc/examples installed as data (it belongs under doc/cc)")
    # cc-classify installed knows git and ls with no data file of its own
    # (a git status only reads in plan mode).
    if "cc-classify" in tools:
        r = subprocess.run([os.path.join(base, opts["bindir"], "cc-classify"), "--mode", "plan", "git status && ls"],
                           capture_output=True, text=True, env=dict(os.environ, CC_DATA_DIR=share))
        if r.returncode != 0:
            fail(f"installed cc-classify with the installed command data: status {r.returncode}, {r.stderr.strip()}")
    # The operator's policy: SYSCONFDIR/cc/policy.json (a conffile in the
    # .deb: debhelper marks every file under /etc), the shipped default.
    sysconf = opts["sysconfdir"] if os.path.isabs(opts["sysconfdir"]) else os.path.join(opts["prefix"], opts["sysconfdir"])
    etc_policy = dest + os.path.join(sysconf, "cc", "policy.json")
    if not os.path.exists(etc_policy):
        fail(f"{os.path.join(sysconf, 'cc', 'policy.json')} not installed")
    elif open(etc_policy).read() != open(os.path.join(root, "share", "cc", "policy", "default.json")).read():
        fail("the installed operator's policy is not the shipped default")
    # The microvm backend's guest kernel helper: installed in libexec/cc, its
    # default destination the data directory the installed cc-wrap reads.
    helper = os.path.join(base, opts["libexecdir"], "cc", "cc-vm-kernel")
    if not os.access(helper, os.X_OK):
        fail("cc-vm-kernel not installed in libexec/cc/")
    else:
        r = subprocess.run([helper, "--help"], capture_output=True, text=True)
        want = os.path.join(base, opts["datadir"], "cc", "microvm")
        if r.returncode != 0 or f"(default {want})" not in r.stdout:
            fail(f"cc-vm-kernel --help: status {r.returncode}, does not name {want}: {r.stdout.strip()[:300]}")
        bad = subprocess.run([helper, "--bogus"], capture_output=True, text=True)
        if bad.returncode != 2 or "unknown option '--bogus'" not in bad.stderr:
            fail(f"cc-vm-kernel --bogus: status {bad.returncode}, {bad.stderr.strip()}")
    # With no guest kernel where the installed tools look, cc-probe names the
    # missing piece and the command that puts it there.
    if "cc-probe" in tools and not os.path.exists(os.path.join(opts["prefix"], opts["datadir"], "cc", "microvm")):
        env = {k: v for k, v in os.environ.items() if k != "CC_MICROVM_DIR"}
        r = subprocess.run([os.path.join(base, opts["bindir"], "cc-probe"), "--diagnose", "--backend", "microvm",
                            "--json"], capture_output=True, text=True, env=env)
        try:
            checks = {c["name"]: c for c in json.loads(r.stdout)["diagnostics"]["checks"]}
            vk = checks["vm-kernel"]
            libexec_helper = os.path.join(opts["prefix"], opts["libexecdir"], "cc", "cc-vm-kernel")
            if vk["status"] != "fail" or not vk.get("required") or f"run {libexec_helper} once, as root" not in vk.get("hint", ""):
                fail(f"installed cc-probe --diagnose --backend microvm: vm-kernel is {vk}")
        except (ValueError, KeyError) as e:
            fail(f"installed cc-probe --diagnose --json: {e}: {r.stdout[:300]} {r.stderr[:300]}")
    print(f"ok   {len(tools)} tools, man pages, share/cc and doc/cc installed under {opts['prefix']}")
finally:
    shutil.rmtree(dest, ignore_errors=True)

if shutil.which("dpkg-checkbuilddeps"):
    # The packaging tools themselves (debhelper) come with `make deb`, not
    # `make test`: their absence is not a missing build dependency of the code.
    r = subprocess.run(["dpkg-checkbuilddeps"], cwd=root, capture_output=True, text=True)
    unmet = []
    if r.returncode != 0:
        m = re.search(r"Unmet build dependencies: (.*)", r.stderr)
        if not m:
            fail("dpkg-checkbuilddeps failed: " + r.stderr.strip())
        else:
            unmet = re.sub(r"\([^)]*\)", "", m.group(1)).split()
            unmet = [d for d in unmet if not re.match(r"debhelper(-compat)?\b", d)]
    if unmet:
        fail("debian/control build dependencies missing (add them to scripts/deps.sh): " + " ".join(unmet))
    elif r.returncode == 0 or m:
        print("ok   debian/control build dependencies are installed by make deps (debhelper comes with make deb)")
sys.exit(1 if failed else 0)
