#!/bin/bash
# Tear the asap2lab down completely; idempotent, and safe after a crash or a killed up.sh.
#  0. guests, via the driver's lab/guest/cleanup-all.sh while OVS still runs;
#  1. every lab process (lib/labprocs.py: marker ASAP2LAB_PROC=$LAB_STATE in its environment, a
#     $LAB_STATE/ path in its command line, or inside an asap2lab* netns) with its process group:
#     TERM, then KILL after 15 s;
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

lab_lock down.sh || exit 1

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
# process groups of this shell and its ancestors: never signalled as a group
SELF_PGIDS=" $(p=$$; while [ -n "$p" ] && [ "$p" -gt 1 ]; do awk '{print $5}' "/proc/$p/stat" 2>/dev/null; p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null); done | sort -u | tr '\n' ' ') "

# ------------------------------------------------------------------ 1+2. every lab process
# lib/labprocs.py lists them (marker in the environment, a $LAB_STATE/ path on the command line,
# or inside an asap2lab* netns); each one's process group is signalled (up.sh started every
# daemon as a group leader, so workers go with their parent), TERM first, KILL after 15 s.
# Every process signalled is remembered by pid and start time (field 22 of /proc/PID/stat, so a
# reused pid is not mistaken for it): once the namespaces are gone labprocs.py can no longer see a
# daemon whose setproctitle rewrote its command line and environment (neutron's agents), so the
# end of this script waits for the remembered ones to be reaped, not for labprocs.py to go quiet.
declare -A SIGNALLED=()
starttime() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null; }
same_proc() { [ -r "/proc/$1/stat" ] && [ "$(starttime "$1")" = "${SIGNALLED[$1]}" ]; }
for sig in TERM KILL; do
  list=$(python3 "$LAB_DIR/lib/labprocs.py" "$LAB_STATE")
  [ -z "$list" ] && break
  pids=$(echo "$list" | awk '{print $1}' | tr '\n' ' ')
  for p in $pids; do [ -n "${SIGNALLED[$p]:-}" ] || SIGNALLED[$p]=$(starttime "$p"); done
  say "sending $sig to $(echo $pids | wc -w) lab processes ($(echo "$list" | awk '{print $3}' | sort | uniq -c | awk '{printf "%s%s by %s", sep, $1, $2; sep=", "}'))"
  for g in $(echo "$list" | awk '{print $2}' | sort -u); do
    if [[ "$SELF_PGIDS" == *" $g "* ]]; then
      kill -$sig $(echo "$list" | awk -v g="$g" '$2 == g {print $1}') 2>/dev/null
    else
      kill -$sig -- "-$g" 2>/dev/null
    fi
  done
  if [ $sig = TERM ]; then wait_gone 15 $pids; else wait_gone 5 $pids; fi
done
# Reaped: gone from /proc (a zombie has exited but still holds its pid until its parent waits).
unreaped() { local p left=; for p in "${!SIGNALLED[@]}"; do same_proc "$p" && left="$left $p"; done; echo $left; }
deadline=$(( $(date +%s) + 30 ))
while [ -n "$(unreaped)" ] && [ "$(date +%s)" -lt "$deadline" ]; do
  for p in $(unreaped); do alive "$p" && kill -KILL "$p" 2>/dev/null; done
  sleep 0.2
done
if [ -n "$(unreaped)" ]; then
  for p in $(unreaped); do say "still present after 30 s: $(ps -o pid=,stat=,ppid=,args= -p "$p" 2>/dev/null | cut -c1-120)"; done
elif [ ${#SIGNALLED[@]} -gt 0 ]; then
  say "all ${#SIGNALLED[@]} signalled lab processes have exited and been reaped"
fi
rm -rf "$PIDS"

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
left_procs=$( { python3 "$LAB_DIR/lib/labprocs.py" "$LAB_STATE" | awk '{print $1}'; unreaped | tr ' ' '\n'; } | sort -un)
if [ -n "$left_ns$left_links$left_procs" ]; then
  say "INCOMPLETE: netns [$(echo $left_ns)] links [$(echo $left_links)] processes [$(echo $left_procs)]"
  exit 1
fi
say "DOWN in $(since "$T0")s: no asap2lab process (${#SIGNALLED[@]} signalled, all reaped), netns or link left"
