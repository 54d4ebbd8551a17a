#!/bin/bash
# call 4: the benchmark suite's Prism times with stepped copies (this tree) and without (out/off: a copy
# of prism/ with the option's default False), each with its own tuning cache
tar xzf out/pc.tgz -C /tmp
nvidia-smi --query-gpu=name --format=csv,noheader
for v in A B; do cp -r /tmp/.prism-cache /tmp/pc$v; done
T0=$(date +%s)
PYTHONPATH=. PRISM_CACHE_DIR=/tmp/pcA timeout 170 python -m bench --systems prism --samples 32 --tag stepped-on --out $OUT --no-plot 2>&1 | tail -14
echo "on $(( $(date +%s) - T0 )) s"
(cd out/off && PYTHONPATH=. PRISM_CACHE_DIR=/tmp/pcB timeout 170 python -m bench --systems prism --samples 32 --tag stepped-off --out $OUT --no-plot 2>&1 | tail -14)
echo "off $(( $(date +%s) - T0 )) s"
