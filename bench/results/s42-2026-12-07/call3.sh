#!/bin/bash
# One part (PART of PARTS, default 0 of 3) of the prefill zoo through prism.superoptimize beside eager
# and torch.compile, searches carried (out/pc.tgz).
tar xzf out/pc.tgz -C .; nvidia-smi --query-gpu=name --format=csv,noheader
ONLY=$(PYTHONPATH=. python3 -c "from bench.zoo import ZOO; n=[k for k,p in ZOO.items() if p.prefill is not None]; print(','.join(n[${PART:-0}::${PARTS:-3}]))")
TESTS=0 T=${T:-540} SAMPLES=8 bash scripts/gpu_zoo.sh prefill prism,eager,compile "$ONLY"
