#!/bin/bash
# (not run) The ten prefill zoo programs call3.sh's last part did not reach, the same command.
tar xzf out/pc.tgz -C .; nvidia-smi --query-gpu=name --format=csv,noheader
ONLY=pairwise_sq_dist,temperature_softmax,soft_moe_mix,relu_mlp_bias,sigmoid_output_gate,softplus_proj,l1_normalize,clamped_glu,maxout_proj,channels_first_norm
TESTS=0 T=${T:-540} SAMPLES=8 bash scripts/gpu_zoo.sh prefill prism,eager,compile "$ONLY"
