#!/usr/bin/env bash
# Builds perf/sm90/decode_harness (no Kokkos, no CMake) into ${1:-build/harness}: the new
# arch/sm90 decode, reducer and SOL kernels, the previous kernels of commit 023c211 under the
# namespace uqold (old_adapter.cu), and the float64 reference of reference/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:-$ROOT/build/harness}"
OLD_COMMIT=023c211
NVCC="${NVCC:-nvcc}"
FLAGS=(-std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v)
mkdir -p "$OUT/old/sm90" "$OUT/old/uq/impl"
for f in $(git -C "$ROOT" ls-tree --name-only "$OLD_COMMIT" arch/sm90/); do
  git -C "$ROOT" show "$OLD_COMMIT:$f" > "$OUT/old/sm90/$(basename "$f")"
done
# The old kernels include the launch description from its old place (now src/uq/core).
git -C "$ROOT" show "$OLD_COMMIT:src/uq/impl/decode_launch.hpp" > "$OUT/old/uq/impl/decode_launch.hpp"
objs=()
for u in decode reduce; do
  "$NVCC" "${FLAGS[@]}" -Duq=uqold -I"$OUT/old" -I"$ROOT/src" -c "$OUT/old/sm90/$u.cu" -o "$OUT/old_$u.o" 2> "$OUT/old_$u.log"
  objs+=("$OUT/old_$u.o")
done
"$NVCC" "${FLAGS[@]}" -Duq=uqold -I"$OUT/old" -I"$ROOT/src" -c "$ROOT/perf/sm90/old_adapter.cu" -o "$OUT/old_adapter.o"
objs+=("$OUT/old_adapter.o")
for u in decode reduce sol; do
  "$NVCC" "${FLAGS[@]}" -I"$ROOT/arch" -I"$ROOT/src" -c "$ROOT/arch/sm90/$u.cu" -o "$OUT/new_$u.o" 2> "$OUT/new_$u.log"
  objs+=("$OUT/new_$u.o")
done
for r in uq_decode uq_writer uq_wht formats; do
  g++ -std=c++17 -O2 -c "$ROOT/reference/$r.cpp" -o "$OUT/ref_$r.o"
  objs+=("$OUT/ref_$r.o")
done
"$NVCC" "${FLAGS[@]}" -I"$ROOT/arch" -I"$ROOT/src" -I"$ROOT/reference" "$ROOT/perf/sm90/decode_harness.cu" "${objs[@]}" \
  -o "$OUT/decode_harness"
grep -h "Used\|spill\|C75" "$OUT"/new_*.log || true
echo "built $OUT/decode_harness"
# EXTRA_VARIANT="-DNAME=VALUE ..." builds a second harness with the new decode compiled so
# (decode_harness_x), for A/B measurements in one device call.
if [ -n "${EXTRA_VARIANT:-}" ]; then
  # shellcheck disable=SC2086
  "$NVCC" "${FLAGS[@]}" $EXTRA_VARIANT -I"$ROOT/arch" -I"$ROOT/src" -c "$ROOT/arch/sm90/decode.cu" -o "$OUT/x_decode.o" 2> "$OUT/x_decode.log"
  xobjs=()
  for o in "${objs[@]}"; do [ "$o" = "$OUT/new_decode.o" ] && xobjs+=("$OUT/x_decode.o") || xobjs+=("$o"); done
  "$NVCC" "${FLAGS[@]}" -I"$ROOT/arch" -I"$ROOT/src" -I"$ROOT/reference" "$ROOT/perf/sm90/decode_harness.cu" "${xobjs[@]}" \
    -o "$OUT/decode_harness_x"
  grep -h "Used\|spill\|C75" "$OUT"/x_decode.log || true
  echo "built $OUT/decode_harness_x ($EXTRA_VARIANT)"
fi
