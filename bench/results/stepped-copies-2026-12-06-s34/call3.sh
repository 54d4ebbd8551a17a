#!/bin/bash
# call 3: a GEMM's fixed sizes with copies item by item (the default), stepped, and stepped in shared
# memory only (out/var: a copy of the tree whose stepped loaders keep each copy's global address
# written out), two rounds; then the tuner's first-round climb at prefill sizes, off and on
[ -d /tmp/.prism-cache ] || tar xzf out/pc.tgz -C /tmp
export PYTHONPATH=. PRISM_CACHE_DIR=/tmp/.prism-cache
nvidia-smi --query-gpu=name --format=csv,noheader
T0=$(date +%s)
S='[{"k0_x": 4, "k0_y": 64, "k0_i": 64}, {"k0_x": 4, "k0_y": 32, "k0_i": 64}, {"k0_x": 8, "k0_y": 32, "k0_i": 64}, {"k0_x": 4, "k0_y": 64, "k0_i": 32}]'
for r in 1 2; do
  timeout 60 python3 scripts/gemm_probe.py --which prefill --at "matmul_residual.p0:2:$S" 2>&1 | grep '"us"' | sed 's/^{/{"variant": "items", /' >> $OUT/gemm-ab3.jsonl
  timeout 60 python3 scripts/gemm_probe.py --which prefill --at "matmul_residual.p0:2:$S" --options '{"stepped_copies": true}' 2>&1 | grep '"us"' | sed 's/^{/{"variant": "stepped", /' >> $OUT/gemm-ab3.jsonl
  (cd out/var && timeout 60 python3 scripts/gemm_probe.py --which prefill --at "matmul_residual.p0:2:$S" --options '{"stepped_copies": true}' 2>&1 | grep '"us"' | sed 's/^{/{"variant": "stepped-shared-only", /' >> $OUT/gemm-ab3.jsonl)
done
echo "gemm $(( $(date +%s) - T0 )) s"; python3 -c "
import json
for l in open('$OUT/gemm-ab3.jsonl'): r=json.loads(l); print(r['variant'], r['sizes'], round(r['us'],2), round(r['rel_err'],5))"
for v in A B; do rm -rf /tmp/pc$v; cp -r /tmp/.prism-cache /tmp/pc$v; done
P=decoder_norm_linear,clamped_glu,swiglu_mlp,gelu_mlp_bias
PRISM_FIRST_ROUND_ASCENT=0 PRISM_CACHE_DIR=/tmp/pcA timeout 150 python -m bench.zoo_bench --which prefill --only $P --systems prism,compile --samples 16 --out $OUT/zoo-prefill-ascent-off.json 2>&1 | grep -v "^\s*$" | tail -8
echo "off $(( $(date +%s) - T0 )) s"
PRISM_CACHE_DIR=/tmp/pcB timeout 130 python -m bench.zoo_bench --which prefill --only $P --systems prism --samples 16 --out $OUT/zoo-prefill-ascent-on.json 2>&1 | grep -v "^\s*$" | tail -8
echo "on $(( $(date +%s) - T0 )) s"
