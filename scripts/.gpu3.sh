set +e
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L
( time timeout 240 python3 test/Integration/CUDA/run_cases.py build/cuda-cases --log $OUT/cases.log ) > $OUT/cases.out 2>&1
grep -E "FAIL|passed" $OUT/cases.out | tail -8
( time timeout 200 python3 bench/kda_bench.py run build/kda-bench ) > $OUT/kda_bench.out 2>&1
tail -4 $OUT/kda_bench.out
for c in kda-state-segmented kda-packed kda-bf16; do
  for tool in memcheck racecheck; do
    echo "== $tool $c"
    timeout 100 compute-sanitizer --tool $tool python3 test/Integration/CUDA/run_cases.py build/cuda-cases --only $c 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|FAIL|Error" | head -5
  done
done > $OUT/sanitizer.out 2>&1
cat $OUT/sanitizer.out
