#!/bin/bash
# Stop the lab's Kubernetes control plane (lab/kube/up.sh) and remove its state ($LAB_STATE/kube),
# leaving the OpenStack lab up. lab/down.sh does the same for the whole lab (every process carries
# the lab marker; $LAB_STATE goes). Ends only the process groups recorded in $LAB_STATE/kube/pids,
# each checked to be a lab process: TERM, KILL after 10 s. Idempotent.
set -uo pipefail
KUBE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$KUBE_DIR/../lib/common.sh"
source "$KUBE_DIR/lib.sh"
[ "$(id -u)" = 0 ] || { echo "lab/kube/down.sh: must run as root" >&2; exit 1; }
lab_lock kube/down.sh || exit 1   # not beside a lab/up.sh or lab/down.sh (from lab/up.sh: its lock is held already)
say() { echo "[kube-down] $*"; }
pids=()
for name in $KUBE_PROCS; do
  kube_running "$name" && pids+=("$(cat "$KUBE_PIDS/$name.pid")")
done
# the kwoks' exec children are in their kwok's process group (hv-exec, kwok, sh -c ...)
for sig in TERM KILL; do
  left=()
  for p in "${pids[@]}"; do alive "$p" && left+=("$p"); done
  [ ${#left[@]} -eq 0 ] && break
  say "sending $sig to process groups ${left[*]}"
  for p in "${left[@]}"; do kill -$sig -- "-$p" 2>/dev/null; done
  deadline=$(( $(date +%s) + 10 ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    still=0; for p in "${left[@]}"; do alive "$p" && still=1; done
    [ $still = 0 ] && break
    sleep 0.2
  done
done
for p in "${pids[@]}"; do alive "$p" && { say "INCOMPLETE: pid $p still runs"; exit 1; }; done
rm -rf "$KUBE_STATE"
say "down: ${#pids[@]} process groups ended, $KUBE_STATE removed"
