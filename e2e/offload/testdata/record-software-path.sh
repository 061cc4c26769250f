#!/bin/bash
# Records the software-path ("NIC standard") outputs of the three offload
# checks on a machine without cls_flower or an openvswitch kernel module:
# a userspace OVS (datapath netdev) in a throwaway namespace, two veth
# "guests" on br-int, flood ping and iperf3 between them.
# Usage: record-software-path.sh OUTDIR   (root; needs openvswitch-switch,
# tcpdump, iperf3, iproute2, ethtool). Everything is named offrec-* and
# removed on exit. Addresses: 198.18.210.0/24 inside the namespaces only.
set -euo pipefail
OUT=${1:?usage: $0 OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
D=$(mktemp -d /tmp/offrec-ovs.XXXXXX)
HV=offrec-hv; G1=offrec-g1; G2=offrec-g2
MAC1=02:00:c6:12:d2:01; MAC2=02:00:c6:12:d2:02
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
	g=offrec-g$i; rep=offrec-rep$i; mac=MAC$i
	ip link add name $rep netns $HV type veth peer name eth1 netns $g
	hv ip link set $rep up
	ip netns exec $g ip link set lo up
	ip netns exec $g ip link set eth1 address ${!mac} mtu 1500 up
	ip netns exec $g ip addr add 198.18.210.$i/24 dev eth1
	ip netns exec $g ethtool -K eth1 tx off tso off gso off >/dev/null
	hv ovs-vsctl add-port br-int $rep -- set Interface $rep \
		external_ids:iface-id=offrec-port-$i external_ids:attached-mac=${!mac} \
		external_ids:iface-status=active
done

run() { # run NAME CMD...: stdout to NAME, stderr to NAME.stderr, the command line to NAME.cmd
	local name=$1; shift
	printf '%s\n' "$*" > "$OUT/$name.cmd"
	set +e; hv "$@" > "$OUT/$name" 2> "$OUT/$name.stderr"; echo "exit $?" >> "$OUT/$name.cmd"; set -e
}

ip netns exec $G1 ping -c 3 -W 2 198.18.210.2 > /dev/null
ip netns exec $G1 ping -f -c 1000 198.18.210.2 > "$OUT/ping-flood.txt"
run dpctl-after-ping-m.txt ovs-appctl dpctl/dump-flows -m
run ovs-vsctl-find-iface.txt ovs-vsctl --bare --columns=name find Interface external_ids:iface-id=offrec-port-1
run ovs-vsctl-find-iface-missing.txt ovs-vsctl --bare --columns=name find Interface external_ids:iface-id=no-such-port
run tc-noqdisc.json tc -s -j filter show dev offrec-rep1 ingress
run tc-noqdisc.txt tc -s filter show dev offrec-rep1 ingress
run tc-nodev.txt tc -s filter show dev offrec-nosuch ingress
run tc-qdisc-noingress.txt tc qdisc show dev offrec-rep1 ingress

ip netns exec $G2 iperf3 -s -D -I "$D/iperf3.pid" -p 5201
sleep 1
ip netns exec $G1 iperf3 -c 198.18.210.2 -p 5201 -t 12 -J > "$OUT/iperf3-tcp.json" &
IPERF=$!
sleep 3
run dpctl-tcp-offloaded-1.txt ovs-appctl dpctl/dump-flows -m type=offloaded
run dpctl-tcp-all-1.txt ovs-appctl dpctl/dump-flows -m
run dpctl-tcp-plain.txt ovs-appctl dpctl/dump-flows
FILTER="((ether src $MAC1 and ether dst $MAC2) or (ether src $MAC2 and ether dst $MAC1)) and ip and tcp and not (udp port 67 or udp port 68)"
run tcpdump-rep-tcp.txt timeout -s INT 2 tcpdump -nn -e -tt -l -i offrec-rep1 -c 300 "$FILTER"
run dpctl-tcp-offloaded-2.txt ovs-appctl dpctl/dump-flows -m type=offloaded
run dpctl-tcp-all-2.txt ovs-appctl dpctl/dump-flows -m
wait $IPERF

ip netns exec $G1 iperf3 -c 198.18.210.2 -p 5201 -u -b 100M -t 8 -J > "$OUT/iperf3-udp.json" &
IPERF=$!
sleep 3
FILTER="((ether src $MAC1 and ether dst $MAC2) or (ether src $MAC2 and ether dst $MAC1)) and ip and udp and not (udp port 67 or udp port 68)"
run tcpdump-rep-udp-count.txt tcpdump -nn -e -tt -l -i offrec-rep2 -c 200 "$FILTER"
run dpctl-udp-all.txt ovs-appctl dpctl/dump-flows -m
wait $IPERF
# a capture with nothing matching: the flow has ended
run tcpdump-rep-idle.txt timeout -s INT 1 tcpdump -nn -e -tt -l -i offrec-rep1 -c 100 "$FILTER"
run tcpdump-nodev.txt timeout -s INT 1 tcpdump -nn -e -tt -l -i offrec-nosuch -c 100 "$FILTER"
{ uname -r; tc -V; ovs-vsctl --version | head -1; tcpdump --version 2>&1 | head -1; iperf3 --version | head -1; } > "$OUT/versions.txt"
echo "recorded into $OUT"
