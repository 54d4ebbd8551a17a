#!/bin/bash
# first: a probe of the GEMM refill at carried per-copy pointers (out/probe, not committed: a hand edit of
# one generated kernel); then on an H200 the bench with its baselines and the GPU suite, on an H100 the
# GPU suite and the decode zoo. Searches carried (the whole zoo cached, out/pc.tgz).
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=. PYTHONUNBUFFERED=1
rm -rf /tmp/pc-suite /tmp/pc-bench; cp -r /tmp/.prism-cache /tmp/pc-suite; cp -r /tmp/.prism-cache /tmp/pc-bench
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
PRISM_CACHE_DIR=/tmp/.prism-cache timeout 120 python3 out/probe/carried.py 2>&1 | grep -v Warning | tee $OUT/carried.jsonl | tail -12
if echo "$G" | grep -q H200; then
  PRISM_CACHE_DIR=/tmp/pc-bench timeout 295 python3 -m bench --systems prism,eager,compile --samples 64 --tag v --out $OUT 2>&1 | grep -v Warning | tail -20
fi
PRISM_CACHE_DIR=/tmp/pc-suite timeout 130 python3 -m pytest -m gpu -q -rs -n 4 -p no:cacheprovider tests 2>&1 | tail -25 | tee $OUT/gpu-tests.log
if ! echo "$G" | grep -q H200; then
  PRISM_CACHE_DIR=/tmp/pc-bench timeout 200 python3 -m bench.zoo_bench --which decode --systems prism,eager,compile --only '' --samples 8 --out $OUT/zoo-decode.json > $OUT/zoo-decode.log 2>&1
  grep -v "^INFO" $OUT/zoo-decode.log | tail -8
fi
