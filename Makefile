# eintune - plain GNU make. `make`, `make test`, `make deps`, `make asan`,
# `make fuzz`, `make valgrind`, `make bench`, `make install`,
# `make uninstall`. Dependencies come from pkg-config.

CC      ?= cc
BUILD   ?= build
PKGS    := yaml-0.1 gsl OpenCL sqlite3 libcjson cairo
CUDA    ?= /usr/local/cuda

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wno-unused-parameter
CFLAGS  ?= -O2 -g
# Flags every build needs, kept apart from CFLAGS so that a CFLAGS given on
# the command line (as `make asan` does) cannot drop them. -fPIC: the same
# objects make the static and the shared library.
ET_CFLAGS := -std=c11 -D_GNU_SOURCE -fPIC $(WARN)
override CFLAGS += $(ET_CFLAGS) $(EXTRA_CFLAGS)
CPPFLAGS += -Iinclude -I. -DCL_TARGET_OPENCL_VERSION=120 \
            $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
ifneq ($(wildcard $(CUDA)/include/cuda.h),)
CPPFLAGS += -DET_HAVE_CUDA_H -I$(CUDA)/include
endif
# MPI is optional (scale-out: scale/, docs/scale-out.md): Open MPI through
# `pkg-config ompi-c`, else the flags of mpicc (Open MPI's --showme). `make
# ET_MPI=no` builds without it; the build says when scale-out is off.
ET_MPI ?= $(shell pkg-config --exists ompi-c 2>/dev/null && echo pkg-config \
            || (mpicc --showme:compile >/dev/null 2>&1 && echo mpicc) \
            || echo no)
ifeq ($(ET_MPI),pkg-config)
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c)
MPI_LIBS   := $(shell pkg-config --libs ompi-c)
else ifeq ($(ET_MPI),mpicc)
MPI_CFLAGS := $(shell mpicc --showme:compile)
MPI_LIBS   := $(shell mpicc --showme:link)
else
ifeq ($(filter clean deps,$(MAKECMDGOALS)),)
$(info eintune: MPI not found (pkg-config ompi-c, mpicc): scale-out is off)
endif
endif
ifneq ($(MPI_LIBS),)
$(BUILD)/scale/%.o: CPPFLAGS += -DET_HAVE_MPI $(MPI_CFLAGS)
endif
# eintune.pc's Libs.private: what linking the static library needs, the
# packages' --static libraries written out (with MPI's when built with
# it). Not Requires.private: pkg-config --cflags eintune would then give
# every package's include paths (cairo, glib, MPI), which include/eintune.h
# needs none of.
PC_LIBS_PRIVATE = $(shell pkg-config --static --libs $(PKGS) \
                    $(if $(filter pkg-config,$(ET_MPI)),ompi-c) \
                    2>/dev/null) $(if $(filter mpicc,$(ET_MPI)),$(MPI_LIBS))
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) $(MPI_LIBS) \
           -ldl -lm -lpthread

LAYERS  := base einsum transforms spaces measure measure/opencl measure/cuda \
           export db roofline model tune scale report api
