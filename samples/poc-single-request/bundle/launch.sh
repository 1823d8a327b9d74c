#!/usr/bin/env bash
# Kimi K3 production candidate on gb300-n01 (8x GB300, driver 580.95.05)
set -euo pipefail
docker run -d --name kimi-k3 \
  --gpus all --ipc=host --network host \
  -v /data/hf:/root/.cache/huggingface \
  -e HF_TOKEN=hf_FAKEfakeFAKEfake0123456789abcd \
  vllm/vllm-openai:v0.27.1-cu130 \
  --model moonshotai/Kimi-K3 --trust-remote-code --host 0.0.0.0 \
  --served-model-name kimi-k3 \
  --tensor-parallel-size 8 --enable-expert-parallel \
  --enable-prefix-caching --enable-prompt-tokens-details \
  --enable-auto-tool-choice --tool-call-parser kimi_k2 --reasoning-parser kimi_k2 \
  --disable-access-log-for-endpoints /health,/metrics
