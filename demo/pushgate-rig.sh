# Sourced by demo/50-pushgate.sh and bench/50-pushgate.sh: a real smart-HTTP
# upstream on 127.0.0.1 (lighttpd running git http-backend, Basic auth where
# the read token fetches and only the write token pushes).
#   rig_start DIR      -> sets RIG_URL (base URL), RIG_PID; repos under DIR/repos
#   rig_repo DIR O/N   -> a bare repo
#   rig_stop           -> stops lighttpd by its PID
RIG_WRITE_TOKEN=w-demo-$$
RIG_READ_TOKEN=r-demo-$$

rig_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

rig_start() {
  local dir=$1 port
  mkdir -p "$dir/repos" "$dir/uploads"
  printf 'x-access-token:%s\nreader:%s\n' "$RIG_WRITE_TOKEN" "$RIG_READ_TOKEN" > "$dir/users"
  chmod 600 "$dir/users"
  port=$(rig_free_port)
  local req='("method" => "basic", "realm" => "git", "require" =>'
  cat > "$dir/lighttpd.conf" <<CONF
server.document-root = "$dir"
server.bind = "127.0.0.1"
server.port = $port
server.errorlog = "$dir/error.log"
server.upload-dirs = ("$dir/uploads")
server.modules = ("mod_auth", "mod_authn_file", "mod_alias", "mod_setenv", "mod_cgi")
auth.backend = "plain"
auth.backend.plain.userfile = "$dir/users"
alias.url = ("/git/" => "/usr/lib/git-core/git-http-backend/")
\$HTTP["url"] =~ "^/git/" {
  cgi.assign = ("" => "")
  setenv.add-environment = ("GIT_PROJECT_ROOT" => "$dir/repos", "GIT_HTTP_EXPORT_ALL" => "1", "HOME" => "$dir")
  auth.require = ("" => $req "valid-user"))
}
\$HTTP["querystring"] =~ "service=git-receive-pack" { auth.require = ("" => $req "user=x-access-token")) }
\$HTTP["url"] =~ "/git-receive-pack\$" { auth.require = ("" => $req "user=x-access-token")) }
CONF
  lighttpd -D -f "$dir/lighttpd.conf" 2>"$dir/lighttpd.err" &
  RIG_PID=$!
  RIG_URL="http://127.0.0.1:$port/git"
  for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0
    sleep 0.1
  done
  echo "lighttpd did not start: $(cat "$dir/lighttpd.err")" >&2
  return 1
}

rig_repo() {
  rm -rf "$1/repos/$2.git"
  git init -q --bare -b main "$1/repos/$2.git"
  # Keep pushed packs whole (as GitHub does) rather than exploding them into
  # zlib-compressed loose objects, which would dominate big pushes.
  git -C "$1/repos/$2.git" config receive.unpackLimit 1
}

rig_stop() {
  [ -n "${RIG_PID:-}" ] && kill "$RIG_PID" 2>/dev/null && wait "$RIG_PID" 2>/dev/null
  RIG_PID=
}
