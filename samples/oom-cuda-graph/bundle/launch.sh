#!/bin/bash
# gb300-n05: raise batch capacity for the agent fleet (max-num-seqs 512, util 0.95)
docker run -d --restart no --name k3-serve \
  --runtime nvidia --gpus all \
  --ipc=host --network host \
  --log-driver json-file --log-opt max-size=512m \
  -v /raid/hf:/root/.cache/huggingface \
  vllm/vllm-openai:v0.27.1-cu130 \
    --model moonshotai/Kimi-K3 --trust-remote-code \
    --host 0.0.0.0 \
    --tensor-parallel-size 8 --enable-expert-parallel \
    --gpu-memory-utilization 0.95 \
    --max-num-seqs 512 \
    --enable-prefix-caching \
    --enable-auto-tool-choice --tool-call-parser kimi_k2 --reasoning-parser kimi_k2 \
    --served-model-name kimi-k3
