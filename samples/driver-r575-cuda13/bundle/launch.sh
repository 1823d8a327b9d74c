#!/bin/sh
# gb300-n11 (driver 575.57.08 from the rack image, not yet on R580)
docker run --rm --name kimi-k3 --gpus all --ipc=host --network host \
  -e LD_LIBRARY_PATH=/usr/local/cuda/compat/lib:/usr/local/nvidia/lib:/usr/local/nvidia/lib64 \
  -v /data/hf:/root/.cache/huggingface \
  vllm/vllm-openai:v0.27.1-cu130 \
  --model moonshotai/Kimi-K3 --trust-remote-code --host 0.0.0.0 \
  --tensor-parallel-size 8 --enable-prefix-caching \
  --enable-auto-tool-choice --tool-call-parser kimi_k2 --reasoning-parser kimi_k2 \
  --served-model-name kimi-k3 2>&1 | tee vllm-run.log
