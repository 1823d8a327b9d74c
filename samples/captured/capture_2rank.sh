#!/usr/bin/env bash
# Second pass: the two-rank NCCL cases (both ranks on cuda:0).
#
#   bash capture_2rank.sh OUTDIR
#
# The first pass (capture.sh) ran these too, but with the machine's hostname
# unresolvable torchrun's rendezvous never completed; this pass runs after
# the hostname was added to /etc/hosts. Same conventions as capture.sh.

DEST=${1:?usage: capture_2rank.sh OUTDIR}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
SRC=$(cd "$(dirname "$0")" && pwd)
WD=${CAPTURE_WORKDIR:-/tmp/k3cap}
mkdir -p "$WD"
cp "$SRC/cases.py" "$WD/"
cd "$WD" || exit 1

export PYTHONUNBUFFERED=1
MAN="$DEST/manifest_2rank.tsv"
printf 'file\trc\tseconds\tcommand\n' > "$MAN"
T0=$(date +%s)
log() { echo "[capture +$(( $(date +%s) - T0 ))s] $*"; }

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

SHM='unshare -m sh -c '\''mount -t tmpfs -o size=4k tmpfs /dev/shm && exec "$@"'\'' sh'
cap nccl_duplicate_gpu.log 60 "FORCE_DEVICE=0 NCCL_DEBUG=INFO python3 -m torch.distributed.run --standalone --nproc-per-node 2 cases.py nccl" &
P1=$!
cap nccl_duplicate_gpu_2proc.log 60 'export MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 WORLD_SIZE=2 FORCE_DEVICE=0 NCCL_DEBUG=INFO; RANK=0 python3 cases.py nccl & RANK=1 python3 cases.py nccl; wait' &
P2=$!
cap nccl_tiny_shm_2ranks.log 60 "FORCE_DEVICE=0 NCCL_DEBUG=INFO $SHM python3 -m torch.distributed.run --standalone --nproc-per-node 2 cases.py nccl" &
P3=$!
wait $P1 $P2 $P3
cap dmesg_tail_2rank.txt 20 'dmesg 2>&1 | tail -50'
log "finished"
