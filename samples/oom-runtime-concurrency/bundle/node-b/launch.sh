#!/usr/bin/env bash
# kimi-k3 on two H200 nodes: PP=2 x TP=8, node b (workers only)
docker run -d --name k3-pp1 \
  --gpus all --ipc=host --network host --privileged \
  -v /mnt/hf:/root/.cache/huggingface \
  -e NCCL_SOCKET_IFNAME=bond0 -e NCCL_IB_HCA=mlx5 -e GLOO_SOCKET_IFNAME=bond0 \
  vllm/vllm-openai:v0.27.1-cu130 \
  --model moonshotai/Kimi-K3 --trust-remote-code --served-model-name kimi-k3 \
  --tensor-parallel-size 8 --pipeline-parallel-size 2 \
  --nnodes 2 --node-rank 1 --master-addr 10.31.4.21 --headless \
  --gpu-memory-utilization 0.92 --max-model-len 131072 --max-num-seqs 256 \
  --enable-prefix-caching --enable-auto-tool-choice --tool-call-parser kimi_k2 \
  --disable-uvicorn-access-log
docker logs -t -f k3-pp1 > vllm-node-b.log 2>&1 &
