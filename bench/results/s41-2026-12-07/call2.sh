#!/bin/bash
# One half (PART=0 or 1) of the decode zoo through prism.superoptimize beside eager and torch.compile,
# searches carried (out/pc.tgz).
tar xzf out/pc.tgz -C .; nvidia-smi --query-gpu=name --format=csv,noheader
ONLY=$(PYTHONPATH=. python3 -c "from bench.zoo import ZOO; n=[k for k,p in ZOO.items() if p.decode is not None]; print(','.join(n[${PART:-0}::2]))")
TESTS=0 T=${T:-540} SAMPLES=8 bash scripts/gpu_zoo.sh decode prism,eager,compile "$ONLY"
