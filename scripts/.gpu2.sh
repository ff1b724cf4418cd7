set +e
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L
( time timeout 240 python3 test/Integration/CUDA/run_cases.py build/cuda-cases --log $OUT/cases.log ) > $OUT/cases.out 2>&1
grep -E "FAIL|passed" $OUT/cases.out | tail -8
( time timeout 120 python3 bench/linsimp_bench.py run build/linsimp-bench ) > $OUT/linsimp_bench.out 2>&1
tail -6 $OUT/linsimp_bench.out
( time timeout 300 python3 bench/gpu_bench.py run build/gpu-bench ) > $OUT/bench.out 2>&1
tail -9 $OUT/bench.out
for c in linsimp-state-segmented linsimp-T100-c16-W20 linsimp-bf16; do
  for tool in memcheck racecheck; do
    echo "== $tool $c"
    timeout 100 compute-sanitizer --tool $tool python3 test/Integration/CUDA/run_cases.py build/cuda-cases --only $c 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|FAIL|Error" | head -5
  done
done > $OUT/sanitizer.out 2>&1
cat $OUT/sanitizer.out
