#!/usr/bin/env bash
# Capture real GPU failure output on one CUDA GPU (written for one NVIDIA H200).
#
#   bash capture.sh OUTDIR
#
# Every capture is one file in OUTDIR holding the command's stdout and stderr
# together (as `cmd 2>&1 | tee file` would), each under its own hard timeout.
# OUTDIR/manifest.tsv records file, exit status, seconds and the command.
# No `set -e`: a failed or hung capture must not stop the others.
# Needs: python3 with torch (+ cupy, triton), nvcc, nvidia-smi; root for the
# private tmpfs over /dev/shm (unshare -m).

DEST=${1:?usage: capture.sh OUTDIR}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
SRC=$(cd "$(dirname "$0")" && pwd)
# Run from a neutral folder so tracebacks show a short path.
WD=${CAPTURE_WORKDIR:-/tmp/k3cap}
mkdir -p "$WD"
cp "$SRC/cases.py" "$SRC/illegal_access.cu" "$WD/"
cd "$WD" || exit 1

export PYTHONUNBUFFERED=1
MAN="$DEST/manifest.tsv"
printf 'file\trc\tseconds\tcommand\n' > "$MAN"
T0=$(date +%s)
log() { echo "[capture +$(( $(date +%s) - T0 ))s] $*"; }

# cap FILE TIMEOUT_S 'COMMAND'  -- COMMAND runs under bash -c in $WD
cap() {
    local file=$1 to=$2 cmd=$3 s e rc
    s=$(date +%s.%N)
    log "start $file"
    timeout -s KILL "$to" bash -c "$cmd" > "$DEST/$file" 2>&1
    rc=$?
    e=$(date +%s.%N)
    printf '%s\t%s\t%s\t%s\n' "$file" "$rc" "$(awk "BEGIN{printf \"%.1f\", $e-$s}")" "$cmd" >> "$MAN"
    log "done  $file rc=$rc"
}

# ---------------------------------------------------------------- 1. system
log "system info"
nvcc -O2 -arch=sm_90 -o illegal_access illegal_access.cu > "$DEST/nvcc_build.log" 2>&1 &
NVCC_PID=$!
cap uname.txt 10 'uname -a'
cap os-release.txt 10 'cat /etc/os-release'
cap torch_versions.txt 60 "python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'"
cap nvcc_version.txt 20 'nvcc --version'
cap nvidia-smi.txt 30 'nvidia-smi'
cap nvidia-smi-q.txt 30 'nvidia-smi -q'
cap nvidia-smi-topo.txt 30 'nvidia-smi topo -m'
cap collect_env.txt 90 'python3 -m torch.utils.collect_env' &
COLLECT_PID=$!

# ------------------------------------------- 5. nvidia-smi series over a ramp
log "allocation ramp with nvidia-smi time series"
timeout -s KILL 60 nvidia-smi --query-gpu=timestamp,index,name,driver_version,memory.total,memory.used,memory.free,utilization.gpu,temperature.gpu,power.draw --format=csv -lms 200 > "$DEST/nvidia-smi-timeseries.csv" 2>&1 &
SMI_PID=$!
sleep 1
cap ramp_alloc.log 60 'python3 cases.py smi_ramp'
sleep 1
kill "$SMI_PID" 2>/dev/null
wait "$SMI_PID" 2>/dev/null
printf '%s\t%s\t%s\t%s\n' nvidia-smi-timeseries.csv - - 'nvidia-smi --query-gpu=timestamp,index,name,driver_version,memory.total,memory.used,memory.free,utilization.gpu,temperature.gpu,power.draw --format=csv -lms 200 (background during ramp_alloc.log)' >> "$MAN"
wait "$COLLECT_PID" 2>/dev/null

# ------------------------------------------------------------------ 1. OOM
log "OOM"
cap oom_single_200g.log 60 'python3 cases.py oom_single'
cap oom_ramp_10g.log 60 'python3 cases.py oom_ramp'

rm -f holder.ready
HOLDER_READY_FILE=$WD/holder.ready HOLDER_SECONDS=60 timeout -s KILL 90 python3 cases.py holder > "$DEST/oom_holder.log" 2>&1 &
HOLDER_PID=$!
for _ in $(seq 1 120); do
    [ -s holder.ready ] && break
    kill -0 "$HOLDER_PID" 2>/dev/null || break
    sleep 0.5
done
if [ -s holder.ready ]; then
    cap nvidia-smi_with_holder.txt 30 'nvidia-smi'
    cap nvidia-smi_compute_apps_with_holder.csv 30 'nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv'
    cap oom_with_other_process.log 60 'python3 cases.py oom_victim'
