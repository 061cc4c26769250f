#!/usr/bin/env bash
# Records what the aging and fragment judges (aging.go, fragments.go) read,
# on a PRIVATE Open vSwitch: its own ovsdb-server and ovs-vswitchd
# (userspace datapath, datapath_type=netdev) with their own run, db and log
# directories under a temp directory, run inside a namespace of its own
# (o38f-hv), with two "guests" (o38f-a, o38f-b) on veths of MTU 1500
# plugged into the bridge. Addresses in 198.18.39.0/24 only. Never touches
# /var/run/openvswitch or the lab.
#
#   sudo bash record-aging-frag.sh aging    # writes ./aging/*
#
# Steps (each output NAME has NAME.cmd: the command line and exit status):
#  1. fragments: iperf3 -u -l 4000 (datagrams above the veth's MTU 1500)
#     from a pinned client port; during it dpctl/dump-flows -m, the typed
#     offloaded dump and dpif/dump-flows; the same with -l 1400 (no
#     fragment) from another port;
#  2. aging: a UDP flow from client port 40003, dumped during it, just
#     after it (the idle too short: its flows are still there), after
#     IDLE_SECS of idle (max-idle 10 s by default: gone), then the same
#     5-tuple (--cport 40003) again, the datapath dumped every SAMPLE_SECS
#     from the restart (timeline/: each dump's time since the client was
#     launched in timeline/times.tsv);
#  3. on exit: copies ovs-vswitchd.log, kills what it started by pid,
#     deletes the namespaces and the temp directory.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
IDLE_SECS=${IDLE_SECS:-14}
SAMPLE_SECS=${SAMPLE_SECS:-0.1}
HV=o38f-hv A=o38f-a B=o38f-b BR=o38f-br
T=$(mktemp -d /tmp/o38f.XXXXXX)
mkdir -p "$T/run" "$T/db" "$T/log" "$out/timeline"
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

rec() {
  local name=$1; shift
  local rc=0
  "$@" >"$out/$name" 2>"$out/$name.stderr" || rc=$?
  [ -s "$out/$name.stderr" ] || rm -f "$out/$name.stderr"
  printf '%s\nexit %d\n' "$(printf '%q ' "$@" | sed "s#$T#/tmp/o38f.XXXXXX#g")" "$rc" >"$out/$name.cmd"
}

ip netns add $HV; ip netns add $A; ip netns add $B
for n in $HV $A $B; do
  ip -n $n link set lo up
  ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1
done
ip -n $HV link add o38f-pa type veth peer name eth1 netns $A
ip -n $HV link add o38f-pb type veth peer name eth1 netns $B
ip -n $HV link set o38f-pa up; ip -n $HV link set o38f-pb up
ip -n $A link set eth1 address 02:00:c6:12:27:01
ip -n $B link set eth1 address 02:00:c6:12:27:02
ip -n $A addr add 198.18.39.1/24 dev eth1; ip -n $A link set eth1 up
ip -n $B addr add 198.18.39.2/24 dev eth1; ip -n $B link set eth1 up
for n in $A $B; do ip netns exec $n ethtool -K eth1 tx off tso off gso off >/dev/null; done
ip -n $A neigh add 198.18.39.2 lladdr 02:00:c6:12:27:02 dev eth1
ip -n $B neigh add 198.18.39.1 lladdr 02:00:c6:12:27:01 dev eth1

ovsdb-tool create "$T/db/conf.db" /usr/share/openvswitch/vswitch.ovsschema
in_hv ovsdb-server "$T/db/conf.db" --remote=punix:$T/run/db.sock \
  --pidfile=$T/run/ovsdb-server.pid --unixctl=$T/run/ovsdb-server.ctl \
  --log-file=$T/log/ovsdb-server.log -vconsole:off --no-chdir --detach
