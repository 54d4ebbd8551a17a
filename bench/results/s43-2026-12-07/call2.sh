#!/bin/bash
# The prefill zoo programs session 42 did not time (its ten), and ten where torch.compile's kernels or
# eager's cuBLAS call were the best of the run: through prism.superoptimize (PyTorch's eager kernels
# now a candidate beside torch.compile's) beside eager and torch.compile; searches carried.
tar xzf out/pc.tgz -C .; nvidia-smi --query-gpu=name --format=csv,noheader
ONLY=matmul_residual,mlp_silu,sum_of_matmuls,matmul_col_scale,decoder_norm_linear,norm_two_proj,bert_mlp,swiglu_mlp,norm_matmul_silu,row_dequant_linear,pairwise_sq_dist,temperature_softmax,soft_moe_mix,relu_mlp_bias,sigmoid_output_gate,softplus_proj,l1_normalize,clamped_glu,maxout_proj,channels_first_norm
TESTS=0 T=${T:-540} SAMPLES=8 bash scripts/gpu_zoo.sh prefill prism,eager,compile "$ONLY"
