#!/usr/bin/env bash
# Warm start from a checkpoint (init_model naming a checkpoint or a root of
# them) under `sampan run`, RocksDB tables, 2 pservers x 2 trainers:
#   1. Job A, an FM stream of day 1 with a checkpoint after every pass; job B
#      trains one pass of day 2 from A's checkpoint root (its newest
#      checkpoint, after A's last pass): B scores its pass exactly as `sampan
#      eval` scores A's version of that pass (logloss), its first base holds
#      every key of A's model, and its stored rows (read with RocksDB's own
#      `ldb`) are A's with their show/click and optimizer state: the rows B
#      did not train are byte for byte the checkpoint's (shown, with their
#      Adagrad sums), the others counted on from there. The checkpoint still
#      verifies after B used it.
#   2. HYBRID and ASYNC DeepFM: B starts from the checkpoint's dense.bin
#      (HYBRID) or the dense table in its snapshots (ASYNC): the same
#      logloss as eval of A's version.
#   3. Refused with exit 2 before anything starts: a corrupt checkpoint
#      (naming the file), another model shape, other tables (shards), a
#      memory table, a checkpoint without its job config.
set -uo pipefail

TESTLIB="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
[ -f "$TESTLIB" ] || TESTLIB="$(dirname "$0")/job_testlib.sh"
source "$TESTLIB"

command -v ldb > /dev/null || { fail "ldb (rocksdb-tools) is not installed"; finish; }
data="$TMP/stream"
rm -rf "$data"
"$SAMPAN" gen-data --out="$data" --stream_days=2 --passes_per_day=4 \
  --parts_per_pass=2 --rows=3000 --seed=5 > /dev/null \
  || { fail "gen-data --stream_days"; finish; }
cat "$data"/20261202/06/part-* > "$TMP/pass-0206.tsv"

write_config() {  # dir model passes-yaml
  cat > "$1.yaml" <<YAML
name: ckpt-warm
output_dir: $1
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 60}
model: $2
table: {num_shards: 8, backend: ROCKSDB, data_dir: $1/db}
checkpoint: {every_passes: 1, dir: $1/ckpt}
data:
  format: CRITEO_TSV
  batch_size: 256
  synthetic: {rows: 0}
  stream: {root: $data, poll_seconds: 0.2, $3}
YAML
}
FM="{type: FM, embedding_dim: 4}"
B_PASS='start_pass: "20261202/06", end_pass: "20261202/06"'

# The progressive logloss of the warm job's pass against eval's of the
# version A published for the pass its newest checkpoint follows.
logloss_check() {  # a-job b-job what
  local ckpt pass version want got
  ckpt=$(ls -d "$1"/ckpt/ckpt-* | sort -t- -k2 -n | tail -1)
  pass=$(sed -n 's/.*pass_name: "\(.*\)"/\1/p' "$ckpt/MANIFEST" | head -1)
  version=$(awk -F'\t' -v p="$pass" '$2 == p { print $7 }' "$1/passes.tsv")
  want=$("$SAMPAN" eval "$1/versions/v-$(printf %06d "$version")" \
    "$TMP/pass-0206.tsv" 2>/dev/null | sed -n 's/.*logloss \([^ ]*\) .*/\1/p')
  got=$(awk -F'\t' 'NR == 2 { print $5 }' "$2/passes.tsv" 2>/dev/null)
  [ -n "$want" ] && [ "$want" = "$got" ] \
    && pass "$3: B starts from exactly $(basename "$ckpt") (pass $pass): logloss $got = eval's of v-$version" \
    || fail "$3: warm logloss '$got', eval of A's v-$version (pass '$pass') '$want'"
}

