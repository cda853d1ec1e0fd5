#!/usr/bin/env bash
# One command for the owner of an AMD MI355X (gfx950) with ROCm: build uq with its gfx950 path
# as docs/AMD.md says, prove it correct on the GPU first, then measure it and set the
# measurements beside the performance model's predictions (PASS within 0.7-1.5x of the model at
# 6.6 TB/s, INVESTIGATE outside). Nothing of this has run anywhere yet: the project has no AMD
# GPU. CI runs it with --dry-run (prints every command, runs none) and shellcheck.
#
#   perf/mi355x_suite.sh [--dry-run] [--out DIR] [--build DIR]
#
# Environment: KOKKOS_ROOT (a Kokkos HIP install, docs/AMD.md step 1; without it the script
# builds one from KOKKOS_SRC, a Kokkos >= 5.1 source tree (the first to know AMD_GFX950; it
# needs C++20), into DIR/kokkos-install), ROCM_PATH
# (default /opt/rocm), UQ_GFX950_CLANG (clang >= 22 for the kernels; default ROCm's clang++),
# BENCH_MIN_TIME (Google Benchmark --benchmark_min_time, default 0.2).
#
# Output folder (default build-mi355x/suite): ctest.log, bench_decode.json, bench_score.json,
# rocprof/ (counters, when rocprofv3 is installed), compare.md (measured vs model). The last
# lines printed are the summary.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DRY=0
BUILD="$ROOT/build-mi355x"
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1; shift ;;
    --out) OUT="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "mi355x_suite: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
OUT="${OUT:-$BUILD/suite}"
ROCM="${ROCM_PATH:-/opt/rocm}"
CLANG="${UQ_GFX950_CLANG:-$ROCM/llvm/bin/clang++}"
MIN_TIME="${BENCH_MIN_TIME:-0.2}"
# The model's predictions for this revision of the kernels (./uq model --json writes them).
MODEL_JSON="$ROOT/docs/perf-log/2026-12-05-gfx950-speed/3-partition-rule.json"
# The shapes the model predicts (perf/gfx950_model.py DECODE_SHAPES, SCORE_SHAPES).
DECODE_FILTER='^decode/(B4/ctx75000|B16/ctx131072|B1/ctx131072)/QG6/Hk1/BS64'
SCORE_FILTER='^score/B32/ctx131072/(QL4/H1|QL8/H4)'
# rocprofv3 counters wanted (kept where --list-avail has them): instructions by unit and the
# LDS bank conflicts, per kernel dispatch.
COUNTERS=(SQ_WAVES SQ_INSTS_VALU SQ_INSTS_MFMA SQ_INSTS_LDS SQ_INSTS_VMEM_RD SQ_INSTS_SALU
          SQ_LDS_BANK_CONFLICT SQ_LDS_IDX_ACTIVE SQ_WAIT_INST_ANY SQ_BUSY_CYCLES)

say() { printf '[mi355x] %s\n' "$*"; }
run() {  # prints the command; runs it unless --dry-run
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  if [ "$DRY" -eq 0 ]; then "$@"; fi
}

say "uq MI355X suite: build, correctness, benchmarks, counters, model comparison$([ "$DRY" -eq 1 ] && echo ' (dry run: nothing runs)')"
run mkdir -p "$OUT"

# ---- 0. the device
if [ "$DRY" -eq 0 ]; then
  if ! "$ROCM/bin/rocminfo" 2>/dev/null | grep -q gfx950; then
    echo "mi355x_suite: no gfx950 device found by $ROCM/bin/rocminfo" >&2
    exit 2
  fi
fi
run "$ROCM/bin/rocminfo"

