#!/usr/bin/env bash
# Records what the failover outage judge (outage.go) reads: iperf3 UDP runs
# at a fixed rate with 0.1 s intervals on both sides (server -i 0.1: the
# server reports at its own interval, not the client's), during which the
# path is cut and restored with `ip link set`, as the failover profile does
# to a bond member. Three namespaces of its own: s11fo-a (client) -- veth --
# s11fo-r (a Linux bridge, the "bond": its leg toward the server is taken
# down and up) -- veth -- s11fo-b (server). Addresses in 198.18.213.0/24
# only; static neighbours, so no ARP is lost in the cut.
#
#   sudo bash record-outage.sh .        # writes ./v3.12-*.json + .cmd
#
# Each NAME.json is the client's -J output (with --get-server-output);
# NAME.cmd has the server and client commands, the cut's schedule and exit
# statuses. On exit it kills what it started by pid and deletes the
# namespaces.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
A=s11fo-a R=s11fo-r B=s11fo-b
T=$(mktemp -d /tmp/s11fo-ip.XXXXXX)
cleanup() {
  set +e
  for p in "$T"/*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
  sleep 0.5
  for n in $A $R $B; do ip netns del $n 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
for n in $A $R $B; do ip netns add $n; ip -n $n link set lo up; ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1; done
ip -n $R link add br0 type bridge; ip -n $R link set br0 up
ip -n $R link add ra type veth peer name eth0 netns $A
ip -n $R link add rb type veth peer name eth0 netns $B
for l in ra rb; do ip -n $R link set $l master br0; ip -n $R link set $l up; done
ip -n $A addr add 198.18.213.1/24 dev eth0; ip -n $A link set eth0 up
ip -n $B addr add 198.18.213.2/24 dev eth0; ip -n $B link set eth0 up
ip -n $A neigh add 198.18.213.2 lladdr "$(ip -n $B -br link show eth0 | awk '{print $3}')" dev eth0
ip -n $B neigh add 198.18.213.1 lladdr "$(ip -n $A -br link show eth0 | awk '{print $3}')" dev eth0
ip netns exec $A ping -q -c 3 -i 0.2 198.18.213.2 >/dev/null
{ iperf3 --version | head -1; uname -r; date -u +%Y-%m-%dT%H:%M:%SZ; } >"$out/versions.txt"

# run NAME PORT SECS DOWN UP RATE LEN [setup...]: one UDP run of SECS at
# RATE with LEN-byte datagrams; `ip link set rb down` DOWN s after the
# client started and `up` UP s after (- = never within the run; the link
# is then brought up 1 s after the client's -t so the control connection
# can deliver the results).
run() {
  local name=$1 port=$2 secs=$3 down=$4 up=$5 rate=$6 len=$7
  local scmd="iperf3 -s -1 -J -i 0.1 -B 198.18.213.2 -p $port"
  local ccmd="iperf3 -c 198.18.213.2 -p $port -J --get-server-output -t $secs -i 0.1 -P 1 -u -b $rate -l $len"
  ip netns exec $B $scmd >"$T/$name.server.json" 2>&1 & echo $! >"$T/server.pid"
  sleep 0.5
  local t0; t0=$(date +%s.%N)
  ip netns exec $A $ccmd >"$out/$name.json" 2>"$T/$name.client.err" & echo $! >"$T/client.pid"
  local sched=""
  if [ "$down" != - ]; then
    sleep "$down"; ip -n $R link set rb down
    sched="rb down at +$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{printf "%.3f", a-b}') s"
    if [ "$up" != - ]; then
      sleep "$(awk -v a="$up" -v b="$down" 'BEGIN{print a-b}')"; ip -n $R link set rb up
      sched="$sched, up at +$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{printf "%.3f", a-b}') s"
    else
      sleep "$(awk -v a="$secs" -v b="$down" 'BEGIN{print a-b+1}')"; ip -n $R link set rb up
      sched="$sched, up at +$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{printf "%.3f", a-b}') s (after the client's -t)"
    fi
  fi
  local crc=0 src=0
  wait "$(cat "$T/client.pid")" || crc=$?
  wait "$(cat "$T/server.pid")" || src=$?
  printf 'server (ip netns exec %s): %s\nclient (ip netns exec %s): %s\nexit client %d server %d\ncut: %s\n' \
    $B "$scmd" $A "$ccmd" $crc $src "${sched:-none}" >"$out/$name.cmd"
  ip netns exec $A ping -q -c 2 -i 0.2 198.18.213.2 >/dev/null || true
}

run v3.12-udp-20m-l1000-clean 5401 4 - - 20M 1000
run v3.12-udp-20m-l1000-cut-1s 5402 6 2 3 20M 1000
run v3.12-udp-20m-l1000-cut-short 5403 5 2 2.15 20M 1000
run v3.12-udp-20m-l1000-cut-at-end 5404 4 3.5 - 20M 1000
# Spread loss, no gap: the server's namespace drops one datagram in 50 at
# random before the socket (nftables numgen; this kernel has no netem).
ip netns exec $B nft -f - <<'NFT'
table inet s11fo {
  chain input {
    type filter hook input priority 0;
    udp dport 5405 numgen random mod 50 == 0 drop
  }
}
NFT
run v3.12-udp-20m-l1000-spread-2pct 5405 4 - - 20M 1000
echo "on s11fo-b: nft 'table inet s11fo { chain input { type filter hook input priority 0; udp dport 5405 numgen random mod 50 == 0 drop } }'" >>"$out/v3.12-udp-20m-l1000-spread-2pct.cmd"
ip netns exec $B nft delete table inet s11fo
