#!/bin/sh
# first try on the new GB300 box (copied from the single-GPU dev setup)
docker run -d --name kimi-k3 --gpus all -p 8000:8000 \
  -e NCCL_DEBUG=INFO \
  -v /data/hf:/root/.cache/huggingface \
  vllm/vllm-openai:v0.27.1-cu130 \
  serve --model moonshotai/Kimi-K3 --trust-remote-code --host 0.0.0.0 \
  --tensor-parallel-size 8 --enable-prefix-caching \
  --enable-auto-tool-choice --tool-call-parser kimi_k2 --reasoning-parser kimi_k2 \
  --served-model-name kimi-k3
