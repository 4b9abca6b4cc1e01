# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# lnx-go: build the provider, run tests and benchmarks.
export PATH := $(PATH):/usr/local/go/bin
GO      ?= go
LIB     := build/lib/liblnx-fi.so
CTEST_DIR := build/ctest

# -z nodelete: libfabric's fi_fini dlcloses providers, and a Go runtime can
# never be unloaded; the image stays mapped and fi_prov_ini runs again.
LDFLAGS := -extldflags=-Wl,-z,nodelete

# The commit the library is built from, logged at load (FI_LOG_LEVEL=info):
# "-dirty" with uncommitted changes, "unknown" outside a git checkout of
# this tree. Evaluated only when lib is built.
GIT_COMMIT = $(shell git -C '$(CURDIR)' rev-parse --show-toplevel 2>/dev/null | grep -qxF '$(CURDIR)' && \
	{ printf %s "$$(git -C '$(CURDIR)' rev-parse --short=12 HEAD)"; \
	  git -C '$(CURDIR)' diff --quiet HEAD -- || printf %s -dirty; } || echo unknown)

MAN     := build/man/fi_lnx.7

# make install [PREFIX=/usr/local] [LIBDIR=PREFIX/lib] [DESTDIR=]: the
# provider into LIBDIR/libfabric, the directory layout libfabric scans for
# DL providers (Debian 12's libfabric scans /usr/lib/x86_64-linux-gnu/libfabric
# when FI_PROVIDER_PATH is unset: PREFIX=/usr LIBDIR=/usr/lib/x86_64-linux-gnu),
# and fi_lnx.7 under PREFIX/share/man/man7. It installs what make built; it
# builds only what is missing.
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
MANDIR  ?= $(PREFIX)/share/man
PROVDIR  = $(LIBDIR)/libfabric
INSTALL ?= install

.PHONY: all deps lib generate format format-check man install uninstall test gotest ctest soak fuzz deb13 bench bench-deps plot pingpong clean clean-deb13

all: lib man

deps:
	./build/deps.sh

# The shared library is built with Go 1.26. It was pinned to 1.24 after
# a C host calling into it crashed under load on 1.25 and 1.26 ("found bad
# pointer in Go heap"); the cause was lnx's own typed pointer stores into C
# memory (fixed since, capi/cmem.go). A 1.26 build then passed the whole
# ctest suite, 45 fresh fi_bench pairs with GOGC=1 (shm, tcp and mixed
# links) and the load and thread tests with GOGC=5, and its calls from C
# into Go are cheaper: a 1-byte shm ping-pong with every receive through
# Go (FI_LNX_ARM_RECV=0) was 0.91x of libfabric shm against 1.18x for the
# 1.24 build in the same run. The go command fetches the toolchain from the
# module proxy when the installed one differs.
LIB_TOOLCHAIN ?= go1.26.8

# The Go mirrors of the structs C and Go share (lnx/cabi_gen.go,
# shm/cabi_gen.go), their layout tests, and capi/layout_gen.c's static
# assertions, all from capi/include/lnx_capi.h (internal/cabigen; its test
# fails when they are out of date).
generate:
	$(GO) generate ./internal/cabigen

