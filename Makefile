# lnx-go: build the provider, run tests and benchmarks.
GO      ?= go
LIB     := build/lib/liblnx-fi.so
CTEST_DIR := build/ctest

# -z nodelete: libfabric's fi_fini dlcloses providers, and a Go runtime can
# never be unloaded; the image stays mapped and fi_prov_ini runs again.
LDFLAGS := -extldflags=-Wl,-z,nodelete

.PHONY: all lib test gotest ctest bench clean

all: lib

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

clean:
	rm -rf build/lib build/ctest