# 1. FM: A trains day 1 with checkpoints, B one pass of day 2 from them.
a="$TMP/a"
write_config "$a" "$FM" 'end_pass: "20261201/18"'
out=$("$SAMPAN" run "$a.yaml" 2>&1) || fail "job A: $(tail -3 <<< "$out")"
newest=$(ls -d "$a"/ckpt/ckpt-* 2>/dev/null | sort -t- -k2 -n | tail -1)
[ -f "$newest/job.pbtxt" ] && grep -q '"job.pbtxt"' "$newest/MANIFEST" \
  && pass "a checkpoint records its job config (job.pbtxt, in its MANIFEST)" \
  || fail "no job.pbtxt in checkpoint '$newest'"
b="$TMP/b"
write_config "$b" "$FM" "$B_PASS"
echo "init_model: $a/ckpt" >> "$b.yaml"
out=$("$SAMPAN" run "$b.yaml" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "warm start from checkpoint $newest" <<< "$out" \
  && pass "job B warm-starts from A's newest checkpoint ($newest)" \
  || fail "job B: exit $rc: $(tail -3 <<< "$out")"
logloss_check "$a" "$b" "FM"
"$SAMPAN" model-rows "$a/versions" 2>/dev/null | grep -v '^dense' | cut -f1 | sort > "$TMP/a.keys"
"$SAMPAN" model-rows "$b/versions/v-000001" 2>/dev/null | grep -v '^dense' | cut -f1 | sort > "$TMP/b.keys"
missing=$(comm -23 "$TMP/a.keys" "$TMP/b.keys" | wc -l)
[ -s "$TMP/a.keys" ] && [ "$missing" -eq 0 ] \
  && [ "$(wc -l < "$TMP/b.keys")" -gt "$(wc -l < "$TMP/a.keys")" ] \
  && pass "B's first base holds all $(wc -l < "$TMP/a.keys") keys of A's model and its own ($(wc -l < "$TMP/b.keys"))" \
  || fail "B's first base lacks $missing of A's keys"
# Stored rows: [show, click, unseen, has_v, w, w's Adagrad sum, ...] + epoch.
for i in 0 1; do
  rm -rf "$TMP/scan"; cp -r "$newest/pserver-$i" "$TMP/scan"  # ldb writes
  ldb --db="$TMP/scan" --column_family=table0 scan --hex 2>/dev/null > "$TMP/a-$i.scan"
  ldb --db="$b/db/pserver-$i" --column_family=table0 scan --hex 2>/dev/null > "$TMP/b-$i.scan"
done
verdict=$(/usr/bin/python3 - "$TMP" <<'PY'
import struct, sys
def rows(path):
    out = {}
    for line in open(path):
        k, _, v = line.strip().partition(" : ")
        if not k.startswith("0x73"):  # 's' + shard + key: a row
            continue
        raw = bytes.fromhex(v[2:])
        n = (len(raw) - 4) // 4
        out[k] = (struct.unpack("<%df" % n, raw[:4 * n]), raw)
    return out
a, b = {}, {}
for i in (0, 1):
    a.update(rows("%s/a-%d.scan" % (sys.argv[1], i)))
    b.update(rows("%s/b-%d.scan" % (sys.argv[1], i)))
kept = [k for k in a if k in b]
same = [k for k in kept if a[k][1] == b[k][1]]
shown = [k for k in same if a[k][0][0] > 0]
# table.optimizer.initial_accumulator: 1 (the default) is a fresh row's sum.
summed = [k for k in same if a[k][0][5] > 1.0]
grown = [k for k in kept if b[k][0][0] >= a[k][0][0] and b[k][0][5] >= a[k][0][5]]
ok = (len(a) > 1000 and len(kept) == len(a) and len(shown) > 1000
      and len(summed) > 100 and len(grown) == len(a))
print("ok" if ok else "bad", len(a), len(same), len(shown), len(summed),
      len(grown))
PY
)
read -r v n same shown summed grown <<< "$verdict"
[ "$v" = "ok" ] \
  && pass "B's stored rows are A's: $same of $n untouched rows byte for byte the checkpoint's ($shown shown, $summed with Adagrad sums past the start), all $grown with show and sums counted on from A's" \
  || fail "stored rows: $verdict"
err=$("$SAMPAN" validate "$b.yaml" 2>&1) \
  && pass "the checkpoint still verifies after B used it" \
  || fail "the checkpoint no longer verifies: $err"
[ -z "$(leftover "$b")" ] || fail "processes left: $(leftover "$b")"

# 2. Deep models: dense weights from dense.bin (HYBRID) or the snapshots'
# dense table (ASYNC).
for mode in HYBRID ASYNC; do
  model="{type: DEEPFM, embedding_dim: 4, hidden: [8], mode: $mode}"
  write_config "$TMP/a-$mode" "$model" 'end_pass: "20261201/06"'
  out=$("$SAMPAN" run "$TMP/a-$mode.yaml" 2>&1) || fail "$mode job A: $(tail -3 <<< "$out")"
  write_config "$TMP/b-$mode" "$model" "$B_PASS"
  echo "init_model: $TMP/a-$mode/ckpt" >> "$TMP/b-$mode.yaml"
  out=$("$SAMPAN" run "$TMP/b-$mode.yaml" 2>&1) || fail "$mode job B: $(tail -3 <<< "$out")"
  logloss_check "$TMP/a-$mode" "$TMP/b-$mode" "$mode DeepFM"
done
[ -f "$(ls -d "$TMP"/a-HYBRID/ckpt/ckpt-* | tail -1)/dense.bin" ] \
  || fail "HYBRID checkpoint without dense.bin"

# 3. Refused before anything starts (exit 2, no logs directory).
refused() {  # what yaml-edit init_model expect [model]
  local job="$TMP/refused"
  rm -rf "$job" "$job.yaml"
  write_config "$job" "${5:-$FM}" "$B_PASS"
  sed -i "$2" "$job.yaml"
  echo "init_model: $3" >> "$job.yaml"
  err=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -qF -- "$4" <<< "$err" && [ ! -d "$job/logs" ] \
    && pass "$1: exit 2, nothing started ($err)" \
    || fail "$1: exit $rc: $err"
}
cp -r "$a/ckpt" "$TMP/corrupt"
sst=$(cd "$TMP/corrupt/$(basename "$newest")" && ls pserver-1/*.sst | head -1)
printf 'x' | dd of="$TMP/corrupt/$(basename "$newest")/$sst" bs=1 seek=100 conv=notrunc 2>/dev/null
refused "a corrupt checkpoint" "s/x/x/" "$TMP/corrupt/$(basename "$newest")" "$sst"
refused "another model" "s/embedding_dim: 4/embedding_dim: 8/" "$a/ckpt" \
  "model.embedding_dim is 4 there, 8 here"
refused "other tables" "s/num_shards: 8/num_shards: 16/" "$a/ckpt" \
  "table.num_shards is 8 there, 16 here"
refused "a memory table" "s/backend: ROCKSDB, //; s/^checkpoint: .*//" "$a/ckpt" \
  "table.backend is ROCKSDB there, MEMORY here"
# ASYNC's dense rows are offsets from the seeded initial weights.
refused "another dense seed" "s/x/x/" "$TMP/a-ASYNC/ckpt" \
  "model.seed is 1 there, 2 here" \
  "{type: DEEPFM, embedding_dim: 4, hidden: [8], mode: ASYNC, seed: 2}"
# A checkpoint of before job.pbtxt: its MANIFEST verifies, the config is gone.
cp -r "$newest" "$TMP/old-ckpt"
rm "$TMP/old-ckpt/job.pbtxt"
/usr/bin/python3 - "$TMP/old-ckpt/MANIFEST" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
open(sys.argv[1], "w").write(
    re.sub(r'files \{\n  path: "job.pbtxt"\n[^}]*\}\n', "", text))
PY
refused "a checkpoint without its job config" "s/x/x/" "$TMP/old-ckpt" \
  "checkpoints recorded their job's config"

finish
