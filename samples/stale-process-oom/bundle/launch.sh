#!/bin/bash
# restart kimi-k3 on gb300-n04 after this morning's notebook session
docker run -d --name kimi-k3 --gpus all --ipc=host --network host \
  -v /data/hf:/root/.cache/huggingface \
  vllm/vllm-openai:v0.33.0-cu130 \
  --model moonshotai/Kimi-K3 --trust-remote-code --host 0.0.0.0 \
  --tensor-parallel-size 8 --enable-prefix-caching \
  --enable-auto-tool-choice --tool-call-parser kimi_k2 --reasoning-parser kimi_k2 \
  --served-model-name kimi-k3
docker logs -f kimi-k3 > vllm.log 2>&1
