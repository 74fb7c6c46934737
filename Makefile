# pflex — build, test, demo.  `make check` and `make demo` install missing
# Debian build dependencies first (scripts/deps.sh).
#
# Sources are found by wildcard: a new file under src/lib/<layer>/ joins libpflex,
# a new src/cli/<command>.c joins the pflex binary, a new tests/test_<topic>.c
# becomes a test binary (linking what tests/support/ holds for several
# tests).  BUILD selects the output folder so that several builds (plain,
# sanitized) live side by side.

BUILD    ?= build
CC       ?= cc
SAN      ?=
OPT      ?= -O2
PKGS     := gsl jansson libmicrohttpd libcurl sqlite3 inih
CFLAGS   ?= $(OPT) -g
WARN     := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Werror \
            -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# Fitting goes through GSL's CBLAS interface: OpenBLAS where pkg-config finds
# it (libopenblas-dev), else GSL's reference CBLAS (-lgslcblas).  HAVE_INLINE
# makes GSL's accessors (gsl_matrix_get, ...) inline functions instead of
# calls into the shared library, which the fitting's inner loops are made of.
BLAS_LIBS  := $(shell pkg-config --libs openblas 2>/dev/null || echo -lgslcblas)
PKG_LIBS   := $(filter-out -lgslcblas,$(shell pkg-config --libs $(PKGS) 2>/dev/null)) $(BLAS_LIBS)
# The dependency files name each object both as this make named it and
# relative to the tree: an object built with BUILD given as an absolute
# path (tests/e2e/install.sh does) still follows its headers in a later
# plain make, where it was rebuilt only when its .c changed.
ALL_CFLAGS  = $(WARN) -DHAVE_INLINE $(CFLAGS) $(SAN) -Iinclude -Isrc $(PKG_CFLAGS) -MMD -MP \
              -MT $@ $(if $(filter $(CURDIR)/%,$@),-MT $(patsubst $(CURDIR)/%,%,$@))
# GLPK ships no pkg-config file: the levers' planner links it by name.
LDLIBS      = $(PKG_LIBS) -lglpk -ldl -lm -lpthread

