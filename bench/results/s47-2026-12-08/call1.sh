#!/bin/bash
# Tree of session 47 (= session 46's kernels and interleaved timing). The GPU tests of the timing change,
# then the ten-configuration bench with every baseline, each configuration's systems timed together:
# an A/B of the protocol against run u (same kernels) on an H100, the H200 bench where an H200 comes.
tar xzf out/pc.tgz -C .; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
export PYTHONPATH=. PYTHONUNBUFFERED=1 PRISM_CACHE_DIR=$PWD/.prism-cache
timeout ${TT:-120} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_tune_timing.py tests/test_bench.py \
  tests/test_inductor_gpu.py "tests/test_capture_torch.py::test_the_default_capture_compares_regions_and_the_whole_graph_on_the_gpu" \
  > $OUT/gpu_tests.log 2>&1; tail -4 $OUT/gpu_tests.log
timeout ${TB:-440} python3 -m bench --samples 64 --tag v --out $OUT 2>&1 | grep -v Warning | tail -18
