#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each on its
# seed corpus for SECONDS (default 20). Crashes are saved under $OUT and fail
# the run. A short run belongs in CI; a long one is
#   tests/fuzz/run.sh 3600   (results go in bench/RESULTS.md)
# Needs `bazel build //proto:all` first (for the generated protobuf sources).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${1:-20}
OUT=${FUZZ_OUT:-/tmp/sampan-fuzz}
GEN=bazel-bin
mkdir -p "$OUT"

ABSL=$(echo -labsl_{statusor,status,cord,cordz_info,cord_internal,cordz_functions,cordz_handle,exponential_biased,str_format_internal,synchronization,graphcycles_internal,stacktrace,symbolize,debugging_internal,demangle_internal,malloc_internal,time,civil_time,time_zone,strings,strings_internal,raw_hash_set,hashtablez_sampler,hash,city,low_level_hash,bad_optional_access,bad_variant_access,strerror,int128,throw_delegate,base,spinlock_wait,raw_logging_internal,log_severity})
FLAGS=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I. -I"$GEN" -I/usr/include/eigen3)

# Every input of a fuzzer: its sources and the project's headers they
# include (the preprocessor's list; system headers left out), so that a
# changed header rebuilds it too.
inputs_of() {  # sources...
  clang++ -std=c++17 -I. -I"$GEN" -I/usr/include/eigen3 -MM "$@" |
    tr ' \\' '\n\n' | grep -v -e ':$' -e '^$' | sort -u
}

build() {  # name sources... -- libs...
  local name=$1; shift
  local sources=() arg inputs
  for arg in "$@"; do [[ $arg == -* ]] || sources+=("$arg"); done
  if [ -x "$OUT/$name" ]; then
    mapfile -t inputs < <(inputs_of "${sources[@]}")
    if [ ${#inputs[@]} -gt 0 ] &&
       [ -z "$(find "${inputs[@]}" -newer "$OUT/$name" | head -1)" ]; then
      return 0  # up to date
    fi
  fi
  echo "building $name"
  clang++ "${FLAGS[@]}" -o "$OUT/$name" "$@" $ABSL -lpthread
}

# The targets build side by side (each is one single-threaded clang run);
# `built` waits for them all and fails the run if any failed.
builds=()
build_bg() { build "$@" & builds+=($!); }
built() {
  local pid ok=1
  for pid in "${builds[@]}"; do wait "$pid" || ok=0; done
  [ $ok = 1 ] || { echo "FAIL: a fuzzer did not build"; exit 1; }
}

# A target's own .cc files from Bazel's graph, so that a file split or added
# there needs no edit here.
srcs_of() {
  bazel query "kind('source file', deps($1))" 2>/dev/null |
    sed -n 's|^//\([^:]*\):\(.*\.cc\)$|\1/\2|p' | grep -v '_test\.cc$'
}

mapfile -t CONFIG_SRCS < <(srcs_of //common:config)
[ ${#CONFIG_SRCS[@]} -gt 0 ] || { echo "FAIL: bazel query found no config sources"; exit 1; }
mapfile -t PSERVER_SRCS < <(srcs_of //pserver:pserver)
[ ${#PSERVER_SRCS[@]} -gt 0 ] || { echo "FAIL: bazel query found no pserver sources"; exit 1; }
build_bg criteo_parser_fuzzer tests/fuzz/criteo_parser_fuzzer.cc \
  trainer/data/formats.cc
build_bg criteo_reader_fuzzer tests/fuzz/criteo_reader_fuzzer.cc \
  trainer/data/criteo_reader.cc trainer/data/formats.cc \
  trainer/data/holdout.cc -lz
build_bg config_fuzzer tests/fuzz/config_fuzzer.cc "${CONFIG_SRCS[@]}" \
  "$GEN/proto/job.pb.cc" -lyaml-cpp -lprotobuf
# The handler every Predict call runs, on an in-memory model.
build_bg predict_fuzzer tests/fuzz/predict_fuzzer.cc serving/request_batch.cc \
  trainer/scoring.cc trainer/data/formats.cc trainer/model/ctr_model.cc \
  trainer/model/layers.cc trainer/model/gemm.cc trainer/model/gemm_avx2.cc \
  trainer/model/gemm_avx512.cc trainer/model/gpu_mlp_unavailable.cc common/log.cc \
  common/fork_join.cc common/thread_priority.cc \
  "$GEN/proto/serving.pb.cc" "$GEN/proto/job.pb.cc" \
  "$GEN/proto/model_version.pb.cc" -lprotobuf
build_bg rpc_fuzzer tests/fuzz/rpc_fuzzer.cc "${PSERVER_SRCS[@]}" \
  "$GEN/proto/ps.pb.cc" "$GEN/proto/ps.grpc.pb.cc" "$GEN/proto/job.pb.cc" \
  -lgrpc++ -lgrpc -lgpr -lprotobuf -lrocksdb -levent_core -levent_extra \
  -levent_openssl -lssl -lcrypto \
  -lprometheus-cpp-core -lz
built

# Seeds: hand-written lines, the example configs, a few requests.
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
mkdir -p "$seeds"/{criteo,config,rpc,predict}
cp tests/fuzz/corpus/criteo/* "$seeds/criteo/"
cp configs/*.yaml "$seeds/config/"
cp tests/fuzz/corpus/rpc/* "$seeds/rpc/"
cp tests/fuzz/corpus/predict/* "$seeds/predict/"

failed=0
for target in criteo_parser_fuzzer:criteo criteo_reader_fuzzer:criteo \
    config_fuzzer:config rpc_fuzzer:rpc predict_fuzzer:predict; do
  name=${target%%:*}; corpus=${target##*:}
  mkdir -p "$OUT/corpus-$corpus" "$OUT/crashes-$name"
  echo "running $name for ${SECONDS_EACH}s"
  if ! "$OUT/$name" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=4096 \
      -artifact_prefix="$OUT/crashes-$name/" -print_final_stats=1 \
      "$OUT/corpus-$corpus" "$seeds/$corpus" > "$OUT/$name.log" 2>&1; then
    echo "FAIL: $name found a crash; see $OUT/$name.log and $OUT/crashes-$name/"
    tail -30 "$OUT/$name.log"
    failed=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$OUT/$name.log" | tr '\n' ' '
    echo
  fi
done
exit $failed