else
    log "holder never became ready"
fi
kill "$HOLDER_PID" 2>/dev/null
wait "$HOLDER_PID" 2>/dev/null
printf '%s\t%s\t%s\t%s\n' oom_holder.log - - 'HOLDER_SECONDS=60 python3 cases.py holder (background; killed with SIGTERM after the victim)' >> "$MAN"
sleep 1

# ------------------------------------------------------------------ 2. NCCL
log "NCCL"
M='MASTER_ADDR=127.0.0.1'
cap nccl_init_ok_info.log 75 "$M MASTER_PORT=29501 RANK=0 WORLD_SIZE=1 NCCL_DEBUG=INFO python3 cases.py nccl" &
P1=$!
cap nccl_init_ok_subsys_all.log 75 "$M MASTER_PORT=29502 RANK=0 WORLD_SIZE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL python3 cases.py nccl" &
P2=$!
cap nccl_duplicate_gpu.log 75 "FORCE_DEVICE=0 NCCL_DEBUG=INFO python3 -m torch.distributed.run --standalone --nproc-per-node 2 cases.py nccl" &
P3=$!
cap nccl_bad_socket_ifname.log 75 "$M MASTER_PORT=29504 RANK=0 WORLD_SIZE=1 NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=doesnotexist0 python3 cases.py nccl" &
P4=$!
wait $P1 $P2 $P3 $P4

# ------------------------------------------------------------------ 2. shm
log "shm"
# A private mount namespace with a 4 KiB tmpfs over /dev/shm (the host's stays as it is).
SHM='unshare -m sh -c '\''mount -t tmpfs -o size=4k tmpfs /dev/shm && exec "$@"'\'' sh'
cap shm_tiny_mount_check.txt 20 "$SHM df -k /dev/shm"
cap nccl_tiny_shm.log 75 "$M MASTER_PORT=29505 RANK=0 WORLD_SIZE=1 NCCL_DEBUG=INFO $SHM python3 cases.py nccl" &
P1=$!
cap nccl_tiny_shm_2ranks.log 75 "FORCE_DEVICE=0 NCCL_DEBUG=INFO $SHM python3 -m torch.distributed.run --standalone --master-port 29506 --nproc-per-node 2 cases.py nccl" &
P2=$!
cap shm_share_memory.log 60 "$SHM python3 cases.py shm_share" &
P3=$!
cap shm_dataloader.log 60 "$SHM python3 cases.py shm_dataloader" &
P4=$!
wait $P1 $P2 $P3 $P4

# ----------------------------------------------------------- 4. CUDA graphs
log "CUDA graph capture"
cap cuda_graph_sync_in_capture.log 60 'python3 cases.py graph_sync' &
P1=$!
cap cuda_graph_item_in_capture.log 60 'python3 cases.py graph_item' &
P2=$!
wait $P1 $P2

# --------------------------------------- 3. device asserts, illegal access
log "device-side asserts and illegal memory access"
wait "$NVCC_PID"
printf '%s\t%s\t%s\t%s\n' nvcc_build.log "$?" - 'nvcc -O2 -arch=sm_90 -o illegal_access illegal_access.cu' >> "$MAN"
cap device_assert_embedding.log 60 'python3 cases.py assert_embedding' &
P1=$!
cap device_assert_embedding_blocking.log 60 'CUDA_LAUNCH_BLOCKING=1 python3 cases.py assert_embedding' &
P2=$!
cap device_assert_index_select.log 60 'python3 cases.py assert_index_select' &
P3=$!
wait $P1 $P2 $P3
cap illegal_access_cuda_cpp.log 30 './illegal_access' &
P1=$!
cap illegal_access_cupy_torch.log 60 'python3 cases.py illegal_cupy' &
P2=$!
cap illegal_access_triton.log 90 'python3 cases.py illegal_triton' &
P3=$!
wait $P1 $P2 $P3

# ------------------------------------------------------------- 6. after all
log "after"
cap nvidia-smi_after.txt 30 'nvidia-smi'
cap dmesg_tail.txt 20 'dmesg 2>&1 | tail -200'

# Keep every file small: over 2 MB keeps the first and last 1 MB.
for f in "$DEST"/*; do
    sz=$(stat -c %s "$f")
    if [ "$sz" -gt 2000000 ]; then
        { head -c 1000000 "$f"; printf '\n[... capture.sh: %s bytes cut from the middle ...]\n' "$((sz - 2000000))"; tail -c 1000000 "$f"; } > "$f.cut" && mv "$f.cut" "$f"
        log "truncated $(basename "$f") ($sz bytes)"
    fi
done
log "finished"
