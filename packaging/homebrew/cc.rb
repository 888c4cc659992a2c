# Homebrew formula for cc. On macOS the native backend is Seatbelt
# (sandbox-exec, shipped with the OS), so there are no sandbox dependencies;
# the Seatbelt profile generator is unverified on hardware (see cc-wrap(1)).
class Cc < Formula
  desc "Blast-radius boundary for coding agents: sandbox, egress proxy, push gate"
  homepage "https://example.invalid/cc"
  url "file:///dev/null" # replaced by the release tarball URL at release time
  version "0.1.0"
  license "Apache-2.0"

  depends_on "meson" => :build
  depends_on "ninja" => :build
  depends_on "pkg-config" => :build
  depends_on "cli11" => :build
  depends_on "nlohmann-json" => :build
  depends_on "boost"
  depends_on "c-ares"
  depends_on "openssl@3"
  uses_from_macos "curl"

  def install
    system "meson", "setup", "build", "-Dtests=false", "-Dwerror=false", *std_meson_args
    system "meson", "compile", "-C", "build", "--verbose"
    system "meson", "install", "-C", "build"
  end

  test do
    assert_match "seatbelt", shell_output("#{bin}/cc-probe --json")
    output = shell_output("#{bin}/cc-classify --mode plan -- 'git push origin main'", 11)
    assert_match "deny", output
  end
end
