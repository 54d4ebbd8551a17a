#!/bin/bash
# what is left of the device time: on an H200 the bench with its baselines only; on an H100 the GPU suite
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=. PYTHONUNBUFFERED=1
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
if echo "$G" | grep -q H200; then
  PRISM_CACHE_DIR=/tmp/.prism-cache timeout 300 python3 -m bench --systems prism,eager,compile --samples 64 --tag v --out $OUT 2>&1 | grep -v Warning | tail -20
else
  PRISM_CACHE_DIR=/tmp/.prism-cache timeout 150 python3 -m pytest -m gpu -q -rs -n 4 -p no:cacheprovider tests 2>&1 | tail -25 | tee $OUT/gpu-tests.log
fi
