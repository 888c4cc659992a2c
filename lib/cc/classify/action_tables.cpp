// Which handler reads which command name, which commands only read, and
// which always carry the same classes. Sorted at compile time.
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

const Analyzer::Handler* Analyzer::handler(sv name) {
    static constexpr auto table = make_table<Handler>([](auto set) {
        set({"env"}, &Analyzer::w_env);
        set({"nohup", "builtin", "nocorrect", "noglob", "unbuffer", "catchsegv", "coproc"}, &Analyzer::w_simple);
        set({"command"}, &Analyzer::w_command);
        set({"exec"}, &Analyzer::w_exec);
        set({"time"}, &Analyzer::w_time);
        set({"timeout", "gtimeout"}, &Analyzer::w_timeout);
        set({"nice"}, &Analyzer::w_nice);
        set({"ionice"}, &Analyzer::w_ionice);
        set({"stdbuf"}, &Analyzer::w_stdbuf);
        set({"setsid"}, &Analyzer::w_setsid);
        set({"taskset"}, &Analyzer::w_taskset);
        set({"chrt"}, &Analyzer::w_chrt);
        set({"flock"}, &Analyzer::w_flock);
        set({"watch"}, &Analyzer::w_watch);
        set({"xargs"}, &Analyzer::w_xargs);
        set({"sudo", "sudoedit"}, &Analyzer::w_sudo);
        set({"doas"}, &Analyzer::w_doas);
        set({"su", "runuser"}, &Analyzer::w_su);
        set({"pkexec"}, &Analyzer::w_pkexec);
        set({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "busybox"}, &Analyzer::w_shell);
        set({"eval"}, &Analyzer::w_eval);
        set({"trap"}, &Analyzer::w_trap);
        set({"source", "."}, &Analyzer::w_source);
        set({"find"}, &Analyzer::w_find);
        set({"rm", "unlink"}, &Analyzer::f_rm);
        set({"cp", "mv", "ln", "install", "truncate", "touch", "mkdir", "rmdir", "chown", "chgrp", "shred",
             "mkfifo", "mknod", "patch", "split", "csplit", "zip", "rename", "dos2unix", "unix2dos", "sponge",
             "ar", "cpio", "7z", "7za", "rar", "unrar", "setfacl", "chattr", "link", "fallocate",
             "git-lfs", "javac", "gcc", "g++", "cc", "c++", "clang", "clang++", "rustc", "tsc", "ld", "as",
             "prettier", "black", "gofmt", "rustfmt", "clang-format", "isort",
             "autopep8", "yapf", "shfmt", },
            &Analyzer::f_write);
        set({"chmod"}, &Analyzer::f_chmod);
        set({"dd"}, &Analyzer::f_dd);
        set({"tee"}, &Analyzer::f_tee);
        set({"sed", "gsed"}, &Analyzer::f_sed);
        set({"man"}, &Analyzer::f_man);
        set({"xxd"}, &Analyzer::f_xxd);
        set({"awk", "gawk", "mawk", "nawk"}, &Analyzer::f_awk);
        set({"sort"}, &Analyzer::f_sort);
        set({"uniq"}, &Analyzer::f_uniq);
        set({"tar", "bsdtar", "gtar"}, &Analyzer::f_tar);
        set({"unzip"}, &Analyzer::f_unzip);
        set({"gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4", "lzma", "zcat",
             "bzcat", "xzcat", "zstdcat", "pigz", "brotli"},
            &Analyzer::f_compress);
        set({"mktemp"}, &Analyzer::f_mktemp);
        set({"yq"}, &Analyzer::f_yq);
        set({"date"}, &Analyzer::f_date);
        set({"crontab"}, &Analyzer::f_crontab);
        set({"mount", "umount"}, &Analyzer::f_mount);
        set({"sysctl"}, &Analyzer::f_sysctl);
        set({"kill", "pkill", "killall"}, &Analyzer::f_kill);
        set({"shutdown", "reboot", "poweroff", "halt", "kexec", "killall5"}, &Analyzer::f_power);
        set({"init", "telinit"}, &Analyzer::f_init);
        set({"systemctl"}, &Analyzer::f_systemctl);
        set({"wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk", "mke2fs", "mkswap",
             "blkdiscard", "mkdosfs", "mkntfs", "cryptsetup", "pvcreate", "vgcreate", "lvremove", "zpool",
             "tune2fs", "e2fsck", "fsck", "badblocks", "hdparm", "nvme", "sdparm"},
            &Analyzer::f_disk);
        set({"curl"}, &Analyzer::n_curl);
        set({"wget", "wget2"}, &Analyzer::n_wget);
        set({"http", "https", "xh", "xhs"}, &Analyzer::n_httpie);
        set({"ssh", "mosh", "autossh"}, &Analyzer::n_ssh);
        set({"scp", "rsync", "sftp", "ftp", "rclone"}, &Analyzer::n_copy);
        set({"git"}, &Analyzer::git);
        set({"gh"}, &Analyzer::gh);
        set({"glab", "tea", "hub", "az"}, &Analyzer::forge);
        set({"npm"}, &Analyzer::npm);
        set({"pnpm"}, &Analyzer::pnpm);
        set({"yarn", "yarnpkg"}, &Analyzer::yarn);
        set({"bun"}, &Analyzer::bun);
        set({"uv"}, &Analyzer::uv);
        set({"poetry"}, &Analyzer::p_poetry);
        set({"pipx"}, &Analyzer::p_pipx);
        set({"conda", "mamba", "micromamba"}, &Analyzer::p_conda);
        set({"apt", "apt-get", "aptitude", "nala"}, &Analyzer::p_apt);
        set({"dpkg"}, &Analyzer::p_dpkg);
        set({"rpm"}, &Analyzer::p_rpm);
        set({"dnf", "yum", "microdnf", "zypper", "tdnf", "rpm-ostree"}, &Analyzer::p_dnf);
        set({"apk"}, &Analyzer::p_apk);
        set({"pacman", "yay", "paru"}, &Analyzer::p_pacman);
        set({"brew"}, &Analyzer::p_brew);
        set({"port"}, &Analyzer::p_port);
        set({"snap", "flatpak"}, &Analyzer::p_snap);
        set({"nix-env", "nix", "nix-shell", "nix-build"}, &Analyzer::p_nix);
        set({"cargo"}, &Analyzer::p_cargo);
        set({"go"}, &Analyzer::p_go);
        set({"gem"}, &Analyzer::p_gem);
        set({"bundle", "bundler"}, &Analyzer::p_bundle);
        set({"composer"}, &Analyzer::p_composer);
        set({"dotnet"}, &Analyzer::p_dotnet);
        set({"mvn", "mvnw", "./mvnw", "gradle", "gradlew", "./gradlew"}, &Analyzer::p_build_publish);
        set({"twine", "flit", "hatch", "vsce", "ovsx", "deno", "helm", "skopeo"}, &Analyzer::p_publisher);
        set({"rustup", "nvm", "pyenv", "asdf", "mise", "rtx", "volta", "sdk", "opam", "cabal", "stack",
             "luarocks", "cpan", "cpanm", "mix", "fnm", "n", "corepack", "goenv", "rbenv", "jenv", "pip-sync"},
            &Analyzer::p_installer);
        set({"node", "nodejs", "ruby", "perl", "php", "lua", "luajit", "Rscript", "R", "julia", "java",
             "kotlin", "scala", "groovy", "swift", "osascript", "pwsh", "powershell", "tclsh", "wish",
             "expect", "guile", "racket", "sbcl", "ghci", "runghc", "elixir", "erl", "escript", "iex", "irb",
             "jshell", "fish", "csh", "tcsh", "nu", "xonsh", "ts-node", "tsx", "esno", "bunx", "npx", "uvx",
             "pytest", "py.test", "jest", "vitest", "mocha", "tox", "nox", "make", "gmake", "bmake", "cmake",
             "ninja", "meson", "just", "task", "rake", "bazel", "bazelisk", "buck", "buck2", "sbt", "ant",
             "terraform", "tofu", "ansible", "ansible-playbook", "pulumi", "vagrant", "packer",
             "docker-compose", "parallel", "entr", "watchexec", "screen", "tmux", "at", "batch", "qemu-system-x86_64",
             "strace", "ltrace", "gdb", "lldb", "valgrind", "perf", "ctest", "cypress", "playwright",
             "webpack", "vite", "esbuild", "rollup", "turbo", "nx", "lerna", "tsc-watch", "nodemon", "pm2",
             "gunicorn", "uvicorn", "flask", "django-admin", "manage.py", "rails", "php-fpm", "nginx",
             "apachectl", "redis-server", "mysqld", "postgres", "pg_ctl", "mysql", "psql", "sqlite3",
             "mongosh", "redis-cli", "jupyter", "ipython", "conda-run", "direnv", "service", "ffmpeg",
             "convert", "magick", "pandoc", "latexmk", "pdflatex", "xelatex", "emcc", "wasm-pack",
             "eslint", "tslint", "stylelint", "mypy", "pyright", "pylint", "flake8", "ruff",
             "golangci-lint", "shellcheck", "hadolint", "semgrep", "bandit", "codespell", "pre-commit",
             "husky", "lefthook", "act", "podman-compose", "minikube", "kind", "k3d", "skaffold", "tilt",
             "aws", "gcloud", "doctl", "flyctl", "heroku", "vercel", "netlify", "wrangler", "firebase",
             "supabase", "railway", "stripe"},
            &Analyzer::interpreter);
        set({"docker", "podman", "nerdctl"}, &Analyzer::docker);
        set({"kubectl", "oc"}, &Analyzer::kubectl);
        set({"ip"}, &Analyzer::ip);
        set({"hostname"}, &Analyzer::hostname);
        set({"vi", "vim", "nvim", "nano", "emacs", "ed", "ex", "pico", "micro", "joe", "kak", "hx", "code",
             "subl", },
            &Analyzer::editor);
        set({"nsenter", "unshare", "chroot", "pivot_root", "switch_root", "insmod", "modprobe", "rmmod",
             "capsh", "systemd-nspawn", "lxc-attach", "lxc-execute", "criu", },
            &Analyzer::escape);
        set({"passwd", "chpasswd", "useradd", "usermod", "userdel", "groupadd", "groupmod", "groupdel",
             "gpasswd", "adduser", "deluser", "addgroup", "delgroup", "newgrp", "sg", "setcap", "setpriv",
             "visudo", "chsh", "chfn", "vipw", "vigr", "newuidmap", "newgidmap"},
            &Analyzer::privilege);
    });
    static_assert(no_duplicates(table));
    return lookup(table, name);
}

