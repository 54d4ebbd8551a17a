#!/bin/bash
# the GPU suite (the carried-copies GEMMs among it), then on an H100 the decode zoo, on an H200 the bench
# if call 1 ran on an H100. Searches carried.
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=. PYTHONUNBUFFERED=1
rm -rf /tmp/pc-suite /tmp/pc-bench; cp -r /tmp/.prism-cache /tmp/pc-suite; cp -r /tmp/.prism-cache /tmp/pc-bench
G=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$G"
PRISM_CACHE_DIR=/tmp/pc-suite timeout 150 python3 -m pytest -m gpu -q -rs -n 4 -p no:cacheprovider tests 2>&1 | tail -25 | tee $OUT/gpu-tests.log
if echo "$G" | grep -q H200; then
  PRISM_CACHE_DIR=/tmp/pc-bench timeout 290 python3 -m bench --systems prism,eager,compile --samples 64 --tag v --out $OUT 2>&1 | grep -v Warning | tail -20
else
  PRISM_CACHE_DIR=/tmp/pc-bench timeout 300 python3 -m bench.zoo_bench --which decode --systems prism,eager,compile --only '' --samples 8 --out $OUT/zoo-decode.json > $OUT/zoo-decode.log 2>&1
  grep -v "^INFO" $OUT/zoo-decode.log | tail -8
fi
