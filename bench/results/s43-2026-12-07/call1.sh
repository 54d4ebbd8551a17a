#!/bin/bash
# Tree of session 43. The bench with every baseline (eager, torch.compile, max-autotune, SDPA where it
# applies), searches carried (out/pc.tgz); then the GPU tests of PyTorch's kernels as candidates.
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=. PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
PRISM_CACHE_DIR=/tmp/.prism-cache timeout ${T:-500} python3 -m bench --samples 64 --tag t --out $OUT 2>&1 | grep -v Warning | tail -30
timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_inductor_gpu.py 2>&1 | tail -3
