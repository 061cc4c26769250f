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
HV=o38c-hv A=o38c-a B=o38c-b
T=$(mktemp -d /tmp/o38c.XXXXXX)
mkdir -p "$T/run" "$T/db" "$T/log"
export OVS_RUNDIR=$T/run OVS_DBDIR=$T/db OVS_LOGDIR=$T/log

cleanup() {
  set +e
  for p in "$T"/run/*.pid "$T"/*.pid; do
    [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
  done
  sleep 1
  for n in $HV $A $B; do ip netns del $n 2>/dev/null; done
  cp "$T/log/ovs-vswitchd.log" "$out/ovs-vswitchd.log" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

in_hv() { ip netns exec $HV "$@"; }
VSCTL=(ovs-vsctl --db=unix:$T/run/db.sock --timeout=30)
APPCTL=(ovs-appctl --timeout=30 -t $T/run/ovs-vswitchd.ctl)
BR=unix:$T/run/o38c-br.mgmt

ip netns add $HV; ip netns add $A; ip netns add $B
for n in $HV $A $B; do
  ip -n $n link set lo up
  ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1
done
ip -n $HV link add o38c-pa type veth peer name eth0 netns $A
ip -n $HV link add o38c-pb type veth peer name eth0 netns $B
ip -n $HV link set o38c-pa up; ip -n $HV link set o38c-pb up
ip -n $A addr add 198.18.139.1/24 dev eth0; ip -n $A link set eth0 up
ip -n $B addr add 198.18.139.2/24 dev eth0; ip -n $B link set eth0 up
ip -n $A neigh add 198.18.139.2 lladdr "$(ip -n $B -br link show eth0 | awk '{print $3}')" dev eth0
ip -n $B neigh add 198.18.139.1 lladdr "$(ip -n $A -br link show eth0 | awk '{print $3}')" dev eth0

ovsdb-tool create "$T/db/conf.db" /usr/share/openvswitch/vswitch.ovsschema
in_hv ovsdb-server "$T/db/conf.db" --remote=punix:$T/run/db.sock \
  --pidfile=$T/run/ovsdb-server.pid --unixctl=$T/run/ovsdb-server.ctl \
  --log-file=$T/log/ovsdb-server.log -vconsole:off --no-chdir --detach
"${VSCTL[@]}" --no-wait init
in_hv ovs-vswitchd unix:$T/run/db.sock --pidfile=$T/run/ovs-vswitchd.pid \
  --unixctl=$T/run/ovs-vswitchd.ctl --log-file=$T/log/ovs-vswitchd.log \
  -vconsole:off --no-chdir --detach
"${VSCTL[@]}" add-br o38c-br -- set Bridge o38c-br datapath_type=netdev \
  -- add-port o38c-br o38c-pa -- add-port o38c-br o38c-pb
ovs-ofctl add-flow "$BR" 'priority=10,udp,actions=NORMAL'
{ ovs-vswitchd --version | head -1; uname -r; date -u +%Y-%m-%dT%H:%M:%SZ; } >"$out/versions.txt"

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
