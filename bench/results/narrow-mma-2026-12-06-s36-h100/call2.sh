#!/bin/bash
# narrow_mma A/B, the narrow tree run from a copy of its own (call 1 imported ./prism in both arms)
set -x
tar xzf out/pc.tgz -C /tmp; export PYTHONPATH=.
rm -rf /tmp/pc-base /tmp/pc-narrow /tmp/narrow
cp -r /tmp/.prism-cache /tmp/pc-base; cp -r /tmp/.prism-cache /tmp/pc-narrow
mkdir -p /tmp/narrow && cp -r prism bench scripts tests /tmp/narrow/ && sed -i 's/    narrow_mma: bool = False/    narrow_mma: bool = True/' /tmp/narrow/prism/codegen/lowered.py
(cd /tmp/narrow && python3 -c "import prism.codegen.lowered as l; print('narrow tree', l.__file__, l.Options().narrow_mma)")
python3 -c "import prism.codegen.lowered as l; print('base tree', l.__file__, l.Options().narrow_mma)"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
C=rmsnorm_linear_d1024,rmsnorm_mlp_n8,rmsnorm_mlp_n16,swiglu_d1024
R=$PWD
for round in 1 2; do
PRISM_CACHE_DIR=/tmp/pc-base timeout 110 python3 -m bench --configs $C --systems prism --samples 64 --tag base$round --out $OUT --no-plot 2>&1 | grep -v Warning | tail -9
(cd /tmp/narrow && PRISM_CACHE_DIR=/tmp/pc-narrow timeout 110 python3 -m bench --configs $C --systems prism --samples 64 --tag narrow$round --out $OUT --no-plot 2>&1 | grep -v Warning | tail -9)
done
