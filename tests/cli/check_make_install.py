#!/usr/bin/env python3
"""`make install PREFIX=DIR` installs into DIR even when the build directory
was configured earlier with another prefix (by `make demo` or `make test`):
the Makefile reconfigures first, and leaves a matching prefix alone. meson
and ninja are replaced by stubs that record how they were called."""
import json
import os
import subprocess
import sys
import tempfile

root = os.environ["CC_SOURCE_DIR"]
failed = 0


def fail(msg):
    global failed
    print("FAIL " + msg)
    failed += 1


def make_install(configured, prefix):
    with tempfile.TemporaryDirectory(prefix="cc-make-") as tmp:
        stubs, build, log = os.path.join(tmp, "bin"), os.path.join(tmp, "build"), os.path.join(tmp, "calls")
        os.makedirs(stubs)
        os.makedirs(build)
        open(os.path.join(build, "build.ninja"), "w").close()
        options = json.dumps([{"name": "prefix", "value": configured}, {"name": "bindir", "value": "bin"}])
        for tool, answer in (("meson", options), ("ninja", "")):
            path = os.path.join(stubs, tool)
            with open(path, "w") as f:
                f.write("#!/bin/sh\necho \"%s $*\" >> '%s'\n" % (tool, log))
                if answer:
                    f.write("[ \"$1\" = introspect ] && echo '%s'\n" % answer)
                f.write("exit 0\n")
            os.chmod(path, 0o755)
        env = dict(os.environ, PATH=stubs + os.pathsep + os.environ["PATH"])
        r = subprocess.run(["make", "-s", "-C", root, "install", "BUILD=" + build, "PREFIX=" + prefix],
                           env=env, capture_output=True, text=True)
        calls = open(log).read().splitlines() if os.path.exists(log) else []
        return r, [c.replace(build, "BUILD") for c in calls]


r, calls = make_install("/usr/local", "/opt/cc-test")
if r.returncode != 0:
    fail("make install with a new PREFIX: status %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
if "meson configure BUILD --prefix=/opt/cc-test" not in calls:
    fail("make install PREFIX=/opt/cc-test after a /usr/local build did not reconfigure: %s" % calls)
elif calls.index("meson configure BUILD --prefix=/opt/cc-test") > calls.index("meson install -C BUILD --destdir "):
    fail("reconfigured after installing: %s" % calls)
elif not r.stderr.startswith("cc: prefix /usr/local -> /opt/cc-test: reconfiguring "):
    fail("no note about the reconfiguration on stderr: %r" % r.stderr)
else:
    print("ok   a new PREFIX reconfigures before installing")

r, calls = make_install("/opt/cc-test", "/opt/cc-test")
if r.returncode != 0 or any(c.startswith("meson configure") for c in calls) or r.stderr:
    fail("make install with the configured PREFIX reconfigured or complained: %s %r" % (calls, r.stderr))
elif "meson install -C BUILD --destdir " not in calls:
    fail("make install did not install: %s" % calls)
else:
    print("ok   the configured PREFIX is left alone")
sys.exit(1 if failed else 0)
