#!/usr/bin/env bash
# k3 bring-up on h200-07 (single node, 8x H200 141GB)
set -euo pipefail

docker run -d --name vllm-k3 \
  --gpus all --ipc=host --network host \
  --ulimit memlock=-1 --ulimit stack=67108864 \
  -v /mnt/models/hf:/root/.cache/huggingface \
  -e NCCL_DEBUG=INFO \
  -e VLLM_LOGGING_LEVEL=INFO \
  vllm/vllm-openai:v0.27.1-cu130 \
  --model moonshotai/Kimi-K3 \
  --trust-remote-code \
  --tensor-parallel-size 8 \
  --max-model-len 131072 \
  --gpu-memory-utilization 0.90 \
  --enable-prefix-caching \
  --enable-auto-tool-choice --tool-call-parser kimi_k2 \
  --reasoning-parser kimi_k2 \
  --served-model-name kimi-k3

docker logs -t -f vllm-k3 2>&1 | tee vllm-0.log
