#!/usr/bin/env bash
# The AVX-512 copy of the dense products may define only symbols of its own:
# its function (sampan::gemm_internal::GemmAvx512) and ones whose mangled
# names carry Eigen's renamed namespace (sampan_eigen_avx512), which no other
# translation unit can define. Any other global or weak definition (a
# standard library template compiled inside its target region, say) is one
# the linker could keep for the whole program, which would then run AVX-512
# instructions on CPUs without them. Arguments: the library's object files.
set -euo pipefail
objects=()
for f in "$@"; do [[ "$f" == *.o ]] && objects+=("$f"); done
if [ "${#objects[@]}" -eq 0 ]; then
  echo "no object file among: $*" >&2
  exit 1
fi
# Mangled names of external definitions (local ones, t/r/b/d, stay here).
defined=$(nm --defined-only "${objects[@]}" |
  awk 'NF >= 3 && $2 ~ /^[TWVDBRGSiu]$/ { print $3 }')
own='_ZN6sampan13gemm_internal10GemmAvx512E'
echo "$defined" | grep -q "^$own" || {
  echo "GemmAvx512 not found in ${objects[*]}" >&2
  exit 1
}
foreign=$(echo "$defined" | grep -v -e "^$own" -e 'sampan_eigen_avx512' \
  -e '^DW\.ref\.__gxx_personality_v0$' || true)
if [ -n "$foreign" ]; then
  echo "the AVX-512 copy defines symbols the rest of the program may share:" >&2
  echo "$foreign" | c++filt >&2
  exit 1
fi
echo "ok: $(echo "$defined" | wc -l) external definitions, all the copy's own"
