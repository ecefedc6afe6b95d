#!/usr/bin/env bash
# The whole fault suite, standalone and at full length (30 s SIGSTOP, 20 s
# of packet loss): bash tests/fault/run.sh [case ...]. Builds what it needs
# first, runs each case in turn, and prints a summary line per case.
# `make test` runs the same cases shortened (tests/fault/BUILD.bazel).
set -uo pipefail
cd "$(dirname "$0")/../.."
bazel build --jobs=2 //cli:sampan //tests:ps_counter_load > /dev/null 2>&1 ||
  { echo "build failed: bazel build //cli:sampan //tests:ps_counter_load"; exit 1; }
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(pserver_kill trainer_kill hybrid_trainer_kill async_pserver_kill pserver_stop packet_loss disk_full scale scale_kill)
export FAULT_CACHE="${FAULT_CACHE:-/tmp/sampan-fault-cache}"
summary=() failed=0
for c in "${cases[@]}"; do
  start=$(date +%s)
  echo "=== $c"
  out=$(bash "tests/fault/${c}_test.sh" 2>&1); rc=$?
  echo "$out"
  line=$(echo "$out" | grep -E "^(RESULT|SKIP)" | tail -1)
  summary+=("$(printf '%-13s rc=%d %4ds  %s' "$c" $rc $(( $(date +%s) - start )) "$line")")
  [ $rc -eq 0 ] || failed=$((failed + 1))
done
echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $((failed > 0))
