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
PKGS     := gsl jansson libmicrohttpd libcurl sqlite3
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
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN:= $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
TEST_SUPPORT_SRC := $(sort $(wildcard tests/support/*.c))
TEST_SUPPORT_OBJ := $(TEST_SUPPORT_SRC:%.c=$(BUILD)/%.o)
TEST_SUPPORT := $(BUILD)/tests/libsupport.a
LIBPFLEX := $(BUILD)/libpflex.a
PFLEX    := $(BUILD)/pflex
FAKE_NVML:= $(BUILD)/fake-nvml/libnvidia-ml.so.1
NVML_RO  := $(BUILD)/nvml-readonly/libnvml_readonly.so

.PHONY: all deps check test test-plain test-san demo bench fuzz clean install uninstall calibrate models-table \
        nvml-readonly
all: $(PFLEX)

# make install [PREFIX=/usr/local] [DESTDIR=staging]: the binary, the
# library and its headers, the docs.  Nothing is built here that `make`
# did not build (run `make` first, as yourself, then install as root).
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  := $(DESTDIR)$(PREFIX)/bin
LIBDIR  := $(DESTDIR)$(PREFIX)/lib
INCDIR  := $(DESTDIR)$(PREFIX)/include/pflex
DOCDIR  := $(DESTDIR)$(PREFIX)/share/doc/pflex
install: $(PFLEX) $(LIBPFLEX)
	install -d $(BINDIR) $(LIBDIR) $(INCDIR) $(DOCDIR)
	install -m 755 $(PFLEX) $(BINDIR)/pflex
	install -m 644 $(LIBPFLEX) $(LIBDIR)/libpflex.a
	install -m 644 include/pflex/*.h $(INCDIR)/
	for d in include/pflex/*/; do l=$$(basename $$d); \
	    install -d $(INCDIR)/$$l && install -m 644 $$d*.h $(INCDIR)/$$l/ || exit 1; done
	install -m 644 README.md docs/*.md $(DOCDIR)/

uninstall:
	rm -f $(BINDIR)/pflex $(LIBDIR)/libpflex.a
	rm -rf $(INCDIR) $(DOCDIR)

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
	$(Q)$(CC) $(SAN) $(CLI_OBJ) $(CTL_OBJ) $(LIBPFLEX) $(LDLIBS) -o $@

# The same program linked with GSL's reference CBLAS in place of OpenBLAS:
# make bench times the extended study through both (bench/blas_study.sh).
$(BUILD)/pflex-refblas: $(CLI_OBJ) $(CTL_OBJ) $(LIBPFLEX)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(SAN) $(CLI_OBJ) $(CTL_OBJ) $(LIBPFLEX) $(filter-out $(BLAS_LIBS),$(LDLIBS)) -lgslcblas -o $@

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
$(BUILD)/tests/test_controller_%: tests/test_controller_%.c $(CTL_OBJ) $(TEST_SUPPORT) $(LIBPFLEX)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $< $(CTL_OBJ) $(TEST_SUPPORT) $(LIBPFLEX) $(LDLIBS) -lcmocka -o $@

# The simulator's test runs the controller's period as its online policies.
$(BUILD)/tests/test_simulate: tests/test_simulate.c $(CTL_OBJ) $(TEST_SUPPORT) $(LIBPFLEX)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $< $(CTL_OBJ) $(TEST_SUPPORT) $(LIBPFLEX) $(LDLIBS) -lcmocka -o $@

# The controller's benchmark links the daemon's objects, as its tests do.
$(BUILD)/bench/controller_bench: bench/controller_bench.c $(CTL_OBJ) $(LIBPFLEX)
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

test-bins: $(PFLEX) $(TEST_BIN) $(TEST_HELPERS) $(EXAMPLE_BIN) $(if $(wildcard tests/fake_nvml/fake_nvml.c),$(FAKE_NVML)) \
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
