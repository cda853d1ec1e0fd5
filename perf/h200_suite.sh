#!/usr/bin/env bash
# The CUDA suite on a lent H200, from binaries built on the CPU machine (./uq build --kokkos cuda):
# every test program, compute-sanitizer on the bad-data / misaligned / graph tests, then the
# benchmarks. Pack the binaries here with
#   perf/h200_suite.sh pack build/cuda .dev/h200      (-> .dev/h200/bin.tar.xz + the libraries)
# and run on the device, in the checkout's root (wherever it lies there), with
#   perf/h200_suite.sh run .dev/h200 "$OUT" [tests|bench|all]
#   perf/h200_suite.sh ncu .dev/h200 "$OUT"        (ncu of the sm90 kernels, below)
# (bench: the benchmarks only, each program limited to BENCH_SECONDS_<program> or BENCH_SECONDS
# (default 150) seconds, filtered by BENCH_FILTER_<program> when set). Logs and benchmark JSON go to the output folder; the last
# lines printed are the summary.
set -uo pipefail

# The checkout this script belongs to (on the CPU machine when packing, on the device when running).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

pack() {  # build_dir dest
  local build="$1" dest="$2"
  mkdir -p "$dest"
  local files=()
  for f in "$build"/tests/test_* "$build"/perf/bench_* "$build"/src/cli/uq; do
    [ -x "$f" ] && [ -f "$f" ] && files+=("${f#"$build"/}")
  done
  tar -C "$build" -cJf "$dest/bin.tar.xz" "${files[@]}"
  # Google Benchmark is a shared Debian library the device image lacks.
  cp -L /usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian "$dest/"
  # The CLI test programs name the uq program and their fixtures by the absolute paths this build
  # was configured with (tests/CMakeLists.txt: UQ_CLI_PROGRAM, UQ_CLI_FIXTURES); run() recreates
  # them on the device from these two lines.
  printf '%s\n%s\n' "$ROOT" "$(cd "$build" && pwd)" > "$dest/build_paths.txt"
  echo "packed ${#files[@]} programs into $dest ($(du -sh "$dest" | cut -f1))"
}

# The pack's programs, unpacked once into the pack folder.
unpack() {  # pack_dir -> prints the folder
  local pack bin
  pack="$(cd "$1" && pwd)" || exit 1
  bin="$pack/unpacked"
  if [ ! "$bin/.complete" -nt "$pack/bin.tar.xz" ]; then
    rm -rf "$bin" && mkdir -p "$bin" && tar -C "$bin" -xJf "$pack/bin.tar.xz" && touch "$bin/.complete" || exit 1
  fi
  echo "$bin"
}

run() {  # pack_dir out_dir [tests|bench|all]
  local pack="$1" out="$2" what="${3:-all}"
  local bin; bin="$(unpack "$pack")" || exit 1
  export LD_LIBRARY_PATH="$(cd "$pack" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The CLI tests look for the program and their fixtures where the build machine had them: that
  # checkout's path is made to lead to this one, and the program is put at its build path.
  local src build
  { read -r src; read -r build; } < "$pack/build_paths.txt" || exit 1
  if [ "$src" != "$ROOT" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$ROOT" "$src"; fi
  mkdir -p "$build/src/cli" && cp "$bin/src/cli/uq" "$build/src/cli/uq"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  local pass=0 fail=0 failed="" san=0
  if [ "$what" != bench ]; then
  for t in "$bin"/tests/test_*; do
    local name; name=$(basename "$t")
    if "$t" >"$out/$name.log" 2>&1; then pass=$((pass + 1)); else fail=$((fail + 1)); failed="$failed $name"; fi
    echo "$name: $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/$name.log" | tr '\n' ' ')"
  done
  # Sanitizers: the bad-data, misaligned-cache and graph-replay cases of both operations.
  for spec in "test_decode_bad_data:*" "test_sm90_decode:*Bad*:*Misaligned*:*Padded*:*ManyRows*" \
              "test_sm90_score:*Bad*:*bad*" "test_cuda_graph_replay:*Auto*" "test_large_caches:*"; do
    local prog=${spec%%:*} filter=${spec#*:}
    for tool in memcheck racecheck; do
      [ "$tool" = racecheck ] && [ "$prog" = test_large_caches ] && continue
      if compute-sanitizer --tool "$tool" --error-exitcode 99 "$bin/tests/$prog" --gtest_filter="$filter" \
           >"$out/san_${tool}_$prog.log" 2>&1; then
        echo "sanitizer $tool $prog: clean ($(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san_${tool}_$prog.log"))"
      else
        san=$((san + 1)); echo "sanitizer $tool $prog: FAILED (see san_${tool}_$prog.log)"
      fi
    done
  done
  echo "tests: $pass programs passed, $fail failed:$failed; sanitizer failures: $san"
  fi
  [ "$what" = tests ] && return 0
  for b in "$bin"/perf/bench_*; do
    local name; name=$(basename "$b")
    local var="BENCH_FILTER_$name" filter=()
    [ -n "${!var:-}" ] && filter=(--benchmark_filter="${!var}")
    local svar="BENCH_SECONDS_$name"
    timeout "${!svar:-${BENCH_SECONDS:-150}}" "$b" "${filter[@]}" --benchmark_out="$out/$name.json" \
      --benchmark_out_format=json --benchmark_min_time=0.05 >"$out/$name.txt" 2>&1 || echo "$name: exit $?"
    echo "$name: $(grep -c '^[a-z_]*/' "$out/$name.txt") rows"
  done
}

# ncu (clock control off) of the sm90 decode partition kernel at the headline shape and at
# 64 x 131k, and of the sm90 scorer at its two served shapes: the metrics of the journal's ncu
# tables (docs/perf-log/).
ncu_profiles() {  # pack_dir out_dir
  local pack="$1" out="$2"
  local bin; bin="$(unpack "$pack")" || exit 1
  export LD_LIBRARY_PATH="$(cd "$pack" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local metrics="dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active"
  metrics="$metrics,smsp__warps_eligible.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active"
  metrics="$metrics,regex:sm__inst_executed_pipe_(alu|fma|lsu|tensor_op_gmma|xu)\\.avg\\.pct_of_peak_sustained_active"
  metrics="$metrics,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio,smsp__inst_executed.sum,gpu__time_duration.sum"
  local spec prog kernel filter
  for spec in "bench_decode:decode_partitions_kernel:^decode/B4/ctx75000/QG6/Hk1/BS64/" \
              "bench_decode:decode_partitions_kernel:^decode/B64/ctx131072/QG6/Hk1/BS64/" \
              "bench_score:score_kernel:^score/B32/ctx131072/QL4/H1/" \
              "bench_score:score_kernel:^score/B32/ctx131072/QL8/H4/"; do
    IFS=: read -r prog kernel filter <<<"$spec"
    echo "=== $prog $filter ($kernel)" >>"$out/ncu.txt"
    timeout 120 ncu --clock-control none -k "regex:$kernel" --launch-skip 4 --launch-count 1 --metrics "$metrics" \
      "$bin/perf/$prog" --benchmark_filter="$filter" --benchmark_min_time=0.01 >>"$out/ncu.txt" 2>&1 \
      || echo "ncu $prog $filter: exit $?"
  done
  grep -E "^===|dram__throughput|issue_active|warps_eligible|gpu__time_duration" "$out/ncu.txt"
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  ncu) shift; ncu_profiles "$@" ;;
  *) echo "usage: $0 pack BUILD_DIR DEST | run PACK_DIR OUT_DIR" >&2; exit 2 ;;
esac
