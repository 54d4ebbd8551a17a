#!/bin/bash
# The tree of session 41 (least-work-first pipeline mapping; carried_copies on). On an H200: the bench with its baselines, then the whole
# GPU suite. On an H100: the GPU suite. Searches carried.
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=. PYTHONUNBUFFERED=1
rm -rf /tmp/pc-suite /tmp/pc-bench; cp -r /tmp/.prism-cache /tmp/pc-suite; cp -r /tmp/.prism-cache /tmp/pc-bench
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
if echo "$G" | grep -q "${BENCH_ON:-H200}"; then
  PRISM_CACHE_DIR=/tmp/pc-bench timeout 290 python3 -m bench --systems prism,eager,compile --samples 64 --tag w --out $OUT 2>&1 | grep -v Warning | tail -20
fi
PRISM_CACHE_DIR=/tmp/pc-suite timeout 240 python3 -m pytest -m gpu -q -rs -n 6 -p no:cacheprovider --durations=15 tests 2>&1 | grep -v Warn | tail -40 | tee $OUT/gpu-tests.log
