#!/bin/bash
set -x
tar xzf out/pc.tgz -C /tmp; export PRISM_CACHE_DIR=/tmp/.prism-cache PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
python3 -c "from bench.mma_ceiling import mma_sync_rate; print('mma_sync TFLOP/s', mma_sync_rate()/1e12)"
P=scripts/gemm_probe.py
S='[{"k0_x":8,"k0_y":64,"k0_i":64},{"k0_x":8,"k0_y":32,"k0_i":64},{"k0_x":4,"k0_y":32,"k0_i":64},{"k0_x":8,"k0_y":16,"k0_i":64}]'
timeout 150 python3 $P --at "norm_matmul_silu.p1:2:$S" --launches 1 2>&1 | grep -v Warning | tee $OUT/nms_default.jsonl
S4='[{"k0_x":8,"k0_y":32,"k0_i":64},{"k0_x":8,"k0_y":32,"k0_i":128},{"k0_x":16,"k0_y":32,"k0_i":64}]'
timeout 100 python3 $P --at "norm_matmul_silu.p1:2:$S4" --launches 1 --options '{"warps":4}' 2>&1 | tee $OUT/nms_warps4.jsonl
timeout 60 python3 $P --at "norm_matmul_silu.p1:2:[{\"k0_x\":8,\"k0_y\":32,\"k0_i\":64}]" --launches 1 --options '{"warp_ksplit":true}' 2>&1 | tee $OUT/nms_ksplit.jsonl
timeout 90 python3 $P --at "sum_of_matmuls.p0:2:[{\"k0_x\":8,\"k0_y\":64,\"k0_i\":64},{\"k0_x\":8,\"k0_y\":32,\"k0_i\":64}]" --launches 1 --options '{"warps":4}' 2>&1 | tee $OUT/som_warps4.jsonl
timeout 90 python3 scripts/gemm_hack_probe.py --at 'matmul_residual.p0:2:[{"k0_x": 4, "k0_y": 64, "k0_i": 64}]' --hacks none,carried,none,carried --rounds 2 2>&1 | tee $OUT/hack.jsonl