"${VSCTL[@]}" --no-wait init
in_hv ovs-vswitchd unix:$T/run/db.sock --pidfile=$T/run/ovs-vswitchd.pid \
  --unixctl=$T/run/ovs-vswitchd.ctl --log-file=$T/log/ovs-vswitchd.log \
  -vconsole:off --no-chdir --detach
"${VSCTL[@]}" add-br $BR -- set Bridge $BR datapath_type=netdev \
  -- add-port $BR o38f-pa -- add-port $BR o38f-pb
# A firewall-like rule reads both UDP ports: the datapath flows of the
# UDP traffic carry its 5-tuple (udp(src=..,dst=..)).
ovs-ofctl add-flow unix:$T/run/$BR.mgmt \
  'priority=10,udp,actions=move:NXM_OF_UDP_SRC[]->NXM_NX_REG0[0..15],move:NXM_OF_UDP_DST[]->NXM_NX_REG1[0..15],NORMAL'

{ ovs-vswitchd --version | head -1; iperf3 --version | head -1; uname -r; date -u +%Y-%m-%dT%H:%M:%SZ; } >"$out/versions.txt"
rec max-idle.txt "${VSCTL[@]}" get Open_vSwitch . other_config:max-idle
rec mtu.txt ip -n $A -j link show eth1

ip netns exec $B iperf3 -s -D -B 198.18.39.2 -p 5201 --pidfile "$T/iperf3.pid"
sleep 1

# client NAME ARGS...: iperf3 UDP client from o38f-a, its JSON to NAME.
client() {
  local name=$1; shift
  ip netns exec $A iperf3 -c 198.18.39.2 -p 5201 -u -J "$@" >"$out/$name" 2>"$out/$name.stderr" || true
  [ -s "$out/$name.stderr" ] || rm -f "$out/$name.stderr"
}

# Step 1: fragments, then the same flow below the MTU.
client iperf3-frag.json -b 20M -l 4000 -t 6 --cport 40001 & cpid=$!
sleep 3
rec dpctl-frag-m.txt "${APPCTL[@]}" dpctl/dump-flows -m
rec dpctl-frag-offloaded.txt "${APPCTL[@]}" dpctl/dump-flows -m type=offloaded
rec dpif-frag.txt "${APPCTL[@]}" dpif/dump-flows $BR
wait $cpid
sleep "$IDLE_SECS"
client iperf3-nofrag.json -b 20M -l 1400 -t 6 --cport 40002 & cpid=$!
sleep 3
rec dpctl-nofrag-m.txt "${APPCTL[@]}" dpctl/dump-flows -m
rec dpif-nofrag.txt "${APPCTL[@]}" dpif/dump-flows $BR
wait $cpid
sleep "$IDLE_SECS"

# Step 2: aging.
client iperf3-aging-1.json -b 10M -l 1400 -t 4 --cport 40003 & cpid=$!
sleep 2
rec dpctl-aging-during.txt "${APPCTL[@]}" dpctl/dump-flows -m
wait $cpid
sleep 2
rec dpctl-aging-idle-short.txt "${APPCTL[@]}" dpctl/dump-flows -m
sleep "$IDLE_SECS"
rec dpctl-aging-idle.txt "${APPCTL[@]}" dpctl/dump-flows -m
t0=$(date +%s.%N)
client iperf3-aging-2.json -b 10M -l 1400 -t 4 --cport 40003 & cpid=$!
printf '# sample\tt_s (from the client launch)\n' >"$out/timeline/times.tsv"
for i in $(seq -w 0 29); do
  t=$(date +%s.%N)
  "${APPCTL[@]}" dpctl/dump-flows -m >"$out/timeline/dpctl-$i.txt"
  printf '%s\t%.3f\n' "$i" "$(awk -v a="$t" -v b="$t0" 'BEGIN{print a-b}')" >>"$out/timeline/times.tsv"
  sleep "$SAMPLE_SECS"
done
rec dpctl-aging-restarted.txt "${APPCTL[@]}" dpctl/dump-flows -m
wait $cpid
sleep 1
