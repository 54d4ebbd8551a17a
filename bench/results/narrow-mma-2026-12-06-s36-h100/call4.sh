#!/bin/bash
# the GPU suite on the tree as committed, searches carried, after the tuner's pick for the 1024-row GEMM
# (paired blocks); on an H200 the bench with baselines first
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=.
rm -rf /tmp/pc-suite /tmp/pc-bench; cp -r /tmp/.prism-cache /tmp/pc-suite; cp -r /tmp/.prism-cache /tmp/pc-bench
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
if echo "$G" | grep -q H200; then
  PRISM_CACHE_DIR=/tmp/pc-bench timeout 300 python3 -m bench --systems prism,eager,compile --samples 64 --tag v --out $OUT 2>&1 | grep -v Warning | tail -20
fi
PRISM_CACHE_DIR=/tmp/pc-suite timeout 70 python3 scripts/gemm_probe.py --which prefill --only norm_matmul_silu --groups norm_matmul_silu.p1 --budget 20 --out $OUT/nms_tuned.json 2>&1 | grep -v Warning | tail -6
PRISM_CACHE_DIR=/tmp/pc-suite timeout 170 python3 -m pytest -m gpu -q -rs -n 4 -p no:cacheprovider tests 2>&1 | tail -25 | tee $OUT/gpu-tests.log
