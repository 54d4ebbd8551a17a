#!/bin/bash
# (call 2, shortened to the device time left) The 1,024-row GEMM (norm_matmul_silu.p1, 1024x4096 @
# 4096x4096) at two fixed tiles of its template 2, defaults first and last, against Options.gemm_stages = 3
#; each kernel checked against float64 then graph-timed; then the group
# tuned with gemm_stages = 3 and with the defaults. The mma.sync ceiling first.
export PYTHONPATH=. PYTHONUNBUFFERED=1; tar xzf out/pc.tgz -C /tmp; export PRISM_CACHE_DIR=/tmp/.prism-cache
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -c "from bench.mma_ceiling import mma_sync_rate; print('mma.sync ceiling', mma_sync_rate()/1e12)" | tee $OUT/ceiling.txt
T='[{"k0_x":8,"k0_y":16,"k0_i":64},{"k0_x":4,"k0_y":32,"k0_i":64}]'
for o in '{}' '{"gemm_stages": 3}' '{}' '{"gemm_stages": 3}'; do
  timeout 40 python3 scripts/gemm_probe.py --which prefill --at "norm_matmul_silu.p1:2:$T" --launches 1 --options "$o" 2>&1 | grep '^{\|rror' | tee -a $OUT/gemm-at.jsonl
done
for o in '{"gemm_stages": 3}' '{}'; do
  timeout 38 python3 scripts/gemm_probe.py --which prefill --only norm_matmul_silu --groups norm_matmul_silu.p1 --budget 15 --samples 24 --options "$o" 2>&1 | grep '^{\|ceiling\|rror' | tee -a $OUT/gemm-tune.jsonl
done
