#!/usr/bin/env python3
"""Every built tool has a man page that renders without warnings and lists
every long option its --help prints (one source of truth drift check), with
the sections the house style asks for."""
import glob
import os
import re
import subprocess
import sys

root = os.environ["CC_SOURCE_DIR"]
bin_dir = os.environ["CC_BIN_DIR"]
failed = 0
tools = sorted(glob.glob(os.path.join(bin_dir, "cmd", "cc-*", "cc-*")))
tools = [t for t in tools if os.access(t, os.X_OK) and os.path.isfile(t)]
if not tools:
    print("no tools built", file=sys.stderr)
    sys.exit(1)
pages = [os.path.join(root, "man", "cc-json.5")]
for tool in tools:
    name = os.path.basename(tool)
    page = os.path.join(root, "man", name + ".1")
    if not os.path.exists(page):
        print(f"FAIL {name}: no man page {page}")
        failed += 1
        continue
    pages.append(page)
    text = open(page).read()
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        if not re.search(r"^\.SH \"?" + section, text, re.M):
            print(f"FAIL {name}: man page has no {section} section")
            failed += 1
    helptext = subprocess.run([tool, "--help"], capture_output=True, text=True).stdout
    opts = sorted(set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", helptext)))
    if not opts:
        print(f"FAIL {name}: --help lists no long options")
        failed += 1
    for opt in opts:
        roff = r"\-\-" + opt.replace("-", r"\-")
        if roff not in text:
            print(f"FAIL {name}: --{opt} is in --help but not in {os.path.basename(page)}")
            failed += 1
    print(f"ok   {name}: {len(opts)} options checked")
# A request macro splits its arguments on blanks and takes a double quote as
# an argument delimiter: JSON with a blank in a .B/.BR line loses its quotes.
# Such examples are written with \fB...\fR on a text line.
macro_json = re.compile(r'^\.(B|I|R|BR|RB|BI|IB|IR|RI|SM|TP|IP) .*\{"[^}]* ')
for page in pages:
    for n, l in enumerate(open(page), 1):
        if macro_json.search(l):
            print(f"FAIL {os.path.basename(page)}:{n}: JSON with a blank in a macro line loses its quotes: {l.strip()}")
            failed += 1
for page in pages:
    r = subprocess.run(["man", "-l", "--warnings", "-E", "UTF-8", page], capture_output=True, text=True,
                       env=dict(os.environ, MANWIDTH="80"))
    warnings = [l for l in r.stderr.splitlines() if l.strip()]
    if r.returncode != 0 or warnings or not r.stdout.strip():
        print(f"FAIL {os.path.basename(page)} does not render cleanly: {warnings[:3]}")
        failed += 1
    else:
        print(f"ok   {os.path.basename(page)} renders")
sys.exit(1 if failed else 0)
