#!/bin/bash
# Options.carried_copies A/B on the generated GEMM (matmul_residual.p0, template 2, four tiles, two rounds)
# and on the benchmark programs' GEMV kernels; on an H200 the bench with its baselines between them, on an
# H100 the GPU suite after them. Searches carried (the whole zoo cached, out/pc.tgz).
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=. PYTHONUNBUFFERED=1
rm -rf /tmp/pc-suite /tmp/pc-bench; cp -r /tmp/.prism-cache /tmp/pc-suite; cp -r /tmp/.prism-cache /tmp/pc-bench
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
S='[{"k0_x": 4, "k0_y": 64, "k0_i": 64}, {"k0_x": 4, "k0_y": 32, "k0_i": 64}, {"k0_x": 8, "k0_y": 32, "k0_i": 64}, {"k0_x": 4, "k0_y": 64, "k0_i": 32}]'
for r in 1 2; do for o in '{}' '{"carried_copies": true}'; do
  PRISM_CACHE_DIR=/tmp/.prism-cache timeout 45 python3 scripts/gemm_probe.py --which prefill --at "matmul_residual.p0:2:$S" --launches 1 --options "$o" 2>&1 | grep '^{' | tee -a $OUT/gemm-carried.jsonl
done; done
if echo "$G" | grep -q H200; then
  PRISM_CACHE_DIR=/tmp/pc-bench timeout 290 python3 -m bench --systems prism,eager,compile --samples 64 --tag v --out $OUT 2>&1 | grep -v Warning | tail -20
fi
PRISM_CACHE_DIR=/tmp/.prism-cache timeout 110 python3 scripts/gpu_option_ab.py carried_copies --values False,True --which bench --only rmsnorm_linear_d1024,rmsnorm_linear_d4096,rmsnorm_mlp_n8,swiglu_d4096 --pick prior --sizes 2 --templates 3 --out $OUT/bench-ab.json 2>&1 | grep -v Warning | tail -8
if ! echo "$G" | grep -q H200; then
  PRISM_CACHE_DIR=/tmp/pc-suite timeout 150 python3 -m pytest -m gpu -q -rs -n 4 -p no:cacheprovider tests 2>&1 | tail -25 | tee $OUT/gpu-tests.log
fi
