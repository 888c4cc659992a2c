#!/usr/bin/env python3
"""Every chain the README and the man pages show, where one tool's output feeds
another, runs as written.

Each step is looked up byte for byte in its document (man pages with roff's
\\- and \\e undone), then the steps of one chain run in one bash script in a
scratch directory, with the built tools first on PATH. The only change made
to a documented line is moving absolute example directories (/run/cc,
/srv/agent) into the scratch directory."""
import json
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


def doc(name):
    text = open(os.path.join(root, name)).read()
    if name.startswith("man/"):
        text = text.replace("\\-", "-").replace("\\e", "\\")
    return text


tool_dirs = sorted({os.path.dirname(p) for p in
                    subprocess.run(["find", os.path.join(build, "cmd"), "-name", "cc-*", "-type", "f", "-perm", "-u+x"],
                                   capture_output=True, text=True).stdout.split()})


def run_chain(name, document, steps, setup="", check=None, moves=()):
    text = doc(document)
    for s in steps:
        if s not in text:
            fail(f"{name}: not in {document} as written: {s}")
            return
    work = tempfile.mkdtemp(prefix="cc-chain-")
    os.chmod(work, 0o755)  # run by root, cc-wrap's sandbox user must pass it
    try:
        script = ["set -e", "trap 'rc=$?; kill $(jobs -p) 2>/dev/null || true; wait || true; exit $rc' EXIT", setup]
        for s in steps:
            for old, new in moves:
                s = s.replace(old, work + new)
            script.append(s)
        env = dict(os.environ, PATH=os.pathsep.join(tool_dirs + [os.path.join(work, "bin"), os.environ["PATH"]]),
                   CC_DATA_DIR=os.path.join(root, "share", "cc"), GIT_CONFIG_NOSYSTEM="1", HOME=work)
        os.makedirs(os.path.join(work, "bin"))
        r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env, capture_output=True, text=True,
                           timeout=120)
        why = check(r, work) if check else (None if r.returncode == 0 else f"status {r.returncode}")
        if why:
            fail(f"{name}: {why}; stderr: {r.stderr.strip()[-400:]}")
        else:
            print(f"ok   {name}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


SPEC = ('mkdir -p ws && git init -q ws && '
        'printf \'{"sessionId":"s1","workspaceId":"w1","bindMounts":[{"hostPath":"%s/ws"}],"guestWorkdir":"%s/ws"}\' '
        '"$PWD" "$PWD" > spec.json')

# cc-probe's JSON is read back by cc-wrap --probe.
def probe_then_wrap(r, work):
    if r.returncode != 0:
        return f"status {r.returncode}"
    plan = json.loads(r.stdout)
    return None if "argv" in plan or "backend" in plan else "no plan on stdout"


run_chain("README: cc-probe --json feeds cc-wrap --probe", "README.md",
          ["cc-probe --json > probe.json", "cc-wrap --spec spec.json --probe probe.json --print -- true"],
          setup=SPEC, check=probe_then_wrap)


def unknown_option(r, work):
    want = "cc-wrap: unknown option '-la'; the command's own options go after '--': cc-wrap --spec spec.json -- ls -la\n"
    return None if r.returncode == 2 and r.stderr == want else f"status {r.returncode}, stderr {r.stderr!r}"


run_chain("README: cc-wrap without '--' before a command's options", "README.md",
          ["cc-wrap --spec spec.json ls -la"], setup=SPEC, check=unknown_option)


def jsonl(r, work):
    line = json.loads(r.stdout)
    # npm ci installs packages: denied in review mode, the id echoed back
    ok = r.returncode != 2 and line.get("id") == 1 and line.get("decision") == "deny"
    return None if ok else f"status {r.returncode}, got {r.stdout!r}"


run_chain("cc-classify(1): printf | cc-classify --jsonl", "man/cc-classify.1",
          ["""printf '%s\\n' '{"cmd":"npm ci","mode":"review","id":1}' | cc-classify --jsonl"""], check=jsonl)


# cc-pushgate's ready event feeds git-config, whose output git includes.
def pushgate(r, work):
    if r.returncode != 0:
        return f"status {r.returncode}"
    cfg = subprocess.run(["git", "-C", os.path.join(work, "srv/agent/app"), "config", "--get-regexp", r"^url\..*insteadof$"],
                         capture_output=True, text=True, env=dict(os.environ, HOME=work))
    return None if "127.0.0.1" in cfg.stdout else f"no insteadOf rewrite in the app's git config: {cfg.stdout!r}"


run_chain("cc-pushgate(1): the ready event feeds git-config and git", "man/cc-pushgate.1",
          ["cc-pushgate --upstream https://github.com --repo acme/app \\\n"
           "    --policy policy.json --token-command 'vault-token --write' > events &",
           "until [ -s events ]; do sleep 0.1; done   # the ready event is the first line",
           "url=$(head -n1 events | jq -r .url)",
           'cc-pushgate git-config --url "$url" > /srv/agent/pushgate.config',
           "git -C /srv/agent/app config --add include.path /srv/agent/pushgate.config"],
          setup="mkdir -p srv/agent && git init -q srv/agent/app && "
                "printf '#!/bin/sh\\necho token\\n' > bin/vault-token && chmod +x bin/vault-token && "
                "cp \"$CC_DATA_DIR/policy/default.json\" policy.json",
          moves=[("/srv/agent", "/srv/agent")], check=pushgate)

# cc-egress's ready line, saved as a file, is cc-wrap --egress's input.
probe = subprocess.run([os.path.join(build, "cmd", "cc-probe", "cc-probe"), "--json"], capture_output=True, text=True)
native = probe.returncode == 0 and json.loads(probe.stdout).get("backend") == "native"
if not native:
    print("skip cc-wrap(1) shared cc-egress chain: no native sandbox backend on this host")
else:
    run_chain("cc-wrap(1): a running cc-egress's ready line feeds cc-wrap --egress", "man/cc-wrap.1",
              ["cc-egress --spec spec.json --unix-dir /run/cc/s1 --fd-inbox /run/cc/s1/inbox.sock > egress.jsonl &",
               "until [ -s egress.jsonl ]; do sleep 0.1; done   # the ready line is its first",
               "head -n1 egress.jsonl > ready.json",
               "cc-wrap --spec review.json --egress ready.json --timeout 60 -- git diff"],
              setup=SPEC + " && mkdir -p run/cc/s1 && "
                    "jq '.mode = \"review\"' spec.json > review.json",
              moves=[("/run/cc/", "/run/cc/")])
sys.exit(1 if failed else 0)
