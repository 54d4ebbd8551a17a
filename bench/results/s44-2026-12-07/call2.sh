#!/bin/bash
# Tree of session 44. The timing-order probe, then five prefill zoo programs through superoptimize
# (compare now rotates its timing order) beside eager and torch.compile; searches carried.
tar xzf out/pc.tgz -C .; nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=. timeout 150 python3 bench/results/s44-2026-12-07/order_probe.py 2>&1 | tee $OUT/order_probe.log | tail -3
ONLY=${ONLY:-sum_of_matmuls,norm_two_proj,softplus_proj,mlp_silu,matmul_residual}
TESTS=0 T=${T:-400} SAMPLES=8 bash scripts/gpu_zoo.sh prefill prism,eager,compile "$ONLY"
