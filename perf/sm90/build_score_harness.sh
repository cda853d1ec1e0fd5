#!/bin/bash
# Builds the standalone scorer harness (score_harness.cu) with nvcc, no Kokkos:
#   perf/sm90/build_score_harness.sh [out_dir]      (default build/harness)
# today's scorer from arch/sm90 (sm_90a), the previous one from commit $OLD (sm_90, namespace
# uq renamed uq_old), the float64 reference from reference/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/harness}
OLD=${OLD:-023c211}
NVCC=${NVCC:-nvcc}
mkdir -p "$OUT/old/sm90" "$OUT/old/uq/impl" "$OUT/obj"
for f in $(git -C "$ROOT" ls-tree --name-only "$OLD" arch/sm90/); do
  git -C "$ROOT" show "$OLD:$f" > "$OUT/old/sm90/$(basename "$f")"
done
git -C "$ROOT" show "$OLD:src/uq/error.hpp" > "$OUT/old/uq/error.hpp"
git -C "$ROOT" show "$OLD:src/uq/impl/score_launch.hpp" > "$OUT/old/uq/impl/score_launch.hpp"
FLAGS=(-std=c++17 -O3 -lineinfo)
"$NVCC" "${FLAGS[@]}" -gencode arch=compute_90,code=sm_90 -Duq=uq_old -I"$OUT/old" -I"$ROOT/perf/sm90" \
  -c "$ROOT/perf/sm90/old_scorer.cu" -o "$OUT/obj/old_scorer.o" &
"$NVCC" "${FLAGS[@]}" -gencode arch=compute_90a,code=sm_90a -Xptxas -v -I"$ROOT/arch" -I"$ROOT/src" \
  -c "$ROOT/arch/sm90/score.cu" -o "$OUT/obj/score.o" 2> "$OUT/ptxas_score.txt"
wait
for f in formats nv_keys nv_score; do
  g++ -std=c++17 -O2 -c "$ROOT/reference/$f.cpp" -o "$OUT/obj/ref_$f.o"
done
"$NVCC" "${FLAGS[@]}" -gencode arch=compute_90a,code=sm_90a -I"$ROOT/arch" -I"$ROOT/src" -I"$ROOT/reference" \
  -I"$ROOT/perf/sm90" "$ROOT/perf/sm90/score_harness.cu" "$OUT"/obj/*.o -o "$OUT/score_harness"
echo "built $OUT/score_harness (ptxas: $OUT/ptxas_score.txt)"
