#!/bin/bash
# Tear the asap2lab down completely; idempotent, and safe after a crash or a killed up.sh.
#  1. every recorded process group ($LAB_STATE/run/pids/*.pid), if its leader still carries the
#     lab's marker (ASAP2LAB_PROC=$LAB_STATE in its environment): TERM, then KILL after 15 s;
#  2. every other process carrying the marker (children that left their group, guest daemons
#     started by nova-compute) and every process inside an asap2lab* network namespace;
#  3. every asap2lab* network namespace (hypervisors, ToR, guests asap2lab-vm-*), every
#     asap2lab* link in the root namespace (bridges, veths);
#  4. $LAB_STATE (keep $LAB_STATE/logs with LAB_KEEP_LOGS=1) and /tmp/asap2lab-debs.* (install.sh downloads).
# Never ends a process by name.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
[ "$(id -u)" = 0 ] || { echo "down.sh: must run as root" >&2; exit 1; }
T0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
say() { echo "[lab-down +$(since "$T0")s] $*"; }

if [ -z "${ASAP2LAB_LOCKED:-}" ]; then
  exec 9<"$LAB_DIR"
  flock -w 600 9 || { echo "down.sh: another lab up/down holds the lock on $LAB_DIR" >&2; exit 1; }
  export ASAP2LAB_LOCKED=1
fi

# our own ancestry must never be signalled (down.sh may run from a shell that carries the marker)
self_and_ancestors() {
  local p=$$
  while [ -n "$p" ] && [ "$p" -gt 1 ]; do
    echo "$p"
    p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)
  done
}
SELF=" $(self_and_ancestors | tr '\n' ' ') "
not_self() { [[ "$SELF" != *" $1 "* ]]; }

marked_pids() { # every live process whose environment carries the lab marker
  local d p
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    not_self "$p" && is_lab_pid "$p" && echo "$p"
  done
}
netns_pids() { # every process inside an asap2lab* network namespace
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^asap2lab/ {print $1}'); do
    ip netns pids "$ns" 2>/dev/null
  done
}
wait_gone() { # wait_gone TIMEOUT_S PID...: true when all are gone
  local deadline=$(( $(date +%s) + $1 )) p left; shift
  while :; do
    left=
    for p in "$@"; do alive "$p" && left="$left $p"; done
    [ -z "$left" ] && return 0
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.2
  done
}

# ------------------------------------------------------------------ 1. recorded process groups
groups=()
if [ -d "$PIDS" ]; then
  for f in "$PIDS"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null)
    if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" && is_lab_pid "$pid" && not_self "$pid"; then
      groups+=("$pid")
    fi
  done
fi
if [ ${#groups[@]} -gt 0 ]; then
  say "stopping ${#groups[@]} recorded process groups"
  # compute first (they talk to the others), the rest at once
  for pid in "${groups[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null; done
  if ! wait_gone 15 "${groups[@]}"; then
    for pid in "${groups[@]}"; do alive "$pid" && { say "group $pid ignored TERM: KILL"; kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null; }; done
    wait_gone 5 "${groups[@]}"
  fi
fi

# ------------------------------------------------------------------ 2. stragglers
for round in 1 2; do
  strays=$( { marked_pids; netns_pids; } | sort -u | while read -r p; do not_self "$p" && echo "$p"; done)
  [ -z "$strays" ] && break
  sig=TERM; [ $round = 2 ] && sig=KILL
  say "sending $sig to $(echo $strays | wc -w) lab processes outside the recorded groups: $(echo $strays)"
  kill -$sig $strays 2>/dev/null
  wait_gone 10 $strays
done

# ------------------------------------------------------------------ 3. namespaces and links
nss=$(ip netns list 2>/dev/null | awk '$1 ~ /^asap2lab/ {print $1}')
if [ -n "$nss" ]; then
  say "deleting netns: $(echo $nss)"
  for ns in $nss; do ip netns del "$ns" || say "WARNING: ip netns del $ns failed"; done
fi
links=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^asap2lab' || true)
for l in $links; do ip link show "$l" >/dev/null 2>&1 && ip link del "$l" 2>/dev/null; done
[ -n "$links" ] && say "deleted links: $(echo $links)"

# ------------------------------------------------------------------ 4. files
if [ -e "$LAB_STATE" ]; then
  if [ "${LAB_KEEP_LOGS:-0}" = 1 ] && [ -d "$LOGS" ]; then
    find "$LAB_STATE" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
    say "removed $LAB_STATE (kept $LOGS)"
  else
    rm -rf "$LAB_STATE"
    say "removed $LAB_STATE"
  fi
fi
rm -rf /tmp/asap2lab-debs.* 2>/dev/null   # install.sh download dirs of an interrupted install

# ------------------------------------------------------------------ verify
left_ns=$(ip netns list 2>/dev/null | awk '$1 ~ /^asap2lab/ {print $1}')
left_links=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^asap2lab' || true)
left_procs=$(marked_pids)
if [ -n "$left_ns$left_links$left_procs" ]; then
  say "INCOMPLETE: netns [$(echo $left_ns)] links [$(echo $left_links)] processes [$(echo $left_procs)]"
  exit 1
fi
say "DOWN in $(since "$T0")s: no asap2lab process, netns or link left"
