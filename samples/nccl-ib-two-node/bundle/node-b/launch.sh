#!/usr/bin/env bash
# Kimi K3 on h200-21 (node-a) + h200-22 (node-b): PP=2 x TP=8 over IB
docker run -d --name k3 --gpus all --ipc=host --network host --cap-add=IPC_LOCK \
  --device=/dev/infiniband -v /mnt/hf:/root/.cache/huggingface \
  -e NCCL_DEBUG=INFO -e NCCL_DEBUG_SUBSYS=INIT,NET -e NCCL_IB_HCA=mlx5 -e NCCL_SOCKET_IFNAME=bond0 \
  vllm/vllm-openai:v0.27.1-cu130 \
  --model moonshotai/Kimi-K3 --trust-remote-code --served-model-name kimi-k3 \
  --tensor-parallel-size 8 --pipeline-parallel-size 2 \
  --nnodes 2 --node-rank 1 --master-addr 10.31.4.21 --headless \
  --max-model-len 131072 --gpu-memory-utilization 0.92 --enable-prefix-caching
