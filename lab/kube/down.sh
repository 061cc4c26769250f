#!/bin/bash
# Stop the lab's Kubernetes control plane (lab/kube/up.sh) and remove its state ($LAB_STATE/kube),
# leaving the OpenStack lab up. lab/down.sh does the same for the whole lab (every process carries
# the lab marker; $LAB_STATE goes). Ends only the process groups recorded in $LAB_STATE/kube/pids,
# each checked to be a lab process: TERM, KILL after 10 s. Idempotent; the logs stay in $LOGS.
set -uo pipefail
KUBE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$KUBE_DIR/../lib/common.sh"
source "$KUBE_DIR/lib.sh"
[ "$(id -u)" = 0 ] || { echo "lab/kube/down.sh: must run as root" >&2; exit 1; }
lab_lock kube/down.sh || exit 1   # not beside a lab/up.sh or lab/down.sh (from lab/up.sh: its lock is held already)
say() { echo "[kube-down] $*"; }
# In the reverse order of their start: the kwoks, then kube-apiserver while etcd still answers
# (without etcd it retries its connections instead of shutting down), then its OIDC issuer, then etcd. A kwok's exec
# children are in its process group (hv-exec, kwok, sh -c ...).
ended=0
stop() { # stop NAME...: TERM their process groups, KILL after 10 s
  local name p pids=() sig left deadline
  for name in "$@"; do kube_running "$name" && pids+=("$(cat "$KUBE_PIDS/$name.pid")"); done
  [ ${#pids[@]} -gt 0 ] || return 0
  for sig in TERM KILL; do
    left=()
    for p in "${pids[@]}"; do alive "$p" && left+=("$p"); done
    [ ${#left[@]} -eq 0 ] && break
    say "sending $sig to $* (process groups ${left[*]})"
    for p in "${left[@]}"; do kill -$sig -- "-$p" 2>/dev/null; done
    deadline=$(( $(date +%s) + 10 ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
      left=(); for p in "${pids[@]}"; do alive "$p" && left+=("$p"); done
      [ ${#left[@]} -eq 0 ] && break
      sleep 0.2
    done
  done
  for p in "${pids[@]}"; do alive "$p" && { say "INCOMPLETE: pid $p still runs"; exit 1; }; done
  ended=$((ended + ${#pids[@]}))
}
stop $(cd "$KUBE_PIDS" 2>/dev/null && ls kwok-hv*.pid 2>/dev/null | sed "s/\.pid$//")   # every kwok recorded, also of a lab that had more hypervisors
stop kube-apiserver
stop oidc   # the API server's OIDC issuer (lab/oidc)
stop etcd
rm -rf "$KUBE_STATE"
say "down: $ended process groups ended, $KUBE_STATE removed"
