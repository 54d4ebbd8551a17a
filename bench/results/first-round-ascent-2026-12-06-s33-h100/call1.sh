#!/bin/bash
# call 1: end-to-end A/B of PRISM_FIRST_ROUND_ASCENT and Options.ragged_kparts on decode MLP-like zoo programs
tar xzf out/pc.tgz -C /tmp
export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader
for v in A B C; do cp -r /tmp/.prism-cache /tmp/pc$v; done
mkdir -p /tmp/rag && cp -r prism bench scripts /tmp/rag/
sed -i 's/    ragged_kparts: bool = False/    ragged_kparts: bool = True/' /tmp/rag/prism/codegen/lowered.py
grep -n "ragged_kparts: bool" /tmp/rag/prism/codegen/lowered.py
P=clamped_glu,relu2_mlp,decoder_norm_linear,llama_mlp_block,gelu_mlp_bias,geglu,swiglu_mlp
T0=$(date +%s)
PRISM_CACHE_DIR=/tmp/pcA timeout 150 python -m bench.zoo_bench --which decode --only $P --systems prism,eager --samples 16 --out $OUT/zoo-base.json 2>&1 | grep -v "^\s*$" | tail -15
echo "base $(( $(date +%s) - T0 )) s"
PRISM_FIRST_ROUND_ASCENT=1 PRISM_CACHE_DIR=/tmp/pcB timeout 130 python -m bench.zoo_bench --which decode --only $P --systems prism --samples 16 --out $OUT/zoo-ascent.json 2>&1 | tail -12
echo "ascent $(( $(date +%s) - T0 )) s"
(cd /tmp/rag && PRISM_FIRST_ROUND_ASCENT=1 PRISM_CACHE_DIR=/tmp/pcC timeout 130 python -m bench.zoo_bench --which decode --only $P --systems prism --samples 16 --out $OUT/zoo-ascent-ragged.json 2>&1 | tail -12)
echo "ascent+ragged $(( $(date +%s) - T0 )) s"
PRISM_CACHE_DIR=/tmp/.prism-cache timeout 120 python scripts/gpu_option_ab.py ragged_kparts --values False,True --which decode --only clamped_glu,relu2_mlp,geglu --pick prior --sizes 4 --templates 3 --out $OUT/ragged-ab.json 2>&1 | tail -5
echo "total $(( $(date +%s) - T0 )) s"
