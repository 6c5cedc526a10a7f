# coffer build. `make` builds, `make run` starts cofferd on ./data, `make test` runs
# every test, `make asan` runs them again under AddressSanitizer + UBSan (the
# embedded pass only, for time: COFFER_TEST_ENGINES=embedded,pg make asan runs both).
# Sources are found by directory, so adding a file needs no edit here.

BUILD   ?= build
CC      ?= cc
PKGS    := sqlite3 libmicrohttpd jansson libcrypto libarchive libcurl libpcre2-8 vips libxml-2.0 \
           poppler-glib libseccomp libhs icu-uc zlib libpq fuse3 sndfile pocketsphinx libgit2
OPT     ?= -O2 -g
CFLAGS  += $(OPT) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
           -Wshadow -Wformat=2 -pthread -Iinclude -Isrc -I$(BUILD)/gen \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lmagic -lwslay -lpthread -lm

LIB_SRC  := $(wildcard src/util/*.c src/store/*.c src/volume/*.c src/policy/*.c \
            src/agent/*.c src/turn/*.c src/relay/*.c src/relay/client/*.c \
            src/view/*.c src/hooks/*.c)
HTTP_SRC := $(wildcard src/http/*.c)
CLI_SRC  := $(wildcard src/cli/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
HTTP_OBJ := $(HTTP_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
UNITS    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# the power-cut library the crash tests preload into cofferd (never sanitized:
# it must not depend on a sanitizer runtime)
POWERCUT := $(BUILD)/lib/libpowercut.so

DATA ?= ./data
LISTEN ?= 127.0.0.1:7700

.PHONY: all deps run test unit blackbox asan fuzz bench sniff-cost big-change clean pkgs
.PHONY: install
all: deps $(BUILD)/cofferd $(BUILD)/coffer $(BUILD)/coffer-exec $(BUILD)/libcoffer.a

# Every step that runs a tool waits for deps (an order-only prerequisite: deps runs
# first, even under -j, and never makes anything out of date).
deps:
	@scripts/deps

$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# The guard's rules are built into the library: guard.rules as a C array.
$(BUILD)/gen/guard_rules.inc: src/policy/guard.rules | deps
	@mkdir -p $(dir $@)
	xxd -i < $< > $@
$(BUILD)/obj/src/policy/guard.o: $(BUILD)/gen/guard_rules.inc

# The API's OpenAPI document, served at /v1/openapi.json: docs/openapi.json as a C array.
$(BUILD)/gen/openapi_json.inc: docs/openapi.json | deps
	@mkdir -p $(dir $@)
	xxd -i < $< > $@
$(BUILD)/obj/src/http/openapi.o: $(BUILD)/gen/openapi_json.inc

# The web console, served at /console: the files of console/ as C arrays (the
# folder itself is a prerequisite so that adding or removing a file rebuilds).
$(BUILD)/gen/console_assets.inc: console $(wildcard console/*) scripts/embed-console | deps
	@mkdir -p $(dir $@)
	scripts/embed-console console $@
$(BUILD)/obj/src/http/console.o: $(BUILD)/gen/console_assets.inc

$(BUILD)/libcoffer.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/cofferd: $(BUILD)/obj/src/cofferd.o $(HTTP_OBJ) $(BUILD)/libcoffer.a
	$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# run inside a call's sandbox without root (src/coffer-exec.c): libc only, and
# never with sanitizers (their shadow memory cannot be had under RLIMIT_AS)
$(BUILD)/coffer-exec: src/coffer-exec.c | deps
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra $< -o $@

# the CLI alone links libjq (--jq; Debian 12's libjq-dev has no pkg-config file)
$(BUILD)/coffer: $(CLI_OBJ) $(HTTP_OBJ) $(BUILD)/libcoffer.a
	$(CC) $(CFLAGS) $^ $(LDLIBS) -ljq -o $@

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libcoffer.a | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libcoffer.a $(LDLIBS) -lcmocka -o $@

# make install PREFIX=/usr/local DESTDIR=...: the binaries (coffer-exec beside
# cofferd, where it looks for it), the man pages, the hardened systemd unit, its
# sysusers.d user, and the example config (as SYSCONFDIR/coffer/cofferd.conf
# unless one is there; always under share/doc). docs/api.md, "Installing".
# It copies a tree `make` built and never builds or runs scripts/deps itself:
# `sudo make install` would otherwise compile as root (root-owned objects in
# build/) and run apt-get. A missing binary, or one make would rebuild, stops it.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/coffer
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
INSTALL_BIN := $(BUILD)/cofferd $(BUILD)/coffer $(BUILD)/coffer-exec
INSTALL_WHY := run \`make\` first, as yourself (not root): install only copies what make built

install:
	@for f in $(INSTALL_BIN); do test -f "$$f" && test -x "$$f" || { \
		echo "make install: $$f is not built: $(INSTALL_WHY)" >&2; exit 1; }; done
	@# make -n runs nothing: what it would run (deps aside) says the tree is stale
	@stale=$$($(MAKE) -s -n --no-print-directory $(INSTALL_BIN) 2>&1 | grep -v -x 'scripts/deps'); \
	if [ -n "$$stale" ]; then \
		echo "make install: $(BUILD) is older than its sources: $(INSTALL_WHY)" >&2; \
		exit 1; fi
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)/coffer $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(SYSUSERSDIR)
	install -m 0755 $(BUILD)/cofferd $(BUILD)/coffer $(BUILD)/coffer-exec $(DESTDIR)$(BINDIR)/
	install -m 0644 docs/coffer.1 $(DESTDIR)$(MANDIR)/man1/coffer.1
	install -m 0644 docs/cofferd.8 $(DESTDIR)$(MANDIR)/man8/cofferd.8
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		contrib/cofferd.service.in > $(DESTDIR)$(UNITDIR)/cofferd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/cofferd.service
	install -m 0644 contrib/coffer.sysusers $(DESTDIR)$(SYSUSERSDIR)/coffer.conf
	install -m 0644 contrib/cofferd.conf $(DESTDIR)$(DOCDIR)/cofferd.conf.example
	test -e $(DESTDIR)$(SYSCONFDIR)/coffer/cofferd.conf || \
		install -m 0644 contrib/cofferd.conf $(DESTDIR)$(SYSCONFDIR)/coffer/cofferd.conf

run: all
	$(BUILD)/cofferd --data $(DATA) --listen $(LISTEN)

$(POWERCUT): tests/powerloss/powercut.c | deps
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=c11 -Wall -Wextra -fPIC -shared $< -o $@ -ldl -pthread

unit: all $(UNITS)
blackbox: all $(POWERCUT)

test: all $(UNITS) $(POWERCUT)
	@scripts/deps --test
	python3 tests/run.py --build $(BUILD)

asan:
	@scripts/deps --asan
	COFFER_TEST_ENGINES=$${COFFER_TEST_ENGINES:-embedded} \
	$(MAKE) BUILD=build-asan CC=clang OPT="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" test

fuzz:
	@scripts/deps --asan
	@scripts/fuzz

bench: all
	@scripts/deps --bench
	bench/run
	bench/agents.py
	bench/turns.py
	bench/mcp/run.sh
	bench/relay.py
	bench/s3.py
	$(CC) $(CFLAGS) bench/guard_bench.c $(BUILD)/libcoffer.a $(LDLIBS) -o $(BUILD)/guard_bench && $(BUILD)/guard_bench
	$(MAKE) sniff-cost
	bench/turns_overhead.py
	bench/fork.py
	bench/merge.py
	bench/views.py
	$(MAKE) big-change

# One change of many writes, then of as many removes, on the metadata store
# (bench/big_change.c); BIG_LIB=OTHER/libcoffer.a measures another build.
BIG_LIB ?= $(BUILD)/libcoffer.a
big-change: all
	$(CC) $(CFLAGS) -Itests/unit bench/big_change.c $(BIG_LIB) $(LDLIBS) -o $(BUILD)/big_change
	$(BUILD)/big_change 2000 8000 16000

# CPU a new untyped file's type costs (bench/sniff_cost.c); SNIFF_LIB=OTHER/libcoffer.a
# measures another build (e.g. main's) with the same rows.
SNIFF_LIB ?= $(BUILD)/libcoffer.a
sniff-cost: all
	$(CC) $(CFLAGS) bench/sniff_cost.c $(SNIFF_LIB) $(LDLIBS) -o $(BUILD)/sniff_cost && $(BUILD)/sniff_cost

# The pkg-config names the library links with, for scripts/fuzz and bench/ (one list).
pkgs:
	@echo $(PKGS)

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
