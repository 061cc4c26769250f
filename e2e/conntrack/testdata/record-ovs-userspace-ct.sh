#!/bin/bash
# Records OVS's userspace conntrack (datapath netdev, the lab's) under a
# stateful firewall in the shape Neutron's openvswitch driver programs:
# every IPv4 packet through ct(zone=1) and recirculation, new connections
# committed, established ones forwarded. Two veth "guests" on br-int of a
# throwaway namespace, then iperf3 TCP -P 4, UDP -P 2 and ping between them;
# during the flows the conntrack table (OVS's and the kernel's), the
# datapath flows and the table's size.
# Usage: record-ovs-userspace-ct.sh OUTDIR   (root; needs openvswitch-switch,
# iperf3, iproute2, ethtool). Everything is named ctrec-* and removed on
# exit. Addresses: 198.18.212.0/24 inside the namespaces only.
set -euo pipefail
OUT=${1:?usage: $0 OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
D=$(mktemp -d /tmp/ctrec-ovs.XXXXXX)
HV=ctrec-hv; G1=ctrec-g1; G2=ctrec-g2
export OVS_RUNDIR=$D OVS_DBDIR=$D OVS_LOGDIR=$D OVS_SYSCONFDIR=$D
hv() { ip netns exec $HV "$@"; }

cleanup() {
	set +e
	for p in "$D"/iperf3.pid "$D"/ovs-vswitchd.pid "$D"/ovsdb-server.pid; do
		[ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	sleep 1
	ip netns del $G1 2>/dev/null; ip netns del $G2 2>/dev/null; ip netns del $HV 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT

ip netns add $HV; ip netns add $G1; ip netns add $G2
hv ip link set lo up
ovsdb-tool create "$D/conf.db" /usr/share/openvswitch/vswitch.ovsschema
hv ovsdb-server "$D/conf.db" --remote=punix:"$D/db.sock" --pidfile="$D/ovsdb-server.pid" \
	--log-file="$D/ovsdb-server.log" --detach
hv ovs-vsctl --no-wait init
hv ovs-vswitchd unix:"$D/db.sock" --pidfile="$D/ovs-vswitchd.pid" --log-file="$D/ovs-vswitchd.log" --detach
hv ovs-vsctl add-br br-int -- set bridge br-int datapath_type=netdev
for i in 1 2; do
	g=ctrec-g$i; rep=ctrec-rep$i
	ip link add name $rep netns $HV type veth peer name eth1 netns $g
	hv ip link set $rep up
	ip netns exec $g ip link set lo up
	ip netns exec $g ip link set eth1 address 02:00:c6:12:d4:0$i mtu 1500 up
	ip netns exec $g ip addr add 198.18.212.$i/24 dev eth1
	ip netns exec $g ethtool -K eth1 tx off tso off gso off >/dev/null
	hv ovs-vsctl add-port br-int $rep
done
hv ovs-ofctl del-flows br-int
hv ovs-ofctl add-flow br-int "table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1,zone=1)"
hv ovs-ofctl add-flow br-int "table=0,priority=10,actions=NORMAL"
hv ovs-ofctl add-flow br-int "table=1,priority=100,ip,ct_state=+trk+new,actions=ct(commit,zone=1),NORMAL"
hv ovs-ofctl add-flow br-int "table=1,priority=100,ip,ct_state=+trk+est,actions=NORMAL"
hv ovs-ofctl add-flow br-int "table=1,priority=90,ip,ct_state=+trk+rel,actions=NORMAL"
hv ovs-ofctl add-flow br-int "table=1,priority=0,actions=drop"

run() { # run NAME CMD...: stdout to NAME, stderr to NAME.stderr, the command line to NAME.cmd
	local name=$1; shift
	printf '%s\n' "$*" > "$OUT/$name.cmd"
	set +e; hv "$@" > "$OUT/$name" 2> "$OUT/$name.stderr"; echo "exit $?" >> "$OUT/$name.cmd"; set -e
}

ip netns exec $G1 ping -c 3 -W 2 198.18.212.2 > /dev/null
ip netns exec $G2 iperf3 -s -D -I "$D/iperf3.pid" -p 5201
sleep 1
ip netns exec $G1 iperf3 -c 198.18.212.2 -p 5201 -P 4 -t 8 -J > "$OUT/iperf3-tcp-p4.json" &
IPERF=$!
sleep 3
run dump-conntrack-tcp.txt ovs-appctl dpctl/dump-conntrack
run dump-conntrack-tcp-m.txt ovs-appctl dpctl/dump-conntrack -m
run dpctl-flows-tcp-m.txt ovs-appctl dpctl/dump-flows -m
run proc-nf_conntrack-hv.txt cat /proc/net/nf_conntrack
run ct-nconns.txt ovs-appctl dpctl/ct-get-nconns
run ct-maxconns.txt ovs-appctl dpctl/ct-get-maxconns
wait $IPERF
ip netns exec $G1 iperf3 -c 198.18.212.2 -p 5201 -u -b 50M -P 2 -t 6 -J > "$OUT/iperf3-udp-p2.json" &
IPERF=$!
ip netns exec $G1 ping -c 20 -i 0.2 198.18.212.2 > /dev/null &
PING=$!
sleep 3
run dump-conntrack-udp.txt ovs-appctl dpctl/dump-conntrack
wait $IPERF $PING
{ uname -r; ovs-vsctl --version | head -1; iperf3 --version | head -1; } > "$OUT/versions.txt"
echo "recorded into $OUT"
