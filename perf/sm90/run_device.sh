#!/usr/bin/env bash
# One device call of the sm90 decode development harness, on the lent H200: the correctness
# matrix, the timing table, compute-sanitizer on the small cases, the SASS, ncu. Build the
# harness on the CPU machine first (perf/sm90/build_harness.sh, output build/harness; carry that
# folder to the device), then, on the device, from any directory:
#   OUT=<folder> perf/sm90/run_device.sh
# Logs go under $OUT. STEPS selects (default: check bench memcheck sass; also benchx, racecheck,
# ncu); D names the harness folder (default build/harness of this checkout); REPS the calls
# timed back to back (default 20); XSHAPES the shapes of benchx (build_harness.sh's
# EXTRA_VARIANT binary, decode_harness_x).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
D="${D:-$ROOT/build/harness}"
H=$D/decode_harness
: "${OUT:?set OUT to the folder for the logs}"
STEPS="${STEPS:-check bench memcheck sass}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
for s in $STEPS; do
  case $s in
    check) timeout 300 "$H" check > "$OUT/check.txt" 2>&1; echo "check rc $?"; grep -E "FAIL|failing|exception|error" "$OUT/check.txt" | head -20 ;;
    bench) timeout 300 "$H" bench "${REPS:-20}" > "$OUT/bench.txt" 2>&1; echo "bench rc $?"; cat "$OUT/bench.txt" ;;
    # shellcheck disable=SC2086
    benchx) timeout 300 "$D/decode_harness_x" bench "${REPS:-20}" ${XSHAPES:-} > "$OUT/benchx.txt" 2>&1; echo "benchx rc $?"; cat "$OUT/benchx.txt" ;;
    memcheck) timeout 200 compute-sanitizer --tool memcheck "$H" small > "$OUT/memcheck.txt" 2>&1; echo "memcheck rc $?"; tail -3 "$OUT/memcheck.txt" ;;
    racecheck) timeout 300 compute-sanitizer --tool racecheck --racecheck-report hazard "$H" small > "$OUT/racecheck.txt" 2>&1; echo "racecheck rc $?"; tail -3 "$OUT/racecheck.txt" ;;
    sass) cuobjdump -sass "$D/new_decode.o" > "$OUT/sass.txt" 2>&1; echo "sass rc $? $(wc -l < "$OUT/sass.txt") lines" ;;
    ncu) for sh in 0 3; do
           timeout 200 ncu --clock-control none --kernel-name-base mangled -k regex:_ZN2uq4sm9024decode_partitions \
             --launch-skip 4 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
             --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
             --section InstructionStats --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active" \
             "$H" bench 2 $sh > "$OUT/ncu_$sh.txt" 2>&1; echo "ncu $sh rc $?"
         done
         timeout 100 ncu --clock-control none --kernel-name-base mangled -k regex:_ZN2uq4sm9020decode_reduce \
           --launch-skip 4 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section LaunchStats \
           "$H" bench 2 0 > "$OUT/ncu_reduce.txt" 2>&1; echo "ncu reduce rc $?" ;;
    *) echo "unknown step $s" >&2; exit 2 ;;
  esac
done