LIB_SRC := $(foreach d,$(LAYERS),$(wildcard $(d)/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_SRC := $(wildcard cli/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
LIB     := $(BUILD)/libeintune.a
# The library's objects hide every symbol but the functions that
# include/eintune.h marks ET_API, so libeintune.so exports the public API
# and nothing else (tests/test_symbols.c). libeintune.a is made of the same
# objects: a hidden symbol still links statically, as the tests, the CLI
# and the worker need (they call internal functions).
LIB_VIS := -fvisibility=hidden
$(LIB_OBJ): override CFLAGS += $(LIB_VIS)
# The shared library: libeintune.so.MAJOR.MINOR.PATCH with soname
# libeintune.so.MAJOR, the version from include/eintune.h (ET_VERSION,
# ET_VERSION_MAJOR). The build tree gets the .so.MAJOR and .so links too.
ET_H    := include/eintune.h
VERSION := $(shell sed -n 's/^\#define ET_VERSION "\(.*\)"/\1/p' $(ET_H))
MAJOR   := $(shell sed -n \
             's/^\#define ET_VERSION_MAJOR \([0-9]*\).*/\1/p' $(ET_H))
MINOR   := $(word 2,$(subst ., ,$(VERSION)))
PATCH   := $(word 3,$(subst ., ,$(VERSION)))
SONAME  := libeintune.so.$(MAJOR)
SOLIB   := $(BUILD)/libeintune.so.$(MAJOR).$(MINOR).$(PATCH)
BIN     := $(BUILD)/eintune
# the device worker: a separate program the library starts with fork+exec
# before any driver call (see measure/remote.h)
WORKER_SRC := $(wildcard measure/worker/*.c)
WORKER  := $(if $(WORKER_SRC),$(BUILD)/eintune-worker)

TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_HELP := $(filter-out $(TEST_SRC),$(wildcard tests/*.c))
TEST_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)
# shared libraries the tests build (a fake libcuda, ...)
TEST_SO   := $(patsubst tests/so/%.c,$(BUILD)/tests/%.so,$(wildcard tests/so/*.c))

# Installation directories (`make install PREFIX=... DESTDIR=...`). The
# library finds the worker from its own location (measure/remote.h);
# LIBEXECDIR is compiled in for programs linked with the static library
# (measure/install_dir.c; `make install` compiles that file again with its
# own LIBEXECDIR into the libeintune.a it installs).
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
LIBDIR     ?= $(PREFIX)/lib
LIBEXECDIR ?= $(PREFIX)/libexec/eintune
MANDIR     ?= $(PREFIX)/share/man
PYTHONDIR  ?= $(PREFIX)/lib/python3/dist-packages
PY_SRC     := $(wildcard python/eintune/*.py)
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig

.PHONY: all test test-mpi deps asan asan-mpi fuzz valgrind valgrind-device valgrind-worker \
        valgrind-cli bench clean check-deps install uninstall
all: $(BIN) $(WORKER) $(SOLIB)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# An object compiled without LIB_VIS would go on exporting everything it
# defines: the objects depend on a stamp holding LIB_VIS, rewritten (and
# so newer than them) only when LIB_VIS changes, and a build tree made
# before it compiles them again once.
LIB_STAMP := $(BUILD)/lib-visibility
$(LIB_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(LIB_VIS)' | cmp -s - $@ 2>/dev/null || echo '$(LIB_VIS)' > $@
$(LIB_OBJ): $(LIB_STAMP)
FORCE:

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(SOLIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) $^ $(LDLIBS) \
	    -o $@
	ln -sf $(notdir $@) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $(BUILD)/libeintune.so

$(BUILD)/measure/install_dir.o: CPPFLAGS += -DET_LIBEXECDIR='"$(LIBEXECDIR)"'

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $(CLI_OBJ) $(LIB) $(LDLIBS) -o $@

$(BUILD)/eintune-worker: $(WORKER_SRC:%.c=$(BUILD)/%.o) $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/%.c $(TEST_HELP) $(wildcard tests/*.h) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes $< $(TEST_HELP) \
	    $(LIB) $(TEST_LIBS) $(LDLIBS) -o $@

$(BUILD)/tests/%.so: tests/so/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -shared -fPIC $< -o $@

# Runs every test program; tests/run.sh prints each summary and a total.
# (test_install installs into a temporary PREFIX with this Makefile.)
# DEVICE: the device the tests run on (`make test DEVICE=cuda:0`; default
# the first OpenCL device, PoCL's here), passed as ET_TEST_DEVICE
# (tests/suite_device.h); tests/run.sh stops at once when it is not there.
DEVICE ?=
# The Python package's tests (tests/python/run.sh, pytest) run last and
# count in the total; skipped with a message without python3, numpy and
# pytest.
test: deps $(BIN) $(WORKER) $(SOLIB) $(TEST_BIN) $(TEST_SO)
	@BUILD=$(BUILD) ET_TEST_DEVICE='$(DEVICE)' sh tests/run.sh $(TEST_BIN) \
	    tests/python/run.sh

# The MPI tests (tests/mpi/, mpirun on this machine's PoCL device: a few
# minutes), kept out of `make test`; .ci/run runs them after it.
MPI_TEST_BIN := $(patsubst tests/mpi/%.c,$(BUILD)/tests/mpi/%,\
                  $(wildcard tests/mpi/test_*.c))
test-mpi: $(BIN) $(WORKER) $(MPI_TEST_BIN)
ifeq ($(MPI_LIBS),)
	@echo "eintune: built without MPI: scale-out is off, nothing to test" >&2
	@exit 1
else
	@BUILD=$(BUILD) sh tests/run.sh $(MPI_TEST_BIN)
endif

# Installs what `make` built (nothing is rebuilt that is up to date):
# the CLI, the header, the shared library with its soname and .so links,
# the static library (with LIBEXECDIR compiled in, see above), eintune.pc
# (from eintune.pc.in), the worker in LIBEXECDIR and the man page. `make uninstall` removes exactly those.
INSTALLED := $(BINDIR)/eintune $(INCLUDEDIR)/eintune.h \
             $(LIBDIR)/libeintune.so.$(MAJOR).$(MINOR).$(PATCH) \
             $(LIBDIR)/$(SONAME) $(LIBDIR)/libeintune.so \
             $(LIBDIR)/libeintune.a $(PKGCONFIGDIR)/eintune.pc \
             $(LIBEXECDIR)/eintune-worker $(MANDIR)/man1/eintune.1 \
             $(addprefix $(PYTHONDIR)/eintune/,$(notdir $(PY_SRC)))
install: $(BIN) $(WORKER) $(LIB) $(SOLIB)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCLUDEDIR) \
	    $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	    $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/eintune
	install -m 644 include/eintune.h $(DESTDIR)$(INCLUDEDIR)/eintune.h
	install -m 755 $(SOLIB) $(DESTDIR)$(LIBDIR)/$(notdir $(SOLIB))
	ln -sf $(notdir $(SOLIB)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libeintune.so
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/libeintune.a
	tmp=$$(mktemp -d) && \
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LIB_VIS) \
	    -DET_LIBEXECDIR='"$(LIBEXECDIR)"' -c measure/install_dir.c \
	    -o $$tmp/install_dir.o && \
	ar rs $(DESTDIR)$(LIBDIR)/libeintune.a $$tmp/install_dir.o; \
	rc=$$?; rm -rf $$tmp; exit $$rc
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@LIBS_PRIVATE@|$(strip $(PC_LIBS_PRIVATE))|g' eintune.pc.in \
	    > $(DESTDIR)$(PKGCONFIGDIR)/eintune.pc
	install -m 755 $(WORKER) $(DESTDIR)$(LIBEXECDIR)/eintune-worker
	install -m 644 man/eintune.1 $(DESTDIR)$(MANDIR)/man1/eintune.1
	install -d $(DESTDIR)$(PYTHONDIR)/eintune
	install -m 644 $(PY_SRC) $(DESTDIR)$(PYTHONDIR)/eintune/

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(LIBEXECDIR) 2>/dev/null
	rm -rf $(DESTDIR)$(PYTHONDIR)/eintune/__pycache__
	-rmdir $(DESTDIR)$(PYTHONDIR)/eintune 2>/dev/null

# Installs the Debian packages that are missing; silent when all are there.
deps:
	@sh tools/deps.sh

# The sanitizer options of make asan and make asan-mpi.
#
# intercept_tls_get_addr=0: the sanitizer runtime of clang 14 (of every
# release up to LLVM 16 and GCC 13) takes a dynamic TLS block that starts 16
# bytes past a page boundary for a glibc 2.19 block and reads the two
# words before it as the block's start and size. Since glibc 2.25 no such
# header exists, so those words are whatever malloc left there, and
# LeakSanitizer's tracer, scanning that "block" at exit, dies ("Tracer
# caught signal 11 ... LeakSanitizer has encountered a fatal error"). The
# block's place depends on the run's allocations, so a program hits it
# again when run again. Dynamic TLS belongs to dlopen'ed libraries (the
# OpenCL driver, Open MPI's components), none of them eintune's code.
ASAN_TLS := intercept_tls_get_addr=0

# make test-mpi on the ASan + UBSan build (.ci/run gives it the
# LeakSanitizer suppressions of tests/lsan.supp, Open MPI's included).
# Open MPI unloads its components (mca_*.so) at MPI_Finalize, and they have
# no frame pointers: LeakSanitizer's fast unwinder then shows their leaks
# as one frame in an "<unknown module>" that no suppression can name. The
# slow unwinder reaches the frames in libmpi and libopen-pal, which
# tests/lsan.supp names.
asan-mpi: export ASAN_OPTIONS := $(if $(ASAN_OPTIONS),$(ASAN_OPTIONS):)fast_unwind_on_malloc=0:$(ASAN_TLS)
asan-mpi:
	$(MAKE) BUILD=build-asan CC=clang \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" test-mpi

# ASan + UBSan build of everything, in its own build directory.
asan: export ASAN_OPTIONS := $(if $(ASAN_OPTIONS),$(ASAN_OPTIONS):)$(ASAN_TLS)
asan:
	$(MAKE) BUILD=build-asan CC=clang \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" test

fuzz:
	@sh fuzz/run.sh $(FUZZ_SECONDS)

# Every test program under valgrind memcheck (tests/valgrind.sh): memory
# errors and definite or indirect leaks fail; suppressions only for the
# OpenCL driver's, LLVM's and NVRTC's own, see tests/valgrind.supp. Tests
# do less device work when ET_UNDER_VALGRIND is set (each says what), and
# test_reference skips its beyond-double precision checks there (valgrind
# computes x87 long double in 64 bits). The device worker and the CLI that
# the tests exec are not traced by `make valgrind`.
# - `make valgrind`: VALGRIND_TESTS, the host tests and the device tests
#   that are quick there: about 2 min in all (test_measure 35 s, 100 s
#   the first time; the others under 20 s each).
# - `make valgrind-device`: VALGRIND_DEVICE_TESTS, the tests that compile
#   many kernels in-process; PoCL compiles each one again under valgrind
#   (about 9 s a kernel the first time: valgrind's CPU gives another
#   cache key), so they take minutes even with their reduced work
#   (the first time: test_transforms 7 min, test_roofline 6,
#   test_kernel_matrix 16, test_api_kernel 2.5; with the cache warm
#   test_transforms takes 1).
# - `make valgrind-worker`: VALGRIND_WORKER_TESTS with the device worker
#   itself under memcheck (tests/valgrind-worker.sh), so measure/'s device
#   code in the worker is checked too (test_api 20 s, test_tune 5.5 min).
# - `make valgrind-cli`: VALGRIND_CLI_TESTS with every build/eintune they
#   run under memcheck too (the worker not), so cli/ is checked (4.5 min).
VALGRIND_TESTS ?= test_einsum test_npy test_spaces test_timing test_limits \
                  test_reference test_db test_search test_verify test_api \
                  test_cli_check test_cli_run test_db_cli test_faults \
                  test_tune test_worker test_measure test_base test_api_best \
                  test_open_cli test_seed
VALGRIND_DEVICE_TESTS ?= test_transforms test_roofline test_kernel_matrix \
                         test_api_kernel test_open test_api_launch
VALGRIND_WORKER_TESTS ?= test_api test_tune
VALGRIND_CLI_TESTS ?= test_cli_check test_db_cli test_cli_run test_open_cli
valgrind: $(BIN) $(WORKER) $(VALGRIND_TESTS:%=$(BUILD)/tests/%) $(TEST_SO)
	@BUILD=$(BUILD) sh tests/valgrind.sh $(VALGRIND_TESTS:%=$(BUILD)/tests/%)

valgrind-device: $(BIN) $(WORKER) $(VALGRIND_DEVICE_TESTS:%=$(BUILD)/tests/%)
	@BUILD=$(BUILD) sh tests/valgrind.sh \
	    $(VALGRIND_DEVICE_TESTS:%=$(BUILD)/tests/%)

valgrind-worker: $(BIN) $(WORKER) $(VALGRIND_WORKER_TESTS:%=$(BUILD)/tests/%)
	@BUILD=$(BUILD) VALGRIND_CHILDREN=worker sh tests/valgrind.sh \
	    $(VALGRIND_WORKER_TESTS:%=$(BUILD)/tests/%)

valgrind-cli: $(BIN) $(WORKER) $(VALGRIND_CLI_TESTS:%=$(BUILD)/tests/%)
	@BUILD=$(BUILD) VALGRIND_CHILDREN=cli sh tests/valgrind.sh \
	    $(VALGRIND_CLI_TESTS:%=$(BUILD)/tests/%)

bench: $(BIN)
	@sh bench/run.sh

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(WORKER_SRC:%.c=$(BUILD)/%.d)
