set +e
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L
( time timeout 240 python3 test/Integration/CUDA/run_cases.py build/cuda-cases --log $OUT/cases.log ) > $OUT/cases.out 2>&1
grep -E "FAIL|passed" $OUT/cases.out | tail -8
cd build/model-gpu
{
for m in model block; do
  echo "== $m (GPU vs the CPU executable, --random 0)"
  timeout 120 ./${m}_gpu --random 0 -o out_$m; echo "rc=$?"
  python3 -c "
import numpy as np
g=np.load('out_$m/out0.npy'); c=np.load('expected_$m/out0.npy')
print('shape', g.shape, 'finite', bool(np.isfinite(g).all()), 'rel err vs CPU', float(np.linalg.norm(g-c)/np.linalg.norm(c)))"
  timeout 120 ./${m}_gpu --random 1 --bench 20
done
echo "== model d_model 1024, T 2048 (18 KDA + 6 LinSimp layers)"
timeout 200 ./model_1024_gpu --random 0 -o out_1024; echo "rc=$?"
python3 -c "
import numpy as np
g=np.load('out_1024/out0.npy'); print('shape', g.shape, 'finite', bool(np.isfinite(g).all()), 'mean |logit|', float(np.abs(g).mean()))"
timeout 200 ./model_1024_gpu --random 1 --bench 3
echo "== sanitizer memcheck on the small model"
timeout 200 compute-sanitizer --tool memcheck ./model_gpu --random 2 -o out_san 2>&1 | tail -3
} > $OUT/model.out 2>&1
cat $OUT/model.out
