#!/usr/bin/env bash
# Records what the churn judge (churn.go) reads, on a PRIVATE Open vSwitch:
# its own ovsdb-server and ovs-vswitchd (userspace datapath) with their own
# run, db and log directories under a temp directory, ovs-vswitchd inside a
# namespace of its own (o38c-hv), two "guests" (o38c-a, o38c-b) on veths
# plugged into the bridge. Addresses in 198.18.139.0/24 only. Never touches
# /var/run/openvswitch, the lab or another recorder's namespaces.
#
#   sudo bash record-churn.sh churn     # writes ./churn/*
#
# One steady UDP flow (one 5-tuple, SEND_PPS datagrams a second) from
# o38c-a to o38c-b, and `dpctl/dump-flows -m` sampled every SAMPLE_SECS
# (each sequence: NN.txt, times.tsv with the seconds since its start, and
# coverage/show before and after it):
# (and coverage/show beside every dump: coverage-NN.txt)
#  steady/     the flow held, nothing done;
#  deleted/    `dpctl/del-flow <ufid>` after sample 3 (comes back at the
#              next packet), `revalidator/purge` after sample 7;
#  fast/       revalidator/purge after sample 3: the flow is re-added by
#              the next packet, well within the period: the sampling's
#              blind spot (same ufid, counters from zero);
#  modified/   `ovs-ofctl mod-flows` changes the OpenFlow rule's actions
#              after sample 3: the revalidator modifies the datapath flow.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
SAMPLES=${SAMPLES:-12}
SAMPLE_SECS=${SAMPLE_SECS:-1}
SEND_PPS=${SEND_PPS:-200}
. "$(dirname "$0")/private-ovs.sh"
private_ovs_up o38c 198.18.139
ovs-ofctl add-flow "$BR" 'priority=10,udp,actions=NORMAL'

ip netns exec $B python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.139.2", 9999))
while True:
    s.recv(2048)
' & echo $! >"$T/recv.pid"
ip netns exec $A python3 -c '
import socket, sys, time
pps = float(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.139.1", 40000))
while True:
    s.sendto(b"o38c", ("198.18.139.2", 9999))
    time.sleep(1 / pps)
' "$SEND_PPS" & echo $! >"$T/send.pid"
sleep 3

ufid() { "${APPCTL[@]}" dpctl/dump-flows -m | grep 'udp(src=40000' | sed -n 's/^\(ufid:[^,]*\),.*/\1/p' | head -1; }

# seq NAME ACTION_AT ACTION...: SAMPLES dumps; ACTION after sample ACTION_AT.
seq_rec() {
  local name=$1 at=$2; shift 2
  local d="$out/$name"; mkdir -p "$d"
  "${APPCTL[@]}" coverage/show >"$d/coverage-before.txt"
  printf '# sample\tt_s\n' >"$d/times.tsv"
  local t0; t0=$(date +%s.%N)
  for i in $(seq 0 $((SAMPLES - 1))); do
    local t; t=$(date +%s.%N)
    "${APPCTL[@]}" dpctl/dump-flows -m >"$d/$(printf %02d "$i").txt"
    "${APPCTL[@]}" coverage/show >"$d/coverage-$(printf %02d "$i").txt"
    printf '%02d\t%.3f\n' "$i" "$(awk -v a="$t" -v b="$t0" 'BEGIN{print a-b}')" >>"$d/times.tsv"
    if [ "$i" = "$at" ]; then
      "$@"
    fi
    sleep "$SAMPLE_SECS"
  done
  "${APPCTL[@]}" coverage/show >"$d/coverage-after.txt"
}

del_one() {
  local u; u=$(ufid)
  [ -n "$u" ] || { echo "del-flow: no flow to delete" >>"$ACTIONS"; return 0; }
  echo "dpctl/del-flow $u" >>"$ACTIONS"
  "${APPCTL[@]}" dpctl/del-flow "$u"
}
ACTIONS=$out/actions.txt
: >"$ACTIONS"
seq_rec steady -1 true
echo "deleted: after sample 3: del-flow; after sample 7: revalidator/purge" >>"$ACTIONS"
d_act() {
  if [ "$1" = 3 ]; then del_one; else echo "revalidator/purge" >>"$ACTIONS"; "${APPCTL[@]}" revalidator/purge; fi
}
# deleted/: two actions, at samples 3 and 7.
name=deleted; d="$out/$name"; mkdir -p "$d"
"${APPCTL[@]}" coverage/show >"$d/coverage-before.txt"
printf '# sample\tt_s\n' >"$d/times.tsv"
t0=$(date +%s.%N)
for i in $(seq 0 $((SAMPLES - 1))); do
  t=$(date +%s.%N)
  "${APPCTL[@]}" dpctl/dump-flows -m >"$d/$(printf %02d "$i").txt"
  "${APPCTL[@]}" coverage/show >"$d/coverage-$(printf %02d "$i").txt"
  printf '%02d\t%.3f\n' "$i" "$(awk -v a="$t" -v b="$t0" 'BEGIN{print a-b}')" >>"$d/times.tsv"
  case $i in 3|7) d_act "$i" ;; esac
  sleep "$SAMPLE_SECS"
done
"${APPCTL[@]}" coverage/show >"$d/coverage-after.txt"

fast3() { echo "fast: after sample 3: revalidator/purge (flows and ukeys gone; the next packet, 5 ms later, installs the flow again)" >>"$ACTIONS"; "${APPCTL[@]}" revalidator/purge; }
seq_rec fast 3 fast3
modify() { echo "modified: after sample 3: mod-flows udp actions=output:o38c-pb" >>"$ACTIONS"; ovs-ofctl mod-flows "$BR" 'priority=10,udp,actions=output:o38c-pb'; }
seq_rec modified 3 modify
"${APPCTL[@]}" upcall/show >"$out/upcall-show-end.txt"
