# AppLifecycle, built and installed like a C library: liblifecycle (with a versioned soname), its header
# and pkg-config file, the test kit for plugins (liblifecycle-testkit, lifecycle_testkit.h,
# lifecycle-testkit.pc), and lifecycle-host with its example plugins, man page, shell completions and
# documentation (docs/ under share/doc/lifecycle, as the man page's FILES and SEE ALSO say).
#
#   make                                    swift build -c release of what is installed
#   make install PREFIX=/usr/local          install what was built (never builds: run make first)
#   make install PREFIX=/usr DESTDIR=$PWD/stage     staged, for a package (files name PREFIX, not DESTDIR)
#   make uninstall PREFIX=/usr/local        remove exactly what install put there
#   make man                                regenerate docs/man/lifecycle-host.1 from the command's definitions
#
# Needs: swift (6.3 or later), patchelf (sets the soname on the installed copy; Debian: apt-get install
# patchelf), readelf and dd (record the plugin runner in the installed library and host; binutils and coreutils,
# which Swift needs anyway), install, sed. See README.md, "Install", and docs/c-api.md.

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/lifecycle
BASHCOMPLETIONDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPLETIONDIR ?= $(DATADIR)/zsh/site-functions
FISHCOMPLETIONDIR ?= $(DATADIR)/fish/vendor_completions.d
# The example plugins, where the installed `lifecycle-host demo` finds them.
EXAMPLESDIR ?= $(LIBDIR)/lifecycle/examples
# The plugin runner the installed library and host start for an isolated plugin (lifecycle-host run
# --isolate, lc_app_load_plugin_with_options with LC_LOAD_ISOLATED): lifecycle-plugin-runner, a program
# no user runs, so not in BINDIR. Installed there, and its path recorded in the installed liblifecycle.so
# and lifecycle-host (the section .lifecycle_runner of each), so that both run isolated plugins with no
# LC_PLUGIN_RUNNER set. At most 4095 bytes.
RUNNER ?= $(LIBDIR)/lifecycle/lifecycle-plugin-runner

SWIFT ?= swift
PATCHELF ?= patchelf
READELF ?= readelf
CONFIG ?= release
# What `make` builds and `make install` installs from.
BUILD_DIR ?= .build/$(CONFIG)
# 1 (the default): the .pc's Libs carry -Wl,-rpath,LIBDIR, so programs built with it find the library
# in any prefix without ldconfig or LD_LIBRARY_PATH. 0 for a system prefix a distribution packages.
PC_RPATH ?= 1
# The installed library's RUNPATH: the folder of the Swift runtime (libswiftCore.so, …) it needs. The
# default is the runtime of the toolchain that builds it; name another where the runtime is installed
# elsewhere on the target machine.
SWIFT_RUNTIME_DIR ?= $(shell $(SWIFT) -print-target-info 2>/dev/null | tr -d ' \n' | sed -n 's/.*"runtimeLibraryPaths":\["\([^"]*\)".*/\1/p')

