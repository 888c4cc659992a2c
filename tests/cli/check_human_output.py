#!/usr/bin/env python3
"""Human output: --format text|json for cc-wrap --print and cc-egress --check
and --dry-run (text on a terminal, JSON otherwise), colour only on a terminal
and never with NO_COLOR, --log-format time on every tool's stderr lines, and
a bad --format or --log-format refused with exit 2 and one line."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

build = os.environ["CC_BIN_DIR"]
failed = 0
checked = 0


def tool(name):
    return os.path.join(build, "cmd", name, name)


def check(cond, what):
    global failed, checked
    checked += 1
    if not cond:
        print("FAIL " + what)
        failed += 1


def run(args, env=None):
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    if env:
        e.update(env)
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env=e)


def on_tty(args, env=None):
    """Runs args with a terminal as stdout (script(1)); returns its output."""
    cmd = " ".join("'" + a.replace("'", "'\\''") + "'" for a in args)
    return run(["script", "-qec", cmd, "/dev/null"], env).stdout


ESC = "\x1b["
egress = tool("cc-egress")
check_args = [egress, "--no-baseline", "--allow", "one.test:443", "--check", "one.test:443", "two.test:443"]

# Piped: JSON by default, the same with --format json, text when asked.
r = run(check_args)
lines = [json.loads(l) for l in r.stdout.splitlines()]
check(r.returncode == 1 and [l["decision"] for l in lines] == ["allow", "deny"], "cc-egress --check piped: JSON lines")
check(run(check_args + ["--format", "json"]).stdout == r.stdout, "cc-egress --check --format json: the same lines")
t = run(check_args + ["--format", "text"])
check(t.returncode == 1, "cc-egress --check --format text: status 1 (a target denied)")
check(t.stdout.splitlines()[0].startswith("allow one.test:443  allowed  [allow one.test:443 (--allow)]"),
      "cc-egress --check text: the allowed line: " + t.stdout)
check(t.stdout.splitlines()[1].startswith("deny  two.test:443  host two.test is not in the allowlist"),
      "cc-egress --check text: the denied line")
check(ESC not in t.stdout, "cc-egress --check text into a pipe: no colour")

# A terminal: text by default, coloured; NO_COLOR turns the colour off only.
if shutil.which("script"):
    tty = on_tty(check_args)
    check("\x1b[32mallow\x1b[0m" in tty and "\x1b[31mdeny\x1b[0m" in tty, "cc-egress --check on a terminal: coloured text: " + repr(tty))
    plain = on_tty(check_args, {"NO_COLOR": "1"})
    check(ESC not in plain and "allow one.test:443" in plain, "NO_COLOR: text without colour: " + repr(plain))
    forced = on_tty(check_args + ["--format", "json"])
    check(forced.lstrip().startswith("{") and ESC not in forced, "--format json on a terminal: JSON")
else:
    print("note: script(1) not installed: the terminal checks are skipped")

d = run([egress, "--no-baseline", "--allow", "one.test", "--dry-run", "--format", "text"])
check(d.returncode == 0 and d.stdout.startswith("network  on (allow by default:chat in chat mode"),
      "cc-egress --dry-run --format text: the network line: " + d.stdout[:200])
check("allowed names (1)\n  one.test:80,443  --allow\n" in d.stdout, "cc-egress --dry-run text: the allow list")
check(json.loads(run([egress, "--no-baseline", "--dry-run"]).stdout)["event"] == "plan", "cc-egress --dry-run piped: JSON")

# cc-classify: the explanation on a terminal or with --format text, JSON
# piped; an option's value is never read as part of the command line.
classify = tool("cc-classify")
c = run([classify, "--format", "text", "rm -rf /"])
check(c.returncode == 11 and c.stdout.startswith("deny   rm -rf /\n"), "cc-classify --format text: " + c.stdout[:200])
check(c.stdout.rstrip("\n").splitlines()[-1].startswith("line: deny in chat mode"), "cc-classify text: the line's verdict")
for extra in (["--format", "json"], ["--log-format", "time"], []):
    c = run([classify] + extra + ["ls"])
    j = json.loads(c.stdout)
    check(c.returncode == 0 and j["commands"][0]["argv"] == ["ls"], f"cc-classify {extra}: JSON, argv ['ls']: {c.stdout[:200]}")
c = run([classify, "--explain", "--format", "json", "ls"])
check(c.returncode == 2 and c.stderr == "cc-classify: --explain is the text form: not with --format json\n",
      "cc-classify --explain --format json: " + c.stderr)
if shutil.which("script"):
    tty = on_tty([classify, "ls"])
    check("\x1b[32mallow\x1b[0m  ls" in tty, "cc-classify on a terminal: coloured text: " + repr(tty[:200]))

# cc-wrap --print.
work = tempfile.mkdtemp(prefix="cc-human-")
os.chmod(work, 0o755)
spec = os.path.join(work, "spec.json")
with open(spec, "w") as f:
    json.dump({"sessionId": "human", "workspaceId": "ws", "bindMounts": [{"hostPath": work}], "guestWorkdir": work}, f)
wrap = tool("cc-wrap")
p = run([wrap, "--spec", spec, "--print", "--", "ls", "-la"])
check(p.returncode == 0 and json.loads(p.stdout)["sessionId"] == "human", "cc-wrap --print piped: the JSON plan")
p = run([wrap, "--spec", spec, "--print", "--format", "text", "--", "ls", "-la"])
check(p.returncode == 0, "cc-wrap --print --format text: status 0: " + p.stderr)
check(re.search(r"(?m)^session   human$", p.stdout) is not None, "cc-wrap --print text: the session row")
check(re.search(r"(?m)^command   ls -la$", p.stdout) is not None, "cc-wrap --print text: the command row: " + p.stdout[:600])
check(re.search(r"(?m)^mounts \(\d+\)$", p.stdout) is not None and "  bind      " + work + " -> " + work in p.stdout,
      "cc-wrap --print text: the writable bind among the mounts")
check(re.search(r"(?m)^deny rules \(\d+ read, \d+ write\)$", p.stdout) is not None, "cc-wrap --print text: the deny rules")

# --log-format time: every stderr line of the tool starts with its UTC time.
stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
p = run([wrap, "--spec", spec, "--print", "--log-format", "time", "--", "true"])
errs = p.stderr.splitlines()
check(errs and all(re.match(stamp + "cc-wrap: ", l) for l in errs), "cc-wrap --log-format time: " + p.stderr)
p = run([wrap, "--spec", spec + ".missing", "--log-format", "time", "--", "true"])
check(p.returncode == 2 and re.fullmatch(stamp + "cc-wrap: '" + re.escape(spec) + r"\.missing': cannot open: .*\n", p.stderr) is not None,
      "cc-wrap --log-format time: the error line is stamped too: " + p.stderr)
p = run([wrap, "--spec", spec, "--print", "--", "true"])
check(p.stderr.startswith("cc-wrap: "), "cc-wrap without --log-format: plain lines")

# Bad values: exit 2, one line naming the option.
for args, opt in [([egress, "--check", "x.test", "--format", "yaml"], "--format"),
                  ([wrap, "--spec", spec, "--print", "--format", "xml", "--", "true"], "--format"),
                  ([egress, "--check", "x.test", "--log-format", "iso"], "--log-format")]:
    b = run(args)
    check(b.returncode == 2 and b.stderr.count("\n") == 1 and opt in b.stderr and b.stdout == "",
          f"{os.path.basename(args[0])} {opt} bad value: status {b.returncode}: {b.stderr!r}")

shutil.rmtree(work, ignore_errors=True)
print(f"{checked - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
