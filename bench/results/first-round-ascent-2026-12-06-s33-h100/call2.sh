#!/bin/bash
# call 2: the benchmark suite's Prism times with and without PRISM_FIRST_ROUND_ASCENT (each its own tuning cache)
tar xzf out/pc.tgz -C /tmp
export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader
for v in A B; do cp -r /tmp/.prism-cache /tmp/pc$v; done
T0=$(date +%s)
PRISM_CACHE_DIR=/tmp/pcA timeout 260 python -m bench --systems prism --samples 64 --tag ascent-off --out $OUT --no-plot 2>&1 | tail -16
echo "off $(( $(date +%s) - T0 )) s"
PRISM_FIRST_ROUND_ASCENT=1 PRISM_CACHE_DIR=/tmp/pcB timeout 260 python -m bench --systems prism --samples 64 --tag ascent-on --out $OUT --no-plot 2>&1 | tail -16
echo "on $(( $(date +%s) - T0 )) s"
