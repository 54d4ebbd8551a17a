#!/bin/bash
# call 2 (same machine): stepped copies off / on at the benchmark configurations' prior-picked sizes;
# then the GPU tests of the safe-softmax attentions, which call 1's suite did not reach in its 240 s
[ -d /tmp/.prism-cache ] || tar xzf out/pc.tgz -C /tmp
export PYTHONPATH=. PRISM_CACHE_DIR=/tmp/.prism-cache
T0=$(date +%s)
timeout 250 python3 scripts/gpu_option_ab.py stepped_copies --values False,True --which bench --only rmsnorm_linear_d1024,rmsnorm_linear_d4096,rmsnorm_mlp_n8,swiglu_d1024,swiglu_d4096,gqa_h1024,qknorm_gqa_h2048 --pick prior --sizes 3 --templates 3 --out $OUT/bench-ab.json 2>&1 | tail -12
echo "ab $(( $(date +%s) - T0 )) s"
timeout 230 python3 -m pytest -m gpu -q -rs -p no:cacheprovider -n 4 tests -k "safe" > $OUT/gpu-tests-safe.log 2>&1
echo "tests rc $? $(( $(date +%s) - T0 )) s"; grep -E "passed|failed|SKIPPED|FAILED|Error" $OUT/gpu-tests-safe.log | tail -12