# The C sources in one style (.clang-format): make format rewrites them,
# make format-check (part of make test) fails on any difference and on
# any line over 100 columns.
CLANG_FORMAT ?= clang-format
C_SOURCES = $(sort $(wildcard capi/*.c capi/include/*.h peers/ofi/*.c peers/peerep/*.c tests/c/*.c tests/c/*.h tests/c/unit/*.c tests/c/unit/*.h \
	tests/bench/*.c tests/mpi/*.c tests/mpi/*.h tests/device/*.c))
format:
	$(CLANG_FORMAT) -i --style=file $(C_SOURCES)
format-check:
	@echo 'format-check: $(words $(C_SOURCES)) C files against .clang-format ($(CLANG_FORMAT)), and no line over 100 columns'
	$(CLANG_FORMAT) --dry-run -Werror --style=file $(C_SOURCES)
	@long=0; for f in $(C_SOURCES); do \
		expand -t 8 "$$f" | awk -v f="$$f" 'length > 100 { print f ":" FNR ": " length " columns"; n++ } END { exit n > 0 }' || long=1; \
	done; [ $$long = 0 ] || { echo 'format-check: lines over 100 columns (tabs 8 wide) above' >&2; exit 1; }

lib:
	GOTOOLCHAIN=$(LIB_TOOLCHAIN) $(GO) build -buildmode=c-shared -ldflags='$(LDFLAGS) -X main.gitCommit=$(GIT_COMMIT)' -o $(LIB) ./capi
	rm -f build/lib/liblnx-fi.h

# The man page, from docs/lnx.7.md by docs/mangen (whose tests check that
# it renders without warnings and describes every FI_LNX_* variable); its
# footer names the release kept in capi/include/lnx_version.h.
RELEASE = $(shell sed -n 's/^\#define LNX_RELEASE \([0-9][0-9]*\)$$/\1/p' capi/include/lnx_version.h)
man: $(MAN)
$(MAN): docs/lnx.7.md docs/mangen/mangen.go capi/include/lnx_version.h
	@mkdir -p $(@D)
	$(GO) run ./docs/mangen -release '$(RELEASE)' -o $@ docs/lnx.7.md

install: $(MAN)
	@test -f $(LIB) || $(MAKE) lib
	$(INSTALL) -d '$(DESTDIR)$(PROVDIR)' '$(DESTDIR)$(MANDIR)/man7'
	$(INSTALL) -m 0755 $(LIB) '$(DESTDIR)$(PROVDIR)/liblnx-fi.so'
	$(INSTALL) -m 0644 $(MAN) '$(DESTDIR)$(MANDIR)/man7/fi_lnx.7'

# The two files install put there, and the provider directory once nothing
# else is left in it.
uninstall:
	rm -f '$(DESTDIR)$(PROVDIR)/liblnx-fi.so' '$(DESTDIR)$(MANDIR)/man7/fi_lnx.7'
	rmdir --ignore-fail-on-non-empty '$(DESTDIR)$(PROVDIR)' 2>/dev/null || :

gotest:
	@echo 'gotest: go vet, then go test -race of every package (one line per package as it ends)'
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

ctest: lib man
	cmake -S tests/c -B $(CTEST_DIR) -DLNX_LIB_DIR=$(CURDIR)/build/lib >/dev/null
	cmake --build $(CTEST_DIR) -j2
	@bash tests/c/clear_stale_shm.sh
	@cd $(CTEST_DIR) && echo "ctest: $$(ctest -N | sed -n 's/^Total Tests: //p') tests (C programs, install, Open MPI jobs); each line says i/N as a test ends"
	cd $(CTEST_DIR) && ctest --output-on-failure --timeout 120

# A short run of every fuzz target over outside input (links string,
# address blobs, IPC descriptors, shm ring records, matching op sequences);
# seeds in testdata. Budgets are execution counts, about 8 s each on the
# 2-core CI machine: a duration (-fuzztime 8s) makes Go's fuzz coordinator
# fail now and then with "context deadline exceeded" at the deadline, with
# no failing input (golang/go#75804, fixed in Go 1.27; seen here in CI).
# FUZZTIME=<n>x or <duration> overrides every budget.
FUZZ_PARSE ?= 200000x
FUZZ_ADDR  ?= 250000x
FUZZ_IPC   ?= 250000x
FUZZ_REC   ?= 200000x
FUZZ_QUEUE ?= 50000x
# $(call fuzz,i,target,budget,package): says which of the FUZZ_COUNT
# targets runs, and for how long, before running it.
FUZZ_COUNT := 5
define fuzz
@echo 'fuzz $(1)/$(FUZZ_COUNT): $(2) in $(4) ($(patsubst %x,% execs,$(or $(FUZZTIME),$(3))))'
$(GO) test -run '^$$' -fuzz '^$(2)$$' -fuzztime $(or $(FUZZTIME),$(3)) $(4)
endef
fuzz:
	$(call fuzz,1,FuzzParse,$(FUZZ_PARSE),./lnx/links)
	$(call fuzz,2,FuzzDecodeAddr,$(FUZZ_ADDR),./lnx)
	$(call fuzz,3,FuzzDecodeIPC,$(FUZZ_IPC),./lnx)
	$(call fuzz,4,FuzzRecord,$(FUZZ_REC),./shm)
	$(call fuzz,5,FuzzQueue,$(FUZZ_QUEUE),./peers)

# The long soak (tests/c/soak.c): 8 processes on 2 simulated nodes with
# peers stopped, killed and replaced, for LNX_SOAK_SECONDS (default 1800).
# ctest runs the same program for 60 s (soak_short).
soak: lib
	cmake -S tests/c -B $(CTEST_DIR) -DLNX_LIB_DIR=$(CURDIR)/build/lib >/dev/null
	cmake --build $(CTEST_DIR) --target soak
	cd $(CTEST_DIR) && env FI_PROVIDER_PATH=$(CURDIR)/build/lib FI_TCP_IFACE=lo \
		'FI_LNX_PROV_LINKS=shm+tcp;ofi_rxm:lo' FI_LNX_PEER_TIMEOUT=$${FI_LNX_PEER_TIMEOUT:-2s} \
		./soak $${LNX_SOAK_SECONDS:-1800}

# The Debian 13 suite: libfabric 2.1 and Open MPI 5.0.7 in a debootstrapped
# root under build/deb13 (made once, then reused), against the library
# built here; see tests/deb13/suite.sh. A machine that cannot make the
# root skips it with a message; CI (CI=true) cannot skip it.
deb13: lib man
	bash tests/deb13/run.sh

test: format-check gotest ctest fuzz deb13

BENCH := build/bench/fi_bench
$(BENCH): tests/bench/fi_bench.c
	@mkdir -p build/bench
	$(CC) -O2 -Wall -o $@ $< $$(pkg-config --cflags --libs libfabric) -ldl

# The MPI-level benchmark (tests/mpi/mpi_bench.sh runs it over each path).
MPI_BENCH := build/bench/mpi_bench
$(MPI_BENCH): tests/mpi/mpi_bench.c tests/mpi/mpitest.h
	@mkdir -p build/bench
	$$(command -v mpicc.openmpi || echo mpicc) -O2 -Wall -o $@ $<

# The emulated device (no GPU here): device rows of the benchmark.
EMU := build/bench/libemu.so
$(EMU): hmem/emu/emu.c
	@mkdir -p build/bench
	$(CC) -O2 -shared -fPIC -o $@ $<

# Main job: lnx over its default links (shm for this same-node pair) beside
# libfabric's own shm, small sizes.
pingpong: lib $(BENCH)
	FI_PROVIDER_PATH=$(CURDIR)/build/lib FI_TCP_IFACE=lo $(BENCH) -r 3 -s 1,64,4096,65536 shm=shm lnx=lnx

# Full benchmark: every size, lnx (links shm) beside shm alone and lnx
# without its C fast paths (lnx_go: every send and receive enters Go); then the
# inter-node rows: lnx with links shm+tcp;ofi_rxm and the two processes on
# different simulated nodes (so tcp carries it) beside tcp;ofi_rxm alone,
# and lnx linking libfabric's shm as its network core (fi_shm) between
# simulated nodes beside libfabric shm alone: what lnx's transport adds
# over a sub-microsecond core; one-sided operations (fi_bench -R) the same
# two ways as the messages (between simulated nodes also beside tcp;ofi_rxm
# asked for FI_DELIVERY_COMPLETE, the completion lnx gives), tables kept
# as build/bench/rma_node.txt and rma_net.txt (no plot); at the MPI level
# (tests/mpi/mpi_bench.sh) Open MPI's own paths beside cm + ofi over lnx
# on one node, then ping-pong and windowed bandwidth between two simulated
# nodes beside cm + ofi over tcp;ofi_rxm alone (and ob1 + btl tcp).
# Each run prints its table and writes it as build/bench/<run>.csv; make
# plot (run at the end) draws each as build/bench/<run>.png. About 10
# minutes on the 2-core CI machine; fi_bench says which round it is on.
BENCH_RUN = FI_PROVIDER_PATH=$(CURDIR)/build/lib FI_TCP_IFACE=lo $(BENCH)
bench: bench-deps lib $(BENCH) $(EMU) $(MPI_BENCH)
	@echo 'bench 1/7: same node, every size: shm, lnx (links shm), lnx_go (C fast paths off); 5 rounds'
	$(BENCH_RUN) -r 5 -c build/bench/node.csv shm=shm lnx=lnx@shm \
		lnx_go=lnx@shm^FI_LNX_FAST_SEND=0^FI_LNX_FAST_RECV=0
	@echo 'bench 2/7: simulated nodes: tcp;ofi_rxm alone, lnx over shm+tcp;ofi_rxm; 3 rounds'
	$(BENCH_RUN) -r 3 -s 1,64,4096,16384,65536,1048576 -c build/bench/net.csv \
		'tcp=tcp;ofi_rxm' 'lnx=lnx@shm+tcp;ofi_rxm:lo#bench'
	@echo 'bench 3/7: the fast core: libfabric shm alone, lnx linking it (fi_shm) between simulated nodes; 5 rounds'
	$(BENCH_RUN) -r 5 -s 1,8,64,4096,16384,65536,1048576 -c build/bench/fastcore.csv \
		'shm=shm' 'lnx=lnx@fi_shm#bench'
	@echo 'bench 4/7: one-sided: fi_write/fi_read latency and bandwidth, fetch-add latency;'
	@echo '           same node: shm alone, lnx (links shm); simulated nodes: tcp;ofi_rxm alone, lnx over shm+tcp;ofi_rxm; 3 rounds'
	$(BENCH_RUN) -R -r 3 -s 8,4096,65536,1048576 shm=shm lnx=lnx@shm | tee build/bench/rma_node.txt
	$(BENCH_RUN) -R -r 3 -n 500 -s 8,4096,65536,1048576 'tcp=tcp;ofi_rxm' 'tcp_dc=tcp;ofi_rxm%dc' \
		'lnx=lnx@shm+tcp;ofi_rxm:lo#bench%dc' | tee build/bench/rma_net.txt
	@echo 'bench 5/7: registration: Open MPI 5.0.6 registers and closes an MR per message (regmsg);'
	@echo '           lnx with its core-registration cache, without it, and tcp;ofi_rxm alone; 3 rounds'
	$(BENCH_RUN) -r 3 -s 64,65536,1048576 -c build/bench/reg.csv \
		'tcp=tcp;ofi_rxm' 'tcp_reg=tcp;ofi_rxm%regmsg' \
		'lnx=lnx@shm+tcp;ofi_rxm:lo#bench' 'lnx_reg=lnx@shm+tcp;ofi_rxm:lo#bench%regmsg' \
		'lnx_reg_nocache=lnx@shm+tcp;ofi_rxm:lo#bench%regmsg^FI_LNX_MR_CACHE_MAX=0' \
		'lnx_local=lnx@shm+tcp;ofi_rxm:lo' 'lnx_local_reg=lnx@shm+tcp;ofi_rxm:lo%regmsg'
	@echo 'bench 6/7: device memory on the emulated device (staged through host buffers), beside host memory; 3 rounds'
	FI_LNX_CUDA_LIB=$(CURDIR)/$(EMU) $(BENCH_RUN) -r 3 -s 64,65536,1048576,4194304 -c build/bench/dev.csv \
		'lnx=lnx@shm' 'lnx_dev=lnx@shm%dev' 'lnx_devreg=lnx@shm%devregmsg' \
		'lnx_tcp=lnx@shm+tcp;ofi_rxm:lo#bench' 'lnx_tcp_dev=lnx@shm+tcp;ofi_rxm:lo#bench%dev'
	@echo 'bench 7/7: MPI level: Open MPI ob1 + vader beside cm + ofi over lnx (links shm, default links); 3 rounds'
	FI_PROVIDER_PATH=$(CURDIR)/build/lib bash tests/mpi/mpi_bench.sh -r 3 $(MPI_BENCH)
	FI_PROVIDER_PATH=$(CURDIR)/build/lib bash tests/mpi/mpi_bench.sh -r 3 -n 4 -t pairs -s 1,64,4k,64k,1m $(MPI_BENCH)
	@echo '           two simulated nodes: cm + ofi over tcp;ofi_rxm alone, ob1 + btl tcp, cm + ofi over lnx (default links); 3 rounds'
	FI_PROVIDER_PATH=$(CURDIR)/build/lib bash tests/mpi/mpi_bench.sh -N -r 3 -t lat,bw -s 1,64,4k,16k,64k,1m $(MPI_BENCH)
	@echo 'bench (Debian 13): libfabric 2.1, beside its shm, tcp;ofi_rxm and built-in lnx (tests/deb13/bench.sh)'
	bash tests/deb13/run.sh bench
	@$(MAKE) --no-print-directory plot

# What make bench needs beyond make deps: gnuplot.
bench-deps:
	./build/deps.sh bench

# build/bench/<run>.png from <run>.csv (tests/bench/plot.gp): latency and
# bandwidth against message size, log scales, one line per case, and under
# each the ratio of every case to the first.
PLOT_TITLE_node := same node: lnx (links shm) beside libfabric shm
PLOT_TITLE_net  := simulated nodes: lnx (links shm+tcp;ofi_rxm) beside tcp;ofi_rxm
PLOT_TITLE_fastcore := simulated nodes: lnx (links fi_shm) beside libfabric shm
PLOT_TITLE_reg  := registration per message (Open MPI 5.0.6 pattern)
PLOT_TITLE_dev  := emulated device memory beside host memory
build/bench/%.png: build/bench/%.csv tests/bench/plot.gp
	gnuplot -e "csv='$<'; png='$@'; name='$(or $(PLOT_TITLE_$*),$*)'" tests/bench/plot.gp
plot: $(patsubst %.csv,%.png,$(wildcard build/bench/*.csv))

clean:
	rm -rf build/lib build/ctest build/bench build/man

# Removes the Debian 13 root (never while anything is mounted in it).
clean-deb13:
	@! findmnt -rn -o TARGET | grep -qF '$(CURDIR)/build/deb13/' || \
		{ echo "clean-deb13: mounts are active under build/deb13; not removing" >&2; exit 1; }
	rm -rf build/deb13
