#!/usr/bin/env bash
# The GPU checks of issue 6 on a machine with a GPU, from a folder packed by
# bench/gpu_pack.sh (binaries + their non-system libraries; CUDA, cuBLAS and
# NCCL come from the machine and are looked for at run time):
#   gpu_mlp_test           GPU vs CPU MLP forward/backward, DeepFM and DCN-v2
#                          steps (skips without a GPU)
#   nccl_single_rank_test  NCCL through the coordinator rendezvous, N = 1
#   gpu_mlp_bench          MLP step CPU vs GPU; cuBLAS SGEMM as the peer
#   overlap_bench          allreduce hidden behind backward, 2 ranks, CPU/GPU
#   sampan run             a hybrid DeepFM job with model.dense_device GPU
# Writes $OUT/*.txt (7 files); without $OUT, /tmp/gpu_check_out. Runs end to
# end without a GPU too (the GPU parts skip or report UNAVAILABLE);
# OVERLAP_STEPS and HYBRID_ROWS shrink it for a trial run on a small machine.
set -u
D=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gpu_check_out}
mkdir -p "$OUT"
summary="$OUT/summary.txt"
: > "$summary"

# Where the machine keeps the CUDA libraries this build needs.
dirs=""
for lib in libcuda.so.1 libcudart.so.13 libcublas.so.13 libcublasLt.so.13 \
    libnccl.so.2; do
  found=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
      /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
    [ -e "$d/$lib" ] && { found=$d; break; }
  done
  if [ -z "$found" ]; then
    for py in python3 /opt/torch/.venv/bin/python3; do
      p=$("$py" -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null)
      [ -n "$p" ] || continue
      f=$(find $p -name "$lib" 2>/dev/null | head -1)
      [ -n "$f" ] && { found=$(dirname "$f"); break; }
    done
  fi
  echo "$lib: ${found:-not found}" >> "$OUT/env.txt"
  [ -n "$found" ] && dirs="$dirs:$found"
done
export LD_LIBRARY_PATH="$D/lib$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  uname -a; nproc; date -u
  timeout 20 nvidia-smi || echo "nvidia-smi: not available"
  for b in "$D"/bin/*; do
    echo "== ldd $b"; ldd "$b" | grep -E "not found|cuda|cublas|nccl"
  done
} >> "$OUT/env.txt" 2>&1

step() {  # name outfile timeout command...
  local name=$1 out=$2 t=$3; shift 3
  echo "## $name: $*" >> "$out"
  local start=$SECONDS
  timeout "$t" "$@" >> "$out" 2>&1
  local rc=$?
  echo "$name: exit $rc in $((SECONDS - start)) s" | tee -a "$summary"
}

step gpu_mlp_test "$OUT/gpu_mlp_test.txt" 120 \
  "$D/bin/gpu_mlp_test" --gtest_color=no
step nccl_single_rank_test "$OUT/nccl_test.txt" 120 \
  env NCCL_DEBUG=WARN "$D/bin/nccl_single_rank_test" --gtest_color=no
step gpu_mlp_bench "$OUT/gpu_mlp_bench.txt" 150 "$D/bin/gpu_mlp_bench" 1.5
for mode in "" --gpu; do
  step "overlap_bench $mode" "$OUT/overlap_bench.txt" 120 \
    "$D/bin/overlap_bench" --steps="${OVERLAP_STEPS:-60}" --batch=4096 $mode
done

# A whole hybrid job: 2 trainers (on the one GPU), 2 pservers.
job=$(mktemp -d)
for device in GPU CPU; do
  cat > "$job/$device.yaml" <<YAML
name: gpu-check
output_dir: $job/$device
progress_interval_seconds: 2
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 60, heartbeat_timeout_seconds: 20}
model: {type: DEEPFM, embedding_dim: 8, hidden: [400, 400, 400],
        dense_device: $device,
        dense_optimizer: {type: ADAM, learning_rate: 0.001}}
table: {num_shards: 32, optimizer: {type: ADAGRAD, learning_rate: 0.05}}
data:
  batch_size: 4096
  synthetic: {rows: ${HYBRID_ROWS:-400000}, seed: 3, test_fraction: 0.1}
YAML
  step "hybrid DeepFM dense_device $device" "$OUT/hybrid_job.txt" 150 \
    "$D/bin/sampan" run "$job/$device.yaml"
  {
    grep -h "MLP on\|synchronous dense steps\|examples/s" \
      "$job/$device"/logs/trainer-*.log | tail -6
    cat "$job/$device"/result.txt "$job/$device"/dense_hash-*.txt
  } >> "$OUT/hybrid_job.txt" 2>&1
done
rm -rf "$job"

