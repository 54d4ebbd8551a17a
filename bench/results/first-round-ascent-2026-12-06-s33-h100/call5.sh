#!/bin/bash
# call 5: the GPU test suite with the carried searches (4 workers)
tar xzf out/pc.tgz -C /tmp
export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader
T0=$(date +%s)
if python3 -c "import xdist" 2>/dev/null; then N="-n 4"; else N=""; fi
PRISM_CACHE_DIR=/tmp/.prism-cache timeout 200 python3 -m pytest -m gpu -q -rs -p no:cacheprovider $N tests > $OUT/gpu-tests.log 2>&1
echo "tests rc $? $(( $(date +%s) - T0 )) s"; grep -E "passed|failed|SKIPPED|FAILED|Error" $OUT/gpu-tests.log | tail -40
