#!/bin/bash
# with Options.carried_copies on by default (GEMM tiles): the GPU tests of generated GEMMs and plans, then the
# 1,024-row GEMM tuned with the defaults. Searches carried (out/pc.tgz).
export PYTHONPATH=. PYTHONUNBUFFERED=1; tar xzf out/pc.tgz -C /tmp; cp -r /tmp/.prism-cache /tmp/pc-suite
PRISM_CACHE_DIR=/tmp/pc-suite timeout 150 python3 -m pytest -m gpu -q -rs -n 4 -p no:cacheprovider tests/test_main_loop_gpu.py \
  tests/test_fold_gpu.py tests/test_superoptimize_gpu.py tests/test_tune_gpu.py tests/test_split_pipeline_gpu.py \
  tests/test_tails_gpu.py tests/test_half_operands.py 2>&1 | grep -v Warn | tail -8 | tee $OUT/gpu-tests-gemm.log
PRISM_CACHE_DIR=/tmp/.prism-cache timeout 50 python3 scripts/gemm_probe.py --which prefill --only norm_matmul_silu \
  --groups norm_matmul_silu.p1 --budget 25 --samples 24 2>&1 | grep '^{\|ceiling' | tee $OUT/gemm-default.jsonl
