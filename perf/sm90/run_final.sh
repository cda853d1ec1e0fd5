#!/usr/bin/env bash
# The final device call of issue 15 (from the repository root, .dev/sm90-decode carried): the
# sm90 tests, the harness table, the decode benchmarks with SOL counters, ncu of the headline and
# 64 x 131k, compute-sanitizer, the SASS. At most 8 files come back: logs are grouped.
set -u
D=.dev/sm90-decode
H=$D/decode_harness
S=$OUT/summary.txt
NCU_METRICS="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:sm__inst_executed_pipe_(alu|fma|fmaheavy|lsu|tensor_op_gmma|xu)\.avg\.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_eligible.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > $S
date -u >> $S
timeout 30 $H check > $OUT/test_sm90_decode.txt 2>&1; echo "harness check rc $?" | tee -a $S
timeout 150 $D/test_sm90_decode >> $OUT/test_sm90_decode.txt 2>&1; echo "test_sm90_decode rc $?" | tee -a $S
grep -E "^\[  (PASSED|FAILED)|FAILED|sm90 vs generic" $OUT/test_sm90_decode.txt | head -30 | tee -a $S
timeout 30 $D/test_sm90_launch_checks >> $S 2>&1; echo "test_sm90_launch_checks rc $?" | tee -a $S
timeout 60 $H bench 20 > $OUT/bench.txt 2>&1; echo "harness bench rc $?" | tee -a $S; cat $OUT/bench.txt
timeout 90 $D/bench_decode --benchmark_filter='^decode/|^decode_generic/B4/ctx75000|^decode_generic/B64/ctx131072|^decode_(partitions|reduce)/' --benchmark_min_time=0.05 \
  --benchmark_out=$OUT/bench_decode.json --benchmark_out_format=json > $OUT/bench_decode.txt 2>&1
echo "bench_decode rc $?" | tee -a $S
for sh in 0 3; do
  timeout 45 ncu --clock-control none --kernel-name-base mangled -k regex:_ZN2uq4sm9024decode_partitions \
    --launch-skip 4 --launch-count 1 --section SpeedOfLight --section LaunchStats --section Occupancy \
    --metrics "$NCU_METRICS" $H bench 2 $sh >> $OUT/ncu.txt 2>&1; echo "ncu $sh rc $?" | tee -a $S
done
timeout 30 ncu --clock-control none --kernel-name-base mangled -k regex:_ZN2uq4sm9020decode_reduce \
  --launch-skip 4 --launch-count 1 --section SpeedOfLight --metrics "$NCU_METRICS" $H bench 2 0 >> $OUT/ncu.txt 2>&1
timeout 45 compute-sanitizer --tool memcheck $H small > $OUT/sanitizer.txt 2>&1; echo "memcheck harness rc $?" | tee -a $S
tail -2 $OUT/sanitizer.txt | tee -a $S
timeout 45 compute-sanitizer --tool racecheck $H small >> $OUT/sanitizer.txt 2>&1; echo "racecheck harness rc $?" | tee -a $S
tail -2 $OUT/sanitizer.txt | tee -a $S
cuobjdump -sass $D/new_decode.o > $OUT/sass.txt 2>&1; echo "sass rc $?" | tee -a $S