LIB_SRC  := $(sort $(wildcard src/lib/*/*.c))
CLI_SRC  := $(sort $(wildcard src/cli/*.c src/agent/*.c))
CTL_SRC  := $(sort $(wildcard src/controller/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
BENCH_SRC:= $(sort $(wildcard bench/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
CTL_OBJ  := $(CTL_SRC:%.c=$(BUILD)/%.o)
# What a program linking the controller's objects without the CLI needs
# too: the configuration file's reader that `controller run` calls.
CTL_LINK := $(CTL_OBJ) $(BUILD)/src/cli/config.o
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN:= $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
TEST_SUPPORT_SRC := $(sort $(wildcard tests/support/*.c))
TEST_SUPPORT_OBJ := $(TEST_SUPPORT_SRC:%.c=$(BUILD)/%.o)
TEST_SUPPORT := $(BUILD)/tests/libsupport.a
LIBPFLEX := $(BUILD)/libpflex.a
PFLEX    := $(BUILD)/pflex
FAKE_NVML:= $(BUILD)/fake-nvml/libnvidia-ml.so.1
NVML_RO  := $(BUILD)/nvml-readonly/libnvml_readonly.so

.PHONY: kit all deps check test test-plain test-san demo bench fuzz clean install uninstall calibrate models-table \
        nvml-readonly
all: $(PFLEX)

# The shared library: the library's sources again, position-independent,
# linked with a version script (tools/gen_exports.sh) that exports the
# functions and data the public headers declare and hides the rest.
VERSION   := $(shell sed -n 's/^\#define PFLEX_VERSION "\(.*\)"/\1/p' src/cli/main.c)
SOVERSION := $(firstword $(subst ., ,$(VERSION)))
LIB_PIC_OBJ := $(LIB_SRC:%.c=$(BUILD)/pic/%.o)
SHLIB    := $(BUILD)/libpflex.so.$(VERSION)
$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@

$(BUILD)/libpflex.map: $(LIB_PIC_OBJ) tools/gen_exports.sh $(wildcard include/pflex/*.h include/pflex/*/*.h)
	$(Q)sh tools/gen_exports.sh include/pflex $(LIB_PIC_OBJ) > $@.tmp && mv $@.tmp $@

$(SHLIB): $(LIB_PIC_OBJ) $(BUILD)/libpflex.map
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(SAN) -shared -Wl,-soname,libpflex.so.$(SOVERSION) -Wl,--version-script,$(BUILD)/libpflex.map \
	    -Wl,--no-undefined -Wl,--as-needed $(LIB_PIC_OBJ) $(LDLIBS) -o $@

# A man page per command, from its --help (Debian's help2man), and the
# bash completion, from the commands' option tables (src/cli/optdump.c).
MAN_CMDS := $(shell sed -n 's/^    {"\([a-z]*\)", cmd_.*/\1/p' src/cli/main.c)
MANPAGES := $(BUILD)/man/pflex.1 $(MAN_CMDS:%=$(BUILD)/man/pflex-%.1)
COMPLETION := $(BUILD)/completion/pflex
$(BUILD)/man/%.1: $(PFLEX) tools/gen_man.sh
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  MAN     $@")
	$(Q)sh tools/gen_man.sh $(PFLEX) $* $(VERSION) > $@.tmp && mv $@.tmp $@

$(COMPLETION): $(PFLEX) tools/gen_completion.sh
	@mkdir -p $(dir $@)
	$(Q)sh tools/gen_completion.sh $(PFLEX) > $@.tmp && mv $@.tmp $@

kit: $(SHLIB) $(MANPAGES) $(COMPLETION)

# make install [PREFIX=/usr/local] [DESTDIR=staging] (docs/install.md): the
# binary, the static and the shared library (with its soname and only the
# public API exported), the headers, pflex.pc, a man page per command, bash
# completion, the systemd units with their paths filled in, the docs, the
# example configuration and the field demonstration's days (share/pflex/
# field-demo: pflex simulate --day finds them there, beside bin/pflex).
# Run `make` first, as yourself, then install.
PREFIX     ?= /usr/local
DESTDIR    ?=
LIBDIR_P   ?= $(PREFIX)/lib
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR_P  ?= $(PREFIX)/lib/systemd/system
BINDIR  := $(DESTDIR)$(PREFIX)/bin
LIBDIR  := $(DESTDIR)$(LIBDIR_P)
INCDIR  := $(DESTDIR)$(PREFIX)/include/pflex
DOCDIR  := $(DESTDIR)$(PREFIX)/share/doc/pflex
MANDIR  := $(DESTDIR)$(PREFIX)/share/man/man1
COMPDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
UNITDIR := $(DESTDIR)$(UNITDIR_P)
PCDIR   := $(LIBDIR)/pkgconfig
DATADIR := $(DESTDIR)$(PREFIX)/share/pflex
UNITS   := $(notdir $(wildcard deploy/systemd/*.service))
install: $(PFLEX) $(LIBPFLEX) $(SHLIB) $(MANPAGES) $(COMPLETION)
	install -d $(BINDIR) $(LIBDIR) $(INCDIR) $(DOCDIR)/examples $(MANDIR) $(COMPDIR) $(UNITDIR) $(PCDIR)
	install -m 755 $(PFLEX) $(BINDIR)/pflex
	install -m 644 $(LIBPFLEX) $(LIBDIR)/libpflex.a
	install -m 644 $(SHLIB) $(LIBDIR)/libpflex.so.$(VERSION)
	ln -sf libpflex.so.$(VERSION) $(LIBDIR)/libpflex.so.$(SOVERSION)
	ln -sf libpflex.so.$(SOVERSION) $(LIBDIR)/libpflex.so
	install -m 644 include/pflex/*.h $(INCDIR)/
	for d in include/pflex/*/; do l=$$(basename $$d); \
	    install -d $(INCDIR)/$$l && install -m 644 $$d*.h $(INCDIR)/$$l/ || exit 1; done
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR_P)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@PRIVATE_LIBS@|$(BLAS_LIBS) -lglpk -ldl -lm -lpthread|g' tools/pflex.pc.in > $(PCDIR)/pflex.pc
	install -m 644 $(MANPAGES) $(MANDIR)/
	install -m 644 $(COMPLETION) $(COMPDIR)/pflex
	for u in $(UNITS); do sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	    -e 's|@DOCDIR@|$(PREFIX)/share/doc/pflex|g' deploy/systemd/$$u > $(UNITDIR)/$$u || exit 1; done
	install -m 644 README.md docs/*.md $(DOCDIR)/
	install -m 644 deploy/*.conf deploy/prometheus.yml deploy/jobs.json deploy/grafana/pflex.json \
	    $(DOCDIR)/examples/
	install -d $(DATADIR)/field-demo
	install -m 644 data/field-demo/*.csv $(DATADIR)/field-demo/

uninstall:
	rm -f $(BINDIR)/pflex $(LIBDIR)/libpflex.a $(LIBDIR)/libpflex.so $(LIBDIR)/libpflex.so.$(SOVERSION) \
	    $(LIBDIR)/libpflex.so.$(VERSION) $(PCDIR)/pflex.pc $(COMPDIR)/pflex \
	    $(addprefix $(MANDIR)/,$(notdir $(MANPAGES))) $(addprefix $(UNITDIR)/,$(UNITS))
	rm -rf $(INCDIR) $(DOCDIR) $(DATADIR)

deps:
	@sh scripts/deps.sh

# V=1 shows whole command lines.
Q := $(if $(V),,@)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIBPFLEX): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(PFLEX): $(CLI_OBJ) $(CTL_OBJ) $(LIBPFLEX)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(SAN) -Wl,--wrap=getopt_long $(CLI_OBJ) $(CTL_OBJ) $(LIBPFLEX) $(LDLIBS) -o $@

# The same program linked with GSL's reference CBLAS in place of OpenBLAS:
# make bench times the extended study through both (bench/blas_study.sh).
$(BUILD)/pflex-refblas: $(CLI_OBJ) $(CTL_OBJ) $(LIBPFLEX)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(SAN) -Wl,--wrap=getopt_long $(CLI_OBJ) $(CTL_OBJ) $(LIBPFLEX) $(filter-out $(BLAS_LIBS),$(LDLIBS)) -lgslcblas -o $@

# What several tests share (tests/support/: seeded random numbers, reference
# pieces, the fake NVML's fixture), one archive that every test links: each
# takes only what it calls.
$(TEST_SUPPORT_OBJ): $(BUILD)/tests/support/%.o: tests/support/%.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Itests -c $< -o $@

$(TEST_SUPPORT): $(TEST_SUPPORT_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/%: tests/%.c $(TEST_SUPPORT) $(LIBPFLEX)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $< $(TEST_SUPPORT) $(LIBPFLEX) $(LDLIBS) -lcmocka -o $@

# Tests of the controller daemon link its objects too.
$(BUILD)/tests/test_controller_%: tests/test_controller_%.c $(CTL_LINK) $(TEST_SUPPORT) $(LIBPFLEX)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $< $(CTL_LINK) $(TEST_SUPPORT) $(LIBPFLEX) $(LDLIBS) -lcmocka -o $@

# The configuration file's reader is the CLI's (src/cli/config.c).
$(BUILD)/tests/test_cli_config: tests/test_cli_config.c $(BUILD)/src/cli/config.o $(TEST_SUPPORT) $(LIBPFLEX)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $< $(BUILD)/src/cli/config.o $(TEST_SUPPORT) $(LIBPFLEX) $(LDLIBS) -lcmocka -o $@

# The simulator's test runs the controller's period as its online policies.
$(BUILD)/tests/test_simulate: tests/test_simulate.c $(CTL_LINK) $(TEST_SUPPORT) $(LIBPFLEX)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $< $(CTL_LINK) $(TEST_SUPPORT) $(LIBPFLEX) $(LDLIBS) -lcmocka -o $@

# The controller's benchmark links the daemon's objects, as its tests do.
$(BUILD)/bench/controller_bench: bench/controller_bench.c $(CTL_LINK) $(LIBPFLEX)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  BENCH   $@")
	$(Q)$(CC) $(ALL_CFLAGS) $< $(CTL_LINK) $(LIBPFLEX) $(LDLIBS) -o $@

# The Prometheus read benchmark too (prom_source.c is the controller's).
$(BUILD)/bench/prom_read_bench: bench/prom_read_bench.c tests/prom_jansson_oracle.h $(CTL_OBJ) $(LIBPFLEX)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  BENCH   $@")
	$(Q)$(CC) $(ALL_CFLAGS) $< $(CTL_OBJ) $(LIBPFLEX) $(LDLIBS) -o $@

$(BUILD)/bench/%: bench/%.c $(LIBPFLEX)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  BENCH   $@")
	$(Q)$(CC) $(ALL_CFLAGS) $< $(LIBPFLEX) $(LDLIBS) -o $@

# The example programs: built on libpflex and its public headers alone (the
# proof that the library stands by itself); tests/e2e/example.sh runs them.
EXAMPLE_SRC := $(sort $(wildcard examples/*.c))
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)
$(BUILD)/examples/%: examples/%.c $(LIBPFLEX)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  EXAMPLE $@")
	$(Q)$(CC) $(ALL_CFLAGS:-Isrc=) $< $(LIBPFLEX) $(LDLIBS) -o $@

# The sim model's calibration (docs/sim-model.md section 4): fits the free
# constants to the shared measurements and prints them with their errors.
$(BUILD)/tools/%: tools/%.c $(LIBPFLEX)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(LIBPFLEX) $(LDLIBS) -o $@

calibrate: $(BUILD)/tools/calibrate
	$(BUILD)/tools/calibrate $(if $(PFLEX_SHARED_DATA),$(PFLEX_SHARED_DATA),../shared/data)

# The study's model shapes as a C table (the CSV is not needed to build).
MODELS_CSV ?= ../shared/data/models/models.csv
models-table:
	python3 tools/gen_models.py $(MODELS_CSV) > src/lib/sim/models_table.c

# The fake NVML library the test suite loads in place of the real driver.
$(FAKE_NVML): tests/fake_nvml/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(SAN) -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 $< -o $@ -lm

# The read-only NVML for measuring on GPUs pflex must not change
# (tools/device/, docs/nvml.md): reads forwarded, setters refused.
# tests/e2e/nvml_readonly.sh runs it in front of the fake NVML.
nvml-readonly: $(NVML_RO)
$(NVML_RO): tools/device/nvml_readonly.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(SAN) -fPIC -shared $< -o $@ -ldl

# Helpers the end-to-end scripts run (built by the tests/% rule, never run
# as tests themselves: only tests/test_*.c are).
TEST_HELPERS := $(if $(wildcard tests/metrics_server.c),$(BUILD)/tests/metrics_server) \
                $(if $(wildcard tests/slow_proxy.c),$(BUILD)/tests/slow_proxy)

test-bins: $(PFLEX) $(SHLIB) $(MANPAGES) $(COMPLETION) $(TEST_BIN) $(TEST_HELPERS) $(EXAMPLE_BIN) $(if $(wildcard tests/fake_nvml/fake_nvml.c),$(FAKE_NVML)) \
           $(if $(wildcard tools/device/nvml_readonly.c),$(NVML_RO))

# One build, its tests run.
test: test-bins
	@BUILD=$(BUILD) SUMMARY=$(SUMMARY) sh tests/run.sh

# Everything: deps, plain build + tests, the same suite under ASan+UBSan,
# a short fuzzing run of every parser, then one closing line for all.  The
# sanitized build targets this machine's CPU (-march=native), so that the
# paths taken only with wider instructions (FMA in the sweep reader's
# decimals) are tested too; the plain build tests the portable ones.
FUZZ_SECONDS ?= 20
check: deps
	@mkdir -p build && rm -f build/check-summary
	@$(MAKE) --no-print-directory test BUILD=build SUMMARY=$(CURDIR)/build/check-summary
	@$(MAKE) --no-print-directory test BUILD=build-san OPT="-O1 -march=native" SUMMARY=$(CURDIR)/build/check-summary \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
	@FUZZ_SECONDS=$(FUZZ_SECONDS) SUMMARY=$(CURDIR)/build/check-summary sh fuzz/run.sh
	@awk '{p+=$$1; f+=$$2; s+=$$3} END {printf "check: %d passed, %d failed, %d skipped\n", p, f, s; exit f > 0}' build/check-summary

demo: deps
	@$(MAKE) --no-print-directory all
	./$(PFLEX) study --out study-out

# Benchmarks build in their own folder with their own flags, so that the
# library they link is built the same way.
bench:
	@sh scripts/deps.sh bench
	@$(MAKE) --no-print-directory BUILD=build-bench OPT="-O3 -march=native" \
	    build-bench/pflex build-bench/pflex-refblas $(BENCH_SRC:bench/%.c=build-bench/bench/%)
	@BUILD=build-bench sh bench/run.sh

fuzz:
	@sh fuzz/run.sh

clean:
	rm -rf build build-san build-fuzz study-out

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
