#!/bin/bash
# Records the inputs of the counters check (`ip -s -j link show`, `ip -j
# stats show ... cpu_hit`) and of the representor capture's positive control
# (the same tcpdump on the guest's own interface) on a machine without NIC
# offload: a veth pair between two throwaway namespaces, offrec2-a (the
# "hypervisor", holding the "representor" end offrec2-rep) and offrec2-b (the
# "guest", eth1), with a flood ping between them.
# Usage: record-counters.sh OUTDIR   (root; needs iproute2 >= 5.18 for
# `ip stats`, tcpdump, ping, coreutils timeout). Everything is named offrec2-*
# and removed on exit. Addresses: 198.18.211.0/24 inside the namespaces only.
set -euo pipefail
OUT=${1:?usage: $0 OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
HV=offrec2-a; G=offrec2-b
MAC1=02:00:c6:12:d3:01; MAC2=02:00:c6:12:d3:02
D=$(mktemp -d /tmp/offrec2.XXXXXX)
export LC_ALL=C

cleanup() {
	set +e
	ip netns del $HV 2>/dev/null; ip netns del $G 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT

ip netns add $HV; ip netns add $G
for ns in $HV $G; do
	# No IPv6: router solicitations and DAD would move the idle counters.
	ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip netns exec $ns ip link set lo up
done
ip link add name offrec2-rep netns $HV address $MAC1 type veth peer name eth1 netns $G address $MAC2
ip -n $HV addr add 198.18.211.1/24 dev offrec2-rep
ip -n $G addr add 198.18.211.2/24 dev eth1
ip -n $HV link set offrec2-rep up
ip -n $G link set eth1 up
ip netns exec $G ping -c 2 -W 2 198.18.211.1 > /dev/null

run() { # run NS NAME CMD...: stdout to NAME, stderr to NAME.stderr, the command line to NAME.cmd
	local ns=$1 name=$2; shift 2
	printf '%s\n' "$*" > "$OUT/$name.cmd"
	set +e; ip netns exec "$ns" "$@" > "$OUT/$name" 2> "$OUT/$name.stderr"; echo "exit $?" >> "$OUT/$name.cmd"; set -e
}

# Idle: nothing sent for 2 s.
run $HV ip-link-rep-idle-before.json ip -s -j link show dev offrec2-rep
run $G ip-link-guest-idle-before.json ip -s -j link show dev eth1
sleep 2
run $HV ip-link-rep-idle-after.json ip -s -j link show dev offrec2-rep
run $G ip-link-guest-idle-after.json ip -s -j link show dev eth1

# A flow: 20000 echo requests and their replies cross both ends of the pair.
run $HV ip-link-rep-before.json ip -s -j link show dev offrec2-rep
run $HV ip-stats-cpuhit-rep-before.json ip -j stats show dev offrec2-rep group offload subgroup cpu_hit
run $G ip-link-guest-before.json ip -s -j link show dev eth1
ip netns exec $G ping -f -c 20000 198.18.211.1 | tail -n 3 > "$OUT/ping-flood-counters.txt"
run $HV ip-link-rep-after.json ip -s -j link show dev offrec2-rep
run $HV ip-stats-cpuhit-rep-after.json ip -j stats show dev offrec2-rep group offload subgroup cpu_hit
run $G ip-link-guest-after.json ip -s -j link show dev eth1

# The representor capture and its control on the guest, in the same window:
# during a flood ping, then once more after it has ended.
FILTER="((ether src $MAC1 and ether dst $MAC2) or (ether src $MAC2 and ether dst $MAC1)) and ip and icmp and not (udp port 67 or udp port 68)"
pair() { # pair SUFFIX: both captures at once
	run $HV tcpdump-pair-rep-$1.txt timeout -s INT 2s tcpdump -nn -e -tt -l -i offrec2-rep -c 300 "$FILTER" &
	local rep=$!
	run $G tcpdump-pair-guest-$1.txt timeout -s INT 2s tcpdump -nn -e -tt -l -i eth1 -c 300 "$FILTER"
	wait $rep
}
ip netns exec $G ping -f -w 4 198.18.211.1 > /dev/null &
PING=$!
sleep 1
pair icmp
wait $PING || true
pair noflow

# Failures: a missing device, and the tools missing (a PATH without them).
run $HV ip-link-nodev.txt ip -s -j link show dev offrec2-nosuch
mkdir "$D/bin"; ln -s "$(command -v timeout)" "$D/bin/timeout"
run $G tcpdump-guest-missing.txt env PATH="$D/bin" timeout -s INT 1s tcpdump -nn -e -tt -l -i eth1 -c 300 "$FILTER"
run $G ip-missing.txt env PATH="$D/bin" /bin/sh -c "ip -s -j link show dev eth1"
sed -i "s#$D#/tmp/offrec2.XXXXXX#g" "$OUT"/tcpdump-guest-missing.txt.cmd "$OUT"/ip-missing.txt.cmd
{ uname -r; ip -V; tcpdump --version 2>&1 | head -1; timeout --version | head -1; } > "$OUT/versions-counters.txt"
echo "recorded into $OUT"
