# Short aliases over meson; meson.build is the truth.
BUILD ?= build
PREFIX ?= /usr/local
MESON_SETUP = meson setup $(BUILD) --prefix=$(PREFIX) $(MESON_ARGS)

.PHONY: all deps build test demo bench install deb fuzz asan clean shell-diff

all: build

deps:
	@bash scripts/deps.sh

$(BUILD)/build.ninja:
	@$(MESON_SETUP) >/dev/null

build: deps $(BUILD)/build.ninja
	@ninja -C $(BUILD)

# Every tier; ends with one line `N passed, N failed, N skipped`.
test: build
	@rm -rf $(BUILD)/test-summary
	@meson test -C $(BUILD) --no-rebuild --print-errorlogs $(TESTARGS) > $(BUILD)/meson-test.out 2>&1; \
	  rc=$$?; tail -n 40 $(BUILD)/meson-test.out; \
	  python3 tests/summary.py $(BUILD) || rc=1; exit $$rc

# The shell parser against /bin/bash on a corpus (tests/shell/test_shell_bash.cpp);
# CORPUS=dir adds every file under dir as one more script.
shell-diff: build
	@CC_BASH_CORPUS=$(CORPUS) meson test -C $(BUILD) --no-rebuild --verbose shell-bash-diff 2>&1 | grep -E '^differential against|^ *[0-9]+/[0-9]+ .*shell-bash-diff'

demo: build
	@bash demo/run.sh $(BUILD)

bench: deps
	@[ -f $(BUILD)-bench/build.ninja ] || meson setup $(BUILD)-bench -Dbench=true -Dtests=false >/dev/null
	@ninja -C $(BUILD)-bench
	@bash bench/run.sh $(BUILD)-bench

install: build
	@meson install -C $(BUILD) --destdir "$(DESTDIR)"

deb: deps
	@bash packaging/build-deb.sh

fuzz: deps
	@[ -f $(BUILD)-fuzz/build.ninja ] || CXX=clang++ meson setup $(BUILD)-fuzz -Dfuzz=true -Dtests=false -Db_lundef=false >/dev/null
	@ninja -C $(BUILD)-fuzz

asan: deps
	@[ -f $(BUILD)-asan/build.ninja ] || meson setup $(BUILD)-asan -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=false >/dev/null
	@ninja -C $(BUILD)-asan
	@rm -rf $(BUILD)-asan/test-summary
	@meson test -C $(BUILD)-asan --no-rebuild --print-errorlogs > $(BUILD)-asan/meson-test.out 2>&1; \
	  rc=$$?; tail -n 40 $(BUILD)-asan/meson-test.out; python3 tests/summary.py $(BUILD)-asan || rc=1; exit $$rc

clean:
	rm -rf $(BUILD) $(BUILD)-bench $(BUILD)-fuzz $(BUILD)-asan
