#!/bin/bash
# narrow_mma A/B on the four small GEMV configurations (each tree its own caches), then the paired GPU test
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=.
cp -r /tmp/.prism-cache /tmp/pc-base; cp -r /tmp/.prism-cache /tmp/pc-narrow
mkdir -p /tmp/narrow && cp -r prism /tmp/narrow/ && sed -i 's/    narrow_mma: bool = False/    narrow_mma: bool = True/' /tmp/narrow/prism/codegen/lowered.py
grep -n "narrow_mma: bool" /tmp/narrow/prism/codegen/lowered.py prism/codegen/lowered.py
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
C=rmsnorm_linear_d1024,rmsnorm_mlp_n8,rmsnorm_mlp_n16,swiglu_d1024,rmsnorm_linear_d4096
for round in 1 2; do
PRISM_CACHE_DIR=/tmp/pc-base timeout 130 python3 -m bench --configs $C --systems prism --samples 64 --tag base$round --out $OUT --no-plot 2>&1 | grep -v Warning | tail -14
PRISM_CACHE_DIR=/tmp/pc-narrow PYTHONPATH=/tmp/narrow:. timeout 130 python3 -m bench --configs $C --systems prism --samples 64 --tag narrow$round --out $OUT --no-plot 2>&1 | grep -v Warning | tail -14
done
PRISM_CACHE_DIR=/tmp/pc-base timeout 60 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_main_loop_gpu.py 2>&1 | tail -5
