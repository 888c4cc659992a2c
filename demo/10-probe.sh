# cc-probe: the start-up line, the JSON, the real diagnostics on this host.
set -u
echo "\$ cc-probe"
cc-probe
echo
echo "\$ cc-probe --json | (selected fields)"
cc-probe --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in ("platform","backend","available","mechanism","requiresInstall","missing")}))'
echo
echo "\$ CC_SERVER_SANDBOX=off cc-probe"
CC_SERVER_SANDBOX=off cc-probe
echo
echo "\$ cc-probe --backend docker      # a legacy stored name"
cc-probe --backend docker
echo
echo "\$ cc-probe --backend microvm     # explicit microvm never falls back"
cc-probe --backend microvm; echo "(exit $?)"
echo
echo "\$ cc-probe --diagnose --data-dir /tmp"
cc-probe --diagnose --data-dir /tmp; echo "(exit $?)"
