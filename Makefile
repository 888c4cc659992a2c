# Short aliases over meson; meson.build is the truth.
BUILD ?= build
PREFIX ?= /usr/local
# meson wants an absolute prefix: `make install PREFIX=out` means ./out.
MESON_SETUP = meson setup $(BUILD) --prefix=$(abspath $(PREFIX)) $(MESON_ARGS)

.PHONY: all deps build test demo bench install deb fuzz asan clean shell-diff format lint vm-kernel-built

all: build

# make deps installs everything; each target asks only for what it needs.
deps:
	@bash scripts/deps.sh all
	@bash scripts/microvm-kernel.sh $(BUILD)/microvm

$(BUILD)/build.ninja:
	@bash scripts/deps.sh build
	@$(MESON_SETUP) >/dev/null

build: $(BUILD)/build.ninja
	@ninja -C $(BUILD)

# Every tier; ends with one line `N passed, N failed, N skipped`.
test: build
	@bash scripts/deps.sh test
	@bash scripts/microvm-kernel.sh $(BUILD)/microvm
	@rm -rf $(BUILD)/test-summary
	@meson test -C $(BUILD) --no-rebuild --print-errorlogs $(TESTARGS) > $(BUILD)/meson-test.out 2>&1; \
	  rc=$$?; tail -n 40 $(BUILD)/meson-test.out; \
	  python3 tests/summary.py $(BUILD) || rc=1; exit $$rc

# A guest kernel built for the microvm backend (drivers built in, no ACPI,
# no PCI): a cold boot in about half the time of Debian's generic kernel.
# About 5 minutes on two CPUs, so not part of make test; its test
# (sandbox-microvm) runs once BUILD/microvm-built is there.
vm-kernel-built:
	@bash scripts/deps.sh vmkernel
	@bash scripts/microvm-kernel.sh --build $(BUILD)/microvm-built

# clang-format -i (.clang-format) over every C++ file in lib cmd tests fuzz
# bench; the committed tree is its fixed point.
format:
	@bash scripts/deps.sh format
	@find lib cmd tests fuzz bench -type f \( -name '*.cpp' -o -name '*.hpp' \) -print0 | xargs -0 clang-format -i

# clang-tidy (.clang-tidy) over the sources the build compiles, through
# $(BUILD)/compile_commands.json; minutes on two cores, so not part of make
# test. LINT=regex narrows it to matching paths.
lint: $(BUILD)/build.ninja
	@bash scripts/deps.sh lint
	@bash scripts/lint.sh $(BUILD) '$(LINT)'

# The shell parser against /bin/bash on a corpus (tests/shell/test_shell_bash.cpp);
# CORPUS=dir adds every file under dir as one more script.
shell-diff: build
	@bash scripts/deps.sh test
	@CC_BASH_CORPUS=$(CORPUS) meson test -C $(BUILD) --no-rebuild --verbose shell-bash-diff 2>&1 | grep -E '^differential against|^ *[0-9]+/[0-9]+ .*shell-bash-diff'

demo: build
	@bash scripts/deps.sh demo
	@bash demo/run.sh $(BUILD)

bench:
	@bash scripts/deps.sh bench
	@bash scripts/microvm-kernel.sh $(BUILD)-bench/microvm
	@[ -f $(BUILD)-bench/build.ninja ] || meson setup $(BUILD)-bench -Dbench=true -Dtests=false >/dev/null
	@ninja -C $(BUILD)-bench
	@bash bench/run.sh $(BUILD)-bench

# The build directory keeps the prefix it was first configured with (and the
# binaries carry it as their data directory): install into another PREFIX
# reconfigures and rebuilds first.
install: $(BUILD)/build.ninja
	@bash scripts/deps.sh install
	@want='$(abspath $(PREFIX))'; \
	  have=$$(meson introspect $(BUILD) --buildoptions | python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))') || exit 1; \
	  if [ "$$have" != "$$want" ]; then echo "cc: prefix $$have -> $$want: reconfiguring $(BUILD)" >&2; meson configure $(BUILD) --prefix="$$want" >/dev/null || exit 1; fi
	@ninja -C $(BUILD)
	@meson install -C $(BUILD) --destdir "$(DESTDIR)"

deb:
	@bash scripts/deps.sh deb
	@bash packaging/build-deb.sh

fuzz:
	@bash scripts/deps.sh fuzz
	@[ -f $(BUILD)-fuzz/build.ninja ] || CXX=clang++ meson setup $(BUILD)-fuzz -Dfuzz=true -Dtests=false -Db_lundef=false >/dev/null
	@ninja -C $(BUILD)-fuzz

asan:
	@bash scripts/deps.sh asan
	@[ -f $(BUILD)-asan/build.ninja ] || meson setup $(BUILD)-asan -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=false >/dev/null
	@ninja -C $(BUILD)-asan
	@rm -rf $(BUILD)-asan/test-summary
	@meson test -C $(BUILD)-asan --no-rebuild --print-errorlogs > $(BUILD)-asan/meson-test.out 2>&1; \
	  rc=$$?; tail -n 40 $(BUILD)-asan/meson-test.out; python3 tests/summary.py $(BUILD)-asan || rc=1; exit $$rc

clean:
	rm -rf $(BUILD) $(BUILD)-bench $(BUILD)-fuzz $(BUILD)-asan
