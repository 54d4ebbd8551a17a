#!/bin/bash
# the whole bench with the baselines on the tree as committed (narrow_mma off)
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=.
rm -rf /tmp/pc-full; cp -r /tmp/.prism-cache /tmp/pc-full
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
PRISM_CACHE_DIR=/tmp/pc-full timeout 560 python3 -m bench --systems prism,eager,compile --samples 64 --tag u --out $OUT 2>&1 | grep -v Warning | tail -22
