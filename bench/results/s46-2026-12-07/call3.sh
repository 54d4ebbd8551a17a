#!/bin/bash
# Tree of session 46 (interleaved timing). The GPU tests of the timing change, five prefill zoo programs
# (as s44's call2) with each entry's systems timed together, then the ten-configuration bench with every
# baseline, likewise: the same kernels as run u, so the two runs compare the protocols. Searches carried.
tar xzf out/pc.tgz -C .; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
export PYTHONPATH=. PYTHONUNBUFFERED=1 PRISM_CACHE_DIR=$PWD/.prism-cache
timeout ${TT:-200} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_tune_timing.py tests/test_bench.py \
  tests/test_inductor_gpu.py "tests/test_capture_torch.py::test_the_default_capture_compares_regions_and_the_whole_graph_on_the_gpu" \
  > $OUT/gpu_tests.log 2>&1; tail -4 $OUT/gpu_tests.log
ONLY=${ONLY:-sum_of_matmuls,norm_two_proj,softplus_proj,mlp_silu,matmul_residual}
TESTS=0 T=${TZ:-170} SAMPLES=8 bash scripts/gpu_zoo.sh prefill prism,eager,compile "$ONLY" | tail -14
timeout ${TB:-300} python3 -m bench --samples 64 --tag v --out $OUT 2>&1 | grep -v Warning | tail -18
