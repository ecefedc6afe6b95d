# Sampan's entry points. `make demo` and `make test` work on a fresh Debian
# machine: both install what is missing first.
BAZEL ?= bazel
DATA_DIR ?= $(abspath ../shared/data)
SAMPAN := bazel-bin/cli/sampan

.PHONY: all deps build demo test fuzz sanitize tsan clean

all: build

deps:
	bash scripts/install-deps.sh

build: deps
	@[ -x $(SAMPAN) ] || echo "Building Sampan with Bazel, offline: the first build on a fresh machine takes about 9 minutes on 2 cores (later ones seconds); Bazel reports its progress every 15 s."
	$(BAZEL) build --show_progress_rate_limit=15 //...

demo: build
	$(SAMPAN) run configs/demo.yaml

# Unit tests sit beside the code; multi-process suites live in tests/.
# Tests that need the real data sets skip when DATA_DIR does not exist, GPU
# tests where there is no GPU, fault cases without root; the run ends with
# the list of what skipped and why (tests/skipped.sh). SAMPAN_STRICT_SKIPS=1
# (CI sets it) fails the run on any skip whose reason SAMPAN_ALLOW_SKIPS
# does not name.
# Then a short libFuzzer run (ASan + UBSan) of the parsers, the config
# loader and the RPC handlers; `make fuzz FUZZ_SECONDS=3600` for a long one.
FUZZ_SECONDS ?= 20
test: build
	$(BAZEL) test //... --test_env=SAMPAN_DATA_DIR=$(DATA_DIR); \
	  rc=$$?; bash tests/skipped.sh || rc=1; exit $$rc
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

fuzz: build
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

# Every test under ASan + UBSan, and the concurrency tests under TSan, each in
# its own output base so the normal build stays cached. The other output
# bases must not read the default build's bazel-<dir> symlink as a package,
# hence the .bazelignore line for this checkout's directory name. The output
# bases are per checkout (a hash of its path): one shared by two clones kept
# runfiles that linked into the other, deleted one.
CHECKOUT := $(shell printf %s "$(CURDIR)" | md5sum | cut -c1-8)
TSAN_TESTS = //pserver:worker_pool_test //common:fork_join_test //trainer/client:ps_client_test \
	//sparse_table:memory_table_test //sparse_table:rocksdb_table_test \
	//sparse_table:redo_table_test //sparse_table:redo_log_test \
	//sparse_table:memory_snapshot_test //pserver:pserver_test \
	//trainer:input_queue_test //trainer:step_loop_test //trainer:rank_merge_test \
	//trainer:pass_schedule_test //trainer:rank_progress_test //serving:serving_test \
	//serving:row_store_test //serving:sharded_serving_test \
	//pserver:pserver_move_test //sparse_table:shard_move_test \
	//trainer/client:ps_client_move_test //coordinator:fleet_test \
	//cli:job_page_test
sanitize: deps
	grep -qx "bazel-$(notdir $(CURDIR))" .bazelignore 2>/dev/null || echo "bazel-$(notdir $(CURDIR))" >> .bazelignore
	$(BAZEL) --output_base=$(HOME)/.cache/sampan-asan-$(CHECKOUT) test --config=asan \
	  --test_env=SAMPAN_DATA_DIR=$(DATA_DIR) --test_env=ASAN_OPTIONS=detect_leaks=0 //...
	$(MAKE) tsan

# The concurrency tests under ThreadSanitizer alone (CI runs this part).
tsan: deps
	grep -qx "bazel-$(notdir $(CURDIR))" .bazelignore 2>/dev/null || echo "bazel-$(notdir $(CURDIR))" >> .bazelignore
	$(BAZEL) --output_base=$(HOME)/.cache/sampan-tsan-$(CHECKOUT) test --config=tsan $(TSAN_TESTS)
	$(BAZEL) --output_base=$(HOME)/.cache/sampan-tsan-$(CHECKOUT) shutdown

clean:
	$(BAZEL) clean
	rm -rf /tmp/sampan-demo
