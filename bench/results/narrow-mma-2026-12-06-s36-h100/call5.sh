#!/bin/bash
# what the device time left allows: the tuner's pick for the 1024-row GEMM (paired blocks), then part of the GPU suite
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=. PRISM_CACHE_DIR=/tmp/.prism-cache
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 70 python3 scripts/gemm_probe.py --which prefill --only norm_matmul_silu --groups norm_matmul_silu.p1 --budget 20 --out $OUT/nms_tuned.json 2>&1 | grep -v Warning | tail -6
timeout 80 python3 -m pytest -m gpu -q -rs -n 4 -p no:cacheprovider tests/test_superoptimize_gpu.py tests/test_paired_blocks.py 2>&1 | tail -8 | tee $OUT/gpu-tests.log
