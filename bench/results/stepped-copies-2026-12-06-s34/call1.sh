#!/bin/bash
# call 1: the GPU suite with stepped copies on (the default) and the carried searches (now with gqa_safe
# and qknorm_gqa_safe); then stepped copies off / on: a GEMM's fixed sizes and the benchmark
# configurations' prior-picked sizes, each kernel checked against float64 and graph-timed
tar xzf out/pc.tgz -C /tmp
export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader
T0=$(date +%s)
if python3 -c "import xdist" 2>/dev/null; then N="-n 4"; else N=""; fi
PRISM_CACHE_DIR=/tmp/.prism-cache timeout 240 python3 -m pytest -m gpu -q -rs -p no:cacheprovider $N tests > $OUT/gpu-tests.log 2>&1
echo "tests rc $? $(( $(date +%s) - T0 )) s"; grep -E "passed|failed|SKIPPED|FAILED|Error" $OUT/gpu-tests.log | tail -20
export PRISM_CACHE_DIR=/tmp/.prism-cache
S='[{"k0_x": 4, "k0_y": 64, "k0_i": 64}, {"k0_x": 4, "k0_y": 32, "k0_i": 64}, {"k0_x": 8, "k0_y": 32, "k0_i": 64}, {"k0_x": 4, "k0_y": 64, "k0_i": 32}]'
for o in '{"stepped_copies": false}' '{}' '{"stepped_copies": false}' '{}'; do
  timeout 60 python3 scripts/gemm_probe.py --which prefill --at "matmul_residual.p0:2:$S" --options "$o" 2>&1 | grep '"us"' >> $OUT/gemm-ab.jsonl
done
echo "gemm $(( $(date +%s) - T0 )) s"; python3 -c "
import json
for l in open('$OUT/gemm-ab.jsonl'): r=json.loads(l); print(r['sizes'], r['options'], round(r['us'],2), round(r['rel_err'],5))"
timeout 200 python3 scripts/gpu_option_ab.py stepped_copies --values False,True --which bench --pick prior --sizes 3 --templates 3 --out $OUT/bench-ab.json 2>&1 | tail -14
echo "total $(( $(date +%s) - T0 )) s"