# The library's version is the C ABI's (include/lifecycle.h): soname liblifecycle.so.MAJOR.
ABI_MAJOR := $(shell sed -n 's/^\#define LC_ABI_VERSION_MAJOR \([0-9][0-9]*\).*/\1/p' include/lifecycle.h)
ABI_MINOR := $(shell sed -n 's/^\#define LC_ABI_VERSION_MINOR \([0-9][0-9]*\).*/\1/p' include/lifecycle.h)
VERSION := $(ABI_MAJOR).$(ABI_MINOR).0
SONAME := liblifecycle.so.$(ABI_MAJOR)
REALNAME := liblifecycle.so.$(VERSION)
# The C test kit (include/lifecycle_testkit.h): its own soname, the same version; it needs liblifecycle.
TESTKIT_SONAME := liblifecycle-testkit.so.$(ABI_MAJOR)
TESTKIT_REALNAME := liblifecycle-testkit.so.$(VERSION)
EXAMPLES := Echo StateKeeper Greeter CacheTrimmer
# The documentation installed under DOCDIR: the pages and their pictures, the example scenarios.
DOCS := $(wildcard docs/*.md docs/*.svg)
SCENARIOS := $(wildcard docs/scenarios/*.scenario)
# The size of the library's .lifecycle_runner section (LCS_RUNNER_SLOT_SIZE in lifecycle_system.h).
RUNNER_SLOT_SIZE := 4096

.PHONY: all build install uninstall man check-built check-tools print-version

all: build

build:
	$(SWIFT) build -c $(CONFIG) --product lifecycle
	$(SWIFT) build -c $(CONFIG) --product lifecycle-testkit
	$(SWIFT) build -c $(CONFIG) --product lifecycle-host  # and lifecycle-plugin-runner, a dependency of its target
	for example in $(EXAMPLES); do $(SWIFT) build -c $(CONFIG) --product $$example || exit 1; done

print-version:
	@echo $(VERSION)

check-built:
	@test -n "$(ABI_MAJOR)" -a -n "$(ABI_MINOR)" || { echo "make: no LC_ABI_VERSION_MAJOR/MINOR in include/lifecycle.h" >&2; exit 1; }
	@for file in $(BUILD_DIR)/liblifecycle.so $(BUILD_DIR)/liblifecycle-testkit.so $(BUILD_DIR)/lifecycle-host $(BUILD_DIR)/lifecycle-plugin-runner $(EXAMPLES:%=$(BUILD_DIR)/lib%.so); do \
	    test -f "$$file" || { echo "make install: $$file is missing: run 'make' (swift build -c $(CONFIG)) first" >&2; exit 1; }; \
	done

check-tools:
	@command -v $(PATCHELF) >/dev/null 2>&1 || { \
	    echo "make install: patchelf not found. It gives the installed liblifecycle its soname ($(SONAME))" >&2; \
	    echo "and RUNPATH. Install it (Debian, Ubuntu: apt-get install patchelf) or name it: make install PATCHELF=/path/to/patchelf" >&2; \
	    exit 1; }
	@test -n "$(SWIFT_RUNTIME_DIR)" || { \
	    echo "make install: cannot find the Swift runtime folder ('$(SWIFT) -print-target-info' failed)." >&2; \
	    echo "Name it: make install SWIFT_RUNTIME_DIR=/path/to/usr/lib/swift/linux" >&2; exit 1; }
	@command -v $(READELF) >/dev/null 2>&1 || { \
	    echo "make install: readelf not found. It finds where the plugin runner's path goes in the installed library and host." >&2; \
	    echo "Install binutils (Debian, Ubuntu: apt-get install binutils) or name it: make install READELF=/path/to/readelf" >&2; exit 1; }
	@case "$(RUNNER)" in /*) ;; *) echo "make install: RUNNER must be an absolute path (it is '$(RUNNER)')" >&2; exit 1;; esac
	@case "$(RUNNER)" in *[[:space:]]*) echo "make install: RUNNER must not contain a space, tab or newline (it is '$(RUNNER)')" >&2; exit 1;; esac
	@test $$(printf '%s' "$(RUNNER)" | wc -c) -lt $(RUNNER_SLOT_SIZE) || { \
	    echo "make install: RUNNER is longer than $$(($(RUNNER_SLOT_SIZE) - 1)) bytes" >&2; exit 1; }

install: check-built check-tools
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(INCLUDEDIR)" "$(DESTDIR)$(PKGCONFIGDIR)" "$(DESTDIR)$(dir $(RUNNER))" \
	    "$(DESTDIR)$(MANDIR)/man1" "$(DESTDIR)$(BASHCOMPLETIONDIR)" "$(DESTDIR)$(ZSHCOMPLETIONDIR)" \
	    "$(DESTDIR)$(FISHCOMPLETIONDIR)" "$(DESTDIR)$(EXAMPLESDIR)"
	install -m 755 "$(BUILD_DIR)/liblifecycle.so" "$(DESTDIR)$(LIBDIR)/$(REALNAME)"
	# Two calls: patchelf 0.14 applies only the first of --set-soname and --set-rpath given together.
	$(PATCHELF) --set-soname "$(SONAME)" "$(DESTDIR)$(LIBDIR)/$(REALNAME)"
	$(PATCHELF) --set-rpath "$(SWIFT_RUNTIME_DIR)" "$(DESTDIR)$(LIBDIR)/$(REALNAME)"
	install -m 755 "$(BUILD_DIR)/lifecycle-host" "$(DESTDIR)$(BINDIR)/lifecycle-host"
	install -m 755 "$(BUILD_DIR)/lifecycle-plugin-runner" "$(DESTDIR)$(RUNNER)"
	# The plugin runner's path, NUL-padded to the section's size, written over the section's bytes
	# (only those: nothing else in the file moves), after patchelf, which may move sections.
	@for file in "$(DESTDIR)$(LIBDIR)/$(REALNAME)" "$(DESTDIR)$(BINDIR)/lifecycle-host"; do \
	    set -- $$($(READELF) -SW "$$file" | sed -n 's/.*\] \.lifecycle_runner  *PROGBITS  *[0-9a-f]*  *\([0-9a-f]*\)  *\([0-9a-f]*\) .*/\1 \2/p'); \
	    test $$# -eq 2 && test $$((0x$$2)) -eq $(RUNNER_SLOT_SIZE) || { echo "make install: $$file has no $(RUNNER_SLOT_SIZE)-byte .lifecycle_runner section" >&2; exit 1; }; \
	    echo "record the plugin runner $(RUNNER) in $$file"; \
	    { printf '%s' "$(RUNNER)"; head -c $(RUNNER_SLOT_SIZE) /dev/zero; } | head -c $(RUNNER_SLOT_SIZE) | \
	        dd of="$$file" bs=$(RUNNER_SLOT_SIZE) seek=$$((0x$$1)) oflag=seek_bytes iflag=fullblock conv=notrunc status=none || exit 1; \
	done
	ln -sfn "$(REALNAME)" "$(DESTDIR)$(LIBDIR)/$(SONAME)"
	ln -sfn "$(SONAME)" "$(DESTDIR)$(LIBDIR)/liblifecycle.so"
	install -m 644 include/lifecycle.h "$(DESTDIR)$(INCLUDEDIR)/lifecycle.h"
	# The test kit: it calls liblifecycle, which it names (DT_NEEDED) and finds beside itself ($$ORIGIN);
	# SwiftPM linked it with the Swift runtime too (libswiftCore.so), found as liblifecycle finds it.
	install -m 755 "$(BUILD_DIR)/liblifecycle-testkit.so" "$(DESTDIR)$(LIBDIR)/$(TESTKIT_REALNAME)"
	$(PATCHELF) --set-soname "$(TESTKIT_SONAME)" "$(DESTDIR)$(LIBDIR)/$(TESTKIT_REALNAME)"
	$(PATCHELF) --add-needed "$(SONAME)" "$(DESTDIR)$(LIBDIR)/$(TESTKIT_REALNAME)"
	$(PATCHELF) --set-rpath '$$ORIGIN:$(SWIFT_RUNTIME_DIR)' "$(DESTDIR)$(LIBDIR)/$(TESTKIT_REALNAME)"
	ln -sfn "$(TESTKIT_REALNAME)" "$(DESTDIR)$(LIBDIR)/$(TESTKIT_SONAME)"
	ln -sfn "$(TESTKIT_SONAME)" "$(DESTDIR)$(LIBDIR)/liblifecycle-testkit.so"
	install -m 644 include/lifecycle_testkit.h "$(DESTDIR)$(INCLUDEDIR)/lifecycle_testkit.h"
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	    -e 's|@VERSION@|$(VERSION)|g' -e 's|@RPATH@|$(if $(filter 1,$(PC_RPATH)),-Wl$(,)-rpath$(,)$${libdir} ,)|g' \
	    pkgconfig/lifecycle.pc.in > "$(DESTDIR)$(PKGCONFIGDIR)/lifecycle.pc"
	chmod 644 "$(DESTDIR)$(PKGCONFIGDIR)/lifecycle.pc"
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	    -e 's|@VERSION@|$(VERSION)|g' -e 's|@RPATH@|$(if $(filter 1,$(PC_RPATH)),-Wl$(,)-rpath$(,)$${libdir} ,)|g' \
	    pkgconfig/lifecycle-testkit.pc.in > "$(DESTDIR)$(PKGCONFIGDIR)/lifecycle-testkit.pc"
	chmod 644 "$(DESTDIR)$(PKGCONFIGDIR)/lifecycle-testkit.pc"
	for example in $(EXAMPLES); do \
	    install -m 755 "$(BUILD_DIR)/lib$$example.so" "$(DESTDIR)$(EXAMPLESDIR)/lib$$example.so" || exit 1; done
	install -m 644 docs/man/lifecycle-host.1 "$(DESTDIR)$(MANDIR)/man1/lifecycle-host.1"
	"$(BUILD_DIR)/lifecycle-host" --generate-completion-script bash > "$(DESTDIR)$(BASHCOMPLETIONDIR)/lifecycle-host"
	"$(BUILD_DIR)/lifecycle-host" --generate-completion-script zsh > "$(DESTDIR)$(ZSHCOMPLETIONDIR)/_lifecycle-host"
	"$(BUILD_DIR)/lifecycle-host" --generate-completion-script fish > "$(DESTDIR)$(FISHCOMPLETIONDIR)/lifecycle-host.fish"
	install -d "$(DESTDIR)$(DOCDIR)/scenarios"
	install -m 644 $(DOCS) "$(DESTDIR)$(DOCDIR)/"
	install -m 644 $(SCENARIOS) "$(DESTDIR)$(DOCDIR)/scenarios/"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/lifecycle-host" "$(DESTDIR)$(RUNNER)" \
	    "$(DESTDIR)$(LIBDIR)/$(REALNAME)" "$(DESTDIR)$(LIBDIR)/$(SONAME)" "$(DESTDIR)$(LIBDIR)/liblifecycle.so" \
	    "$(DESTDIR)$(INCLUDEDIR)/lifecycle.h" "$(DESTDIR)$(PKGCONFIGDIR)/lifecycle.pc" \
	    "$(DESTDIR)$(LIBDIR)/$(TESTKIT_REALNAME)" "$(DESTDIR)$(LIBDIR)/$(TESTKIT_SONAME)" "$(DESTDIR)$(LIBDIR)/liblifecycle-testkit.so" \
	    "$(DESTDIR)$(INCLUDEDIR)/lifecycle_testkit.h" "$(DESTDIR)$(PKGCONFIGDIR)/lifecycle-testkit.pc" \
	    "$(DESTDIR)$(MANDIR)/man1/lifecycle-host.1" "$(DESTDIR)$(BASHCOMPLETIONDIR)/lifecycle-host" \
	    "$(DESTDIR)$(ZSHCOMPLETIONDIR)/_lifecycle-host" "$(DESTDIR)$(FISHCOMPLETIONDIR)/lifecycle-host.fish" \
	    $(EXAMPLES:%="$(DESTDIR)$(EXAMPLESDIR)/lib%.so") \
	    $(DOCS:docs/%="$(DESTDIR)$(DOCDIR)/%") $(SCENARIOS:docs/%="$(DESTDIR)$(DOCDIR)/%")
	# The project's own folders only, and only when empty.
	rmdir "$(DESTDIR)$(EXAMPLESDIR)" "$(DESTDIR)$(LIBDIR)/lifecycle" "$(DESTDIR)$(DOCDIR)/scenarios" "$(DESTDIR)$(DOCDIR)" 2>/dev/null || true

man:
	$(SWIFT) build -c $(CONFIG) --product lifecycle-host
	$(SWIFT) build -c $(CONFIG) --product lifecycle-manual
	"$(BUILD_DIR)/lifecycle-host" --experimental-dump-help | "$(BUILD_DIR)/lifecycle-manual" --version $(VERSION) > docs/man/lifecycle-host.1.new
	mv docs/man/lifecycle-host.1.new docs/man/lifecycle-host.1

# A comma inside $(if …).
, := ,
