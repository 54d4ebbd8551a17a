#!/bin/bash
# the commands of this session's second and third device calls (the H100 of call 1, still warm), as run
export PYTHONPATH=. PYTHONUNBUFFERED=1; tar xzf out/pc.tgz -C /tmp; export PRISM_CACHE_DIR=/tmp/.prism-cache
# call 2: four more tiles with and without the option, then two groups tuned with it and without
S='[{"k0_x": 4, "k0_y": 32, "k0_i": 128}, {"k0_x": 8, "k0_y": 32, "k0_i": 128}, {"k0_x": 8, "k0_y": 64, "k0_i": 128}, {"k0_x": 4, "k0_y": 64, "k0_i": 32}]'
for o in '{}' '{"carried_copies": true}'; do timeout 45 python3 scripts/gemm_probe.py --which prefill --at "matmul_residual.p0:2:$S" --launches 1 --options "$o" 2>&1 | grep '^{' | tee -a $OUT/gemm-carried2.jsonl; done
for o in '{"carried_copies": true}' '{}'; do timeout 110 python3 scripts/gemm_probe.py --which prefill --only matmul_residual,norm_matmul_silu --groups matmul_residual.p0,norm_matmul_silu.p1 --budget 25 --samples 24 --options "$o" 2>&1 | grep '^{\|ceiling' | tee -a $OUT/gemm-tune.jsonl; done
# call 3: three more programs tuned with the option and without (the second pass stopped by its timeout in geglu)
for o in '{"carried_copies": true}' '{}'; do timeout 150 python3 scripts/gemm_probe.py --which prefill --only matmul_col_scale,mlp_silu,geglu --budget 20 --samples 24 --options "$o" 2>&1 | grep '^{\|ceiling' | tee -a $OUT/gemm-tune2.jsonl; done
