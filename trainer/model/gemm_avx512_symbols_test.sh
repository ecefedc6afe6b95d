#!/usr/bin/env bash
# The AVX-512 copy of the dense products must not leak into the rest of the
# program, which would then run AVX-512 instructions on CPUs without them.
# Arguments: the copy's object files, then a linked program using it.
#  1. The object may define, as external symbols, only its function
#     (sampan::gemm_internal::GemmAvx512) and ones whose mangled names carry
#     Eigen's renamed namespace (sampan_eigen_avx512), which no other unit
#     can define. Any other global or weak definition (a standard library
#     template compiled inside its target region, say) is one the linker
#     could keep for the whole program.
#  2. It may hold no startup code (.init_array, .ctors): that runs on every
#     CPU.
#  3. In the linked program, only those functions may touch AVX-512
#     registers (zmm, k masks, xmm/ymm 16-31).
set -euo pipefail
objects=() programs=()
for f in "$@"; do
  if [[ "$f" == *.o ]]; then objects+=("$f"); else programs+=("$f"); fi
done
if [ "${#objects[@]}" -eq 0 ] || [ "${#programs[@]}" -eq 0 ]; then
  echo "want object files and a program, got: $*" >&2
  exit 1
fi
allowed() {  # mangled names on stdin -> those not the copy's own
  grep -v -e '^_ZN6sampan13gemm_internal10GemmAvx512E' \
    -e 'sampan_eigen_avx512' -e '^DW\.ref\.__gxx_personality_v0$' || true
}

# 1. External definitions (local ones, t/r/b/d, stay in the object).
defined=$(nm --defined-only "${objects[@]}" |
  awk 'NF >= 3 && $2 ~ /^[TWVDBRGSiu]$/ { print $3 }')
echo "$defined" | grep -q '^_ZN6sampan13gemm_internal10GemmAvx512E' || {
  echo "GemmAvx512 not found in ${objects[*]}" >&2
  exit 1
}
foreign=$(echo "$defined" | allowed)
if [ -n "$foreign" ]; then
  echo "the AVX-512 copy defines symbols the rest of the program may share:" >&2
  echo "$foreign" | c++filt >&2
  exit 1
fi

# 2. Startup code.
if objdump -h "${objects[@]}" | grep -q -e '\.init_array' -e '\.ctors'; then
  echo "the AVX-512 copy has startup code (.init_array/.ctors):" >&2
  objdump -h "${objects[@]}" | grep -e '\.init_array' -e '\.ctors' >&2
  exit 1
fi

# 3. Functions of the linked program that use AVX-512 registers.
users=$(objdump -d --no-show-raw-insn "${programs[@]}" | awk '
  /^[0-9a-f]+ <.*>:$/ { name = substr($2, 2, length($2) - 3); next }
  /%zmm|%k[0-7][,)]|%k[0-7]$|%[xy]mm(1[6-9]|2[0-9]|3[01])/ {
    if (!(name in seen)) { seen[name] = 1; print name }
  }')
[ -n "$users" ] || {
  echo "no function of ${programs[*]} uses AVX-512 registers: is the copy built?" >&2
  exit 1
}
stray=$(echo "$users" | sed 's/@.*//' | allowed)
if [ -n "$stray" ]; then
  echo "functions outside the AVX-512 copy use AVX-512 registers:" >&2
  echo "$stray" | c++filt >&2
  exit 1
fi
echo "ok: $(echo "$defined" | wc -l) external definitions and" \
  "$(echo "$users" | wc -l) functions with AVX-512 registers, all the copy's own"
