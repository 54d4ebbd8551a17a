#!/bin/bash
# The d = 4096 GEMVs' split-K plan built by rule (constructed template 1: k0_x column blocks x s K-splits,
# fused with its combine where it fuses) at 128 blocks, from 64-byte row segments (k0_x = 128, s = 1) to
# 1 KB ones (k0_x = 8, s = 16), beside the searched one-kernel plans at the prior's best sizes: whether wider
# row segments of W (the copies of 64-byte column slices run at 77-79% of the H200's copy ceiling) pay for
# the combine. Each variant checked against float64 first, timed by the bench protocol, at the 96K and 160K
# stage targets. Searches carried (out/pc.tgz).
tar xzf out/pc.tgz -C .; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
export PYTHONPATH=. PYTHONUNBUFFERED=1 PRISM_CACHE_DIR=$PWD/.prism-cache
for prog in rmsnorm_linear_d4096 swiglu_d4096; do
  timeout 120 python3 scripts/gpu_option_ab.py stage_target --values 98304,163840 --which bench --only $prog \
    --sources searched --templates 3 --pick prior --sizes 2 --out $OUT/split-$prog-searched.json | tail -2
  for xs in 128:1 64:2 32:4 16:8 8:16; do
    at="{\"k0_x\": ${xs%:*}, \"s\": ${xs#*:}, \"k0_i\": 16}"
    timeout 60 python3 scripts/gpu_option_ab.py stage_target --values 98304,163840 --which bench --only $prog \
      --sources constructed --at "$at" --out $OUT/split-$prog-x${xs%:*}.json | tail -1
  done
done
