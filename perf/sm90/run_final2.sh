#!/usr/bin/env bash
# The device call that the committed state of branch sm90-decode2 still needs (from the
# repository root, with $D carried: decode_harness, decode_harness_main = main's harness,
# test_sm90_decode, test_sm90_launch_checks). sm90-decode2 final device call: correctness (harness matrix, test_sm90_decode, launch checks),
# timings (new, and main's kernel on two shapes), sanitizers, ncu of headline and 64 x 131k.
set -u
D=${D:-.dev/sm90-decode2}
H=$D/decode_harness
T=$OUT/tests.txt
NCU_METRICS="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:sm__inst_executed_pipe_(alu|fma|fmaheavy|lsu|tensor_op_gmma|xu)\.avg\.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_eligible.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
date -u
timeout 40 $H check > $T 2>&1; echo "harness check rc $?"; tail -1 $T
timeout 150 $D/test_sm90_decode >> $T 2>&1; echo "test_sm90_decode rc $?"; grep -E "^\[  (PASSED|FAILED)" $T
timeout 30 $D/test_sm90_launch_checks >> $T 2>&1; echo "test_sm90_launch_checks rc $?"; tail -1 $T
timeout 100 $H bench 20 > $OUT/bench.txt 2>&1; echo "bench rc $?"; grep -v "^device" $OUT/bench.txt
timeout 40 $D/decode_harness_main bench 20 0,3 > $OUT/bench_main.txt 2>&1; echo "bench main rc $?"; grep -v "^device\|^shape" $OUT/bench_main.txt
timeout 60 compute-sanitizer --tool memcheck $H small > $OUT/sanitizer.txt 2>&1; echo "memcheck rc $?"; tail -2 $OUT/sanitizer.txt
timeout 90 compute-sanitizer --tool racecheck $H small >> $OUT/sanitizer.txt 2>&1; echo "racecheck rc $?"; tail -2 $OUT/sanitizer.txt
for sh in 0 3; do
  timeout 45 ncu --clock-control none --kernel-name-base mangled -k regex:_ZN2uq4sm9024decode_partitions \
    --launch-skip 4 --launch-count 1 --section SpeedOfLight --metrics "$NCU_METRICS" $H bench 2 $sh >> $OUT/ncu.txt 2>&1; echo "ncu $sh rc $?"
done
