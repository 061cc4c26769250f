#!/bin/bash
# cleanup-all.sh: remove every asap2lab guest on this machine (used by lab down, also after a crash).
#   1. every guest recorded under $STATE/guests/ and every netns asap2lab-vm-<uuid>: guestctl unplug
#      (kills the guest's processes, deletes its OVS ports, representors, netns and state dir);
#   2. any other netns named asap2lab-vm-*: its processes killed by PID, the netns deleted;
#   3. OVS ports tagged external_ids:asap2lab-plug in each hypervisor OVS still running
#      (run dirs given as arguments, else every $STATE/hv*/ovs holding a db.sock).
# Usage: cleanup-all.sh [OVS_RUNDIR ...]
# Env: ASAP2LAB_STATE (else LAB_STATE, else /var/lib/asap2lab).
# Exit 0 when nothing is left, 1 when something could not be removed (each named on stderr).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
STATE=${ASAP2LAB_STATE:-${LAB_STATE:-/var/lib/asap2lab}}
GCTL=(/usr/bin/python3 "$HERE/guestctl.py" --state "$STATE")
rc=0

while read -r uuid _; do
  [ -n "$uuid" ] || continue
  if out=$("${GCTL[@]}" unplug --uuid "$uuid" 2>&1); then
    [ -z "$out" ] || sed "s/^/cleanup-all: $uuid: /" <<<"$out"
  else
    echo "cleanup-all: guest $uuid: $out" >&2; rc=1
  fi
done < <("${GCTL[@]}" list)

for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^asap2lab-vm-'); do
  pids=$(ip netns pids "$ns" 2>/dev/null)
  [ -z "$pids" ] || kill $pids 2>/dev/null
  for _ in $(seq 100); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break; sleep 0.05; done
  pids=$(ip netns pids "$ns" 2>/dev/null)
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null
  if ip netns delete "$ns"; then echo "cleanup-all: deleted stray netns $ns"; else rc=1; fi
done

if [ $# -gt 0 ]; then rundirs=("$@"); else
  rundirs=(); for s in "$STATE"/hv*/ovs/db.sock; do [ -S "$s" ] && rundirs+=("$(dirname "$s")"); done
fi
for d in "${rundirs[@]}"; do
  if out=$("${GCTL[@]}" --ovs-rundir "$d" sweep-ovs 2>&1); then
    [ -z "$out" ] || sed "s|^|cleanup-all: $d: |" <<<"$out"
  else
    echo "cleanup-all: OVS $d: $out" >&2; rc=1
  fi
done

left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^asap2lab-vm-')
[ -z "$left" ] || { echo "cleanup-all: still present: $left" >&2; rc=1; }
[ -z "$(ls -A "$STATE/guests" 2>/dev/null)" ] || { echo "cleanup-all: $STATE/guests not empty" >&2; rc=1; }
exit $rc
