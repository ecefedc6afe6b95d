# Sampan's entry points. `make demo` and `make test` work on a fresh Debian
# machine: both install what is missing first.
BAZEL ?= bazel
DATA_DIR ?= $(abspath ../shared/data)
SAMPAN := bazel-bin/cli/sampan

.PHONY: all deps build demo test fuzz clean

all: build

deps:
	bash scripts/install-deps.sh

build: deps
	$(BAZEL) build //...

demo: build
	$(SAMPAN) run configs/demo.yaml

# Unit tests sit beside the code; multi-process suites live in tests/.
# Tests that need the real data sets skip when DATA_DIR does not exist.
# Then a short libFuzzer run (ASan + UBSan) of the parsers, the config
# loader and the RPC handlers; `make fuzz FUZZ_SECONDS=3600` for a long one.
FUZZ_SECONDS ?= 20
test: build
	$(BAZEL) test //... --test_env=SAMPAN_DATA_DIR=$(DATA_DIR)
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

fuzz: build
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

clean:
	$(BAZEL) clean
	rm -rf /tmp/sampan-demo
