#!/bin/bash
# Tree of session 44. The bench with every baseline (eager, torch.compile, max-autotune, SDPA where it
# applies), searches carried (out/pc.tgz).
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=. PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
PRISM_CACHE_DIR=/tmp/.prism-cache timeout ${T:-560} python3 -m bench --samples 64 --tag u --out $OUT 2>&1 | grep -v Warning | tail -30
