#!/usr/bin/env bash
# Packs the GPU checks (bench/gpu_check.sh) into DEST for a machine with a
# GPU: the binaries, stripped, under DEST/bin and the shared libraries they
# need that such a machine may lack under DEST/lib. Left out: glibc and the
# compiler runtime (newer there, backward compatible) and the CUDA driver,
# runtime, cuBLAS and NCCL (the machine's own; gpu_check.sh finds them).
#   bazel build //trainer/model:gpu_mlp_test //tests:nccl_single_rank_test \
#     //bench:gpu_mlp_bench //bench:overlap_bench //cli:sampan
#   bench/gpu_pack.sh DEST
set -euo pipefail
dest=${1:?usage: gpu_pack.sh DEST}
bins="trainer/model/gpu_mlp_test tests/nccl_single_rank_test
      bench/gpu_mlp_bench bench/overlap_bench cli/sampan"
rm -rf "$dest/bin" "$dest/lib"
mkdir -p "$dest/bin" "$dest/lib"
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libnccl)'
for b in $bins; do
  install -m 755 "bazel-bin/$b" "$dest/bin/"
  ldd "bazel-bin/$b" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [ -e "$dest/lib/$name" ] || cp -L "$path" "$dest/lib/$name"
  done
done
chmod u+w "$dest"/bin/* "$dest"/lib/*
strip --strip-unneeded "$dest"/bin/* "$dest"/lib/* 2>/dev/null || true
cp bench/gpu_check.sh "$dest/"
du -sh "$dest"