# ---- 1. Kokkos with HIP (docs/AMD.md step 1), unless given
if [ -z "${KOKKOS_ROOT:-}" ]; then
  KOKKOS_SRC="${KOKKOS_SRC:-$BUILD/kokkos-src}"
  KOKKOS_ROOT="$BUILD/kokkos-install"
  say "no KOKKOS_ROOT: building Kokkos from $KOKKOS_SRC (docs/AMD.md, step 1)"
  run cmake -S "$KOKKOS_SRC" -B "$BUILD/kokkos-build" -DCMAKE_CXX_COMPILER="$ROCM/bin/hipcc" \
    -DCMAKE_CXX_STANDARD=20 -DKokkos_ENABLE_HIP=ON -DKokkos_ARCH_AMD_GFX950=ON \
    -DCMAKE_INSTALL_PREFIX="$KOKKOS_ROOT"
  run cmake --build "$BUILD/kokkos-build" -j
  run cmake --install "$BUILD/kokkos-build"
fi

# ---- 2. uq with the gfx950 path, tests and benchmarks (docs/AMD.md step 2)
run cmake -S "$ROOT" -B "$BUILD/uq" -DCMAKE_CXX_COMPILER="$ROCM/bin/hipcc" -DKokkos_ROOT="$KOKKOS_ROOT" \
  -DUQ_BUILD_GFX950=ON -DUQ_GFX950_CLANG="$CLANG" -DUQ_HIP_INCLUDE_DIR="$ROCM/include" \
  -DUQ_HIP_LIBRARY="$ROCM/lib/libamdhip64.so" -DUQ_BUILD_TESTS=ON -DUQ_BUILD_BENCH=ON -DUQ_BUILD_CLI=ON
run cmake --build "$BUILD/uq" -j

# ---- 3. correctness first: the gfx950 path against the float64 reference, then everything
say "correctness: the decode and index-scorer test programs (Path::Gfx950 on this device), then all"
run ctest --test-dir "$BUILD/uq" --output-on-failure -R '(Decode|decode|Score|score|Backend|backend)' \
  --output-log "$OUT/ctest_gfx950.log"
run ctest --test-dir "$BUILD/uq" --output-on-failure --output-log "$OUT/ctest.log"

# ---- 4. benchmarks: the modelled shapes, JSON (cold-cache rotation over 1 GiB on HIP:
# perf/bench_support.hpp; the copy-bandwidth roofline of the same process in copy_GB/s)
run "$BUILD/uq/perf/bench_decode" --benchmark_filter="$DECODE_FILTER" --benchmark_min_time="$MIN_TIME" \
  --benchmark_out="$OUT/bench_decode.json" --benchmark_out_format=json
run "$BUILD/uq/perf/bench_score" --benchmark_filter="$SCORE_FILTER" --benchmark_min_time="$MIN_TIME" \
  --benchmark_out="$OUT/bench_score.json" --benchmark_out_format=json

# ---- 5. counters, where rocprofv3 is installed (names checked against --list-avail)
if [ "$DRY" -eq 1 ] || command -v rocprofv3 >/dev/null 2>&1; then
  have=("${COUNTERS[@]}")
  if [ "$DRY" -eq 0 ]; then
    avail=$(rocprofv3 --list-avail 2>/dev/null || true)
    have=()
    for c in "${COUNTERS[@]}"; do
      if grep -qw "$c" <<<"$avail"; then have+=("$c"); else say "counter $c not available: skipped"; fi
    done
  fi
  if [ "${#have[@]}" -gt 0 ]; then
    run rocprofv3 --kernel-trace --pmc "${have[@]}" -d "$OUT/rocprof" -o decode --output-format csv -- \
      "$BUILD/uq/perf/bench_decode" --benchmark_filter="$DECODE_FILTER" --benchmark_min_time=0.01
  fi
else
  say "rocprofv3 not installed: no counters"
fi

# ---- 6. measured against the model
run python3 "$ROOT/perf/gfx950_compare.py" --model "$MODEL_JSON" --bandwidth 6.6 \
  --bench "$OUT/bench_decode.json" "$OUT/bench_score.json"
if [ "$DRY" -eq 0 ]; then
  python3 "$ROOT/perf/gfx950_compare.py" --model "$MODEL_JSON" --bandwidth 6.6 \
    --bench "$OUT/bench_decode.json" "$OUT/bench_score.json" >"$OUT/compare.md"
  say "results in $OUT: ctest logs, bench_*.json, rocprof/, compare.md"
  cat "$OUT/compare.md"
else
  say "dry run done: the commands above are what an MI355X run executes"
fi