bool Analyzer::readonly_command(sv name) {
    static constexpr auto table = sorted_names({
        "ls", "ll", "la", "dir", "vdir", "cat", "tac", "head", "tail", "less", "more", "most", "grep", "egrep",
        "fgrep", "rg", "ag", "ack", "wc", "cut", "tr", "diff", "diff3", "sdiff", "cmp", "comm", "file", "stat",
        "du", "df", "pwd", "echo", "printf", "true", "false", "test", "[", ":", "which", "type", "whereis",
        "whoami", "id", "groups", "uname", "printenv", "basename", "dirname", "realpath", "readlink", "jq",
        "gojq", "jaq", "column", "nl", "od", "xxd", "hexdump", "hd", "strings", "md5sum", "sha1sum", "sha224sum",
        "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "base64", "base32", "basenc", "seq",
        "sleep", "cd", "pushd", "popd", "dirs", "export", "set", "unset", "shopt", "read", "readarray",
        "mapfile", "local", "declare", "typeset", "readonly", "alias", "unalias", "shift", "return", "exit",
        "break", "continue", "getopts", "hash", "ulimit", "umask", "history", "help", "man", "info", "whatis",
        "apropos", "ps", "pgrep", "pidof", "top", "htop", "btop", "free", "uptime", "w", "who", "last",
        "lastlog", "lsof", "ss", "netstat", "lsblk", "blkid", "findmnt", "tree", "fd", "fdfind", "locate",
        "plocate", "expr", "bc", "dc", "factor", "numfmt", "fold", "fmt", "pr", "expand", "unexpand", "paste",
        "join", "rev", "shuf", "look", "iconv", "yes", "nproc", "arch", "lscpu", "lsmod", "lspci", "lsusb",
        "dmesg", "journalctl", "getent", "locale", "tput", "stty", "clear", "reset", "wait", "jobs", "fg", "bg",
        "disown", "times", "caller", "compgen", "complete", "let", "ldd", "nm", "objdump", "readelf", "size",
        "tokei", "cloc", "scc", "tty", "logname", "users", "hostid", "vmstat", "iostat",
        "mpstat", "sar", "pstree", "getconf", "cal", "ncal", "bat", "batcat", "exa", "eza", "lsd",
        "delta", "difft", "colordiff", "icdiff", "diffstat", "wdiff", "tldr", "cheat", "highlight", "pygmentize",
        "xmllint", "csvlook", "csvstat", "mlr", "xsv", "qsv", "exiftool", "identify",
        "ffprobe", "mediainfo", "pdfinfo", "pdftotext", "glow", "mdcat", "fzf", "sk",
        "zgrep", "zless", "zmore", "bzgrep", "xzgrep", "zdiff", "lsattr", "getfacl", "namei", "lslocks",
        "lsns", "lsipc", "ipcs", "systemd-detect-virt", "shasum", "nvidia-smi",
        "sensors", "dmidecode", "lshw", "inxi", "neofetch", "fastfetch", "screenfetch", "apt-cache", "dpkg-query", "apt-file", "pydoc", "pydoc3", "perldoc",
        "ri", "javap", "otool", "sw_vers", "system_profiler", "mdfind", "mdls", "pbpaste", "say", "ack-grep", "tsort", "ptx",
        "uuidgen", "mimetype", "xdg-mime", "ncdu", "dust", "duf", "procs",
        "bottom", "glances", "nload", "iftop", "nethogs", "iotop", "powertop", "pv", "envsubst", "gettext",
        "ngettext", "sha256", "md5", "rgrep"});
    static_assert(no_duplicates(table));
    return contains(table, name);
}

const Analyzer::Classes* Analyzer::plain_classes(sv name) {
    static constexpr auto table = make_table<Classes>([](auto set) {
        set({"ping", "ping6", "dig", "nslookup", "host", "traceroute", "tracepath", "mtr", "whois", "nmap"}, Classes{kNet, {}});
        set({"nc", "ncat", "netcat", "socat", "telnet", "websocat", "grpcurl"}, Classes{kNet, kNetWrite});
        set({"aria2c"}, Classes{kNet, kWrite});
        set({"tcpdump", "iptables", "nft", "ufw", "route", "ifconfig", "swapon"}, Classes{kPriv, {}});
        set({"swapoff", "debugfs", "update-grub", "grub-install", "efibootmgr"}, Classes{kDestroy, {}});
        set({"losetup"}, Classes{kEscape, {}});
    });
    static_assert(no_duplicates(table));
    return lookup(table, name);
}

}  // namespace cc::classify::detail
