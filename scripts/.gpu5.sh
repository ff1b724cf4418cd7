set +e
export PATH=$PATH:/usr/local/cuda/bin
cd build/model-gpu
for m in t_gather t_conv t_slice t_norms; do
  echo "== $m"
  timeout 60 ./${m}_gpu --random 0 -o out_$m; echo "rc=$?"
  python3 -c "
import numpy as np
g=np.load('out_$m/out0.npy'); c=np.load('expected_$m/out0.npy')
print('rel err vs CPU', float(np.linalg.norm(g-c)/np.linalg.norm(c)))" 2>&1 | tail -1
done
echo "== sanitizer, model"
timeout 200 compute-sanitizer --tool memcheck --print-limit 3 ./model_gpu --random 2 -o out_san 2>&1 | head -60
