#!/bin/bash
# The 20 decode zoo programs session 41's call2.sh left out (its time limits), the same command.
tar xzf out/pc.tgz -C .; nvidia-smi --query-gpu=name --format=csv,noheader
ONLY=attention_out_proj,relu_mlp_bias,tanh_logit_softcap,tanh_softcap_attention,sigmoid_output_gate,log_softmax,logsumexp,softplus_proj,mish,leaky_relu_residual,l1_normalize,bert_mlp,gelu_exact_bias,clamped_glu,normalize_embeddings,erf_gelu_bias,maxout_proj,clipped_double_q,channels_first_proj,channels_first_norm
TESTS=0 T=${T:-540} SAMPLES=8 bash scripts/gpu_zoo.sh decode prism,eager,compile "$ONLY"
