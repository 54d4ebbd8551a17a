#!/bin/bash
# Five prefill zoo programs (as session 44's call 2), each entry's systems timed together. Searches carried.
tar xzf out/pc.tgz -C .; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
export PYTHONPATH=. PYTHONUNBUFFERED=1 PRISM_CACHE_DIR=$PWD/.prism-cache
ONLY=${ONLY:-sum_of_matmuls,norm_two_proj,softplus_proj,mlp_silu,matmul_residual}
TESTS=0 T=${TZ:-300} SAMPLES=8 bash scripts/gpu_zoo.sh prefill prism,eager,compile "$ONLY" | tail -14
