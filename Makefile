# lnx-go: build the provider, run tests and benchmarks.
export PATH := $(PATH):/usr/local/go/bin
GO      ?= go
LIB     := build/lib/liblnx-fi.so
CTEST_DIR := build/ctest

# -z nodelete: libfabric's fi_fini dlcloses providers, and a Go runtime can
# never be unloaded; the image stays mapped and fi_prov_ini runs again.
LDFLAGS := -extldflags=-Wl,-z,nodelete

.PHONY: all deps lib test gotest ctest bench pingpong clean

all: lib

deps:
	./build/deps.sh

lib:
	$(GO) build -buildmode=c-shared -ldflags='$(LDFLAGS)' -o $(LIB) ./capi
	rm -f build/lib/liblnx-fi.h

gotest:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

ctest: lib
	cmake -S tests/c -B $(CTEST_DIR) -DLNX_LIB_DIR=$(CURDIR)/build/lib >/dev/null
	cmake --build $(CTEST_DIR) -j2
	cd $(CTEST_DIR) && ctest --output-on-failure --timeout 120

test: gotest ctest

BENCH := build/bench/fi_bench
$(BENCH): tests/bench/fi_bench.c
	@mkdir -p build/bench
	$(CC) -O2 -Wall -o $@ $< $$(pkg-config --cflags --libs libfabric)

# Main job: lnx over its default links (shm for this same-node pair) beside
# libfabric's own shm, small sizes.
pingpong: lib $(BENCH)
	FI_PROVIDER_PATH=$(CURDIR)/build/lib FI_TCP_IFACE=lo $(BENCH) -r 3 -s 1,64,4096,65536 lnx=lnx shm=shm

# Full benchmark: every size, lnx (links shm) beside shm alone.
bench: lib $(BENCH)
	FI_PROVIDER_PATH=$(CURDIR)/build/lib FI_TCP_IFACE=lo $(BENCH) -r 5 lnx=lnx@shm shm=shm

clean:
	rm -rf build/lib build/ctest build/bench
