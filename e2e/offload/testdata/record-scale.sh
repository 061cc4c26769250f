#!/usr/bin/env bash
# Records what the rule-scale parsers (upcall.go, vswitchdlog.go) read, on a
# PRIVATE Open vSwitch: its own ovsdb-server and ovs-vswitchd (userspace
# datapath) with their own run, db and log directories under a temp
# directory, run inside a namespace of its own (o38-hv), with two
# "guests" (o38-a, o38-b) on veths plugged into the bridge. Addresses in
# 198.18.38.0/24 only. Never touches /var/run/openvswitch or the lab.
#
#   sudo bash record-scale.sh scale     # writes ./scale/*
#
# Steps (each output NAME has NAME.cmd: the command line and exit status):
#  1. idle upcall/show, dpif/show;
#  2. a ramp: RAMP_PORTS distinct UDP source ports from o38-a to o38-b at
#     RAMP_RATE new ports/s (one datagram each, resent every round so no
#     flow idles out), kept up 6 s after the last new port, upcall/show
#     and the datapath flow count sampled every SAMPLE_SECS (timeline/),
#     so the timeline ends on a plateau; then upcall/show, dpif/show, the count
#     and head of dpctl/dump-flows -m;
#  3. other_config:flow-limit=LIMIT while those flows exist (the revalidator
#     deletes them all: "twice as high"), then LIMIT_PORTS new source ports:
#     upcall/show at the limit, the log lines, coverage/show.
#  4. on exit: copies ovs-vswitchd.log, kills what it started by pid, deletes the namespaces and the
#     temp directory.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
RAMP_PORTS=${RAMP_PORTS:-2000}
RAMP_RATE=${RAMP_RATE:-500}
SAMPLE_SECS=${SAMPLE_SECS:-0.5}
LIMIT=${LIMIT:-200}
LIMIT_PORTS=${LIMIT_PORTS:-1000}
. "$(dirname "$0")/private-ovs.sh"
private_ovs_up o38 198.18.38
mkdir -p "$out/timeline"

# rec NAME CMD...: runs CMD, stdout to NAME, stderr to NAME.stderr (kept
# only when not empty), the command and its status to NAME.cmd; the
# temp directory is written /tmp/o38.XXXXXX in the .cmd files.
rec() {
  local name=$1; shift
  local rc=0
  "$@" >"$out/$name" 2>"$out/$name.stderr" || rc=$?
  [ -s "$out/$name.stderr" ] || rm -f "$out/$name.stderr"
  printf '%s\nexit %d\n' "$(printf '%q ' "$@" | sed "s#$T#/tmp/o38.XXXXXX#g")" "$rc" >"$out/$name.cmd"
}

# Reading the UDP source port in an action un-wildcards it: one datapath
# flow per source port (a 5-tuple per flow, as a stateful firewall gives).
ovs-ofctl add-flow "$BR" \
  'priority=10,udp,actions=move:NXM_OF_UDP_SRC[]->NXM_NX_REG0[0..15],NORMAL'


# The receiver: discards, so the sender's datagrams raise no ICMP.
ip netns exec $B python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.38.2", 9999))
while True:
    s.recv(2048)
' & echo $! >"$T/recv.pid"

# sender FIRST COUNT RATE SECS: COUNT source ports from FIRST, RATE new
# ports a second, then every port again each round until SECS have passed.
sender() {
  ip netns exec $A python3 - "$@" <<'EOF'
import socket, sys, time
first, count, rate, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
start = time.monotonic()
socks = []
while time.monotonic() - start < secs:
    want = min(count, int((time.monotonic() - start) * rate) + 1)
    while len(socks) < want:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("198.18.38.1", first + len(socks)))
        socks.append(s)
    for s in socks:
        s.sendto(b"o38", ("198.18.38.2", 9999))
    time.sleep(0.05)
EOF
}

sleep 2
rec upcall-show-idle.txt "${APPCTL[@]}" upcall/show
rec dpif-show-idle.txt "${APPCTL[@]}" dpif/show

# Step 2: the ramp, sampled.
ramp_secs=$(python3 -c "print($RAMP_PORTS/$RAMP_RATE + 6)")
sender 20000 "$RAMP_PORTS" "$RAMP_RATE" "$ramp_secs" & echo $! >"$T/send1.pid"
t0=$(date +%s.%N)
printf '# t_s\tdpctl_flows\tudp_flows\n' >"$out/timeline/counts.tsv"
i=0
while kill -0 "$(cat "$T/send1.pid")" 2>/dev/null; do
  t=$(date +%s.%N)
  "${APPCTL[@]}" upcall/show >"$out/timeline/upcall-show-$(printf %02d $i).txt"
  d=$("${APPCTL[@]}" dpctl/dump-flows)
  printf '%.3f\t%d\t%d\n' "$(awk -v a="$t" -v b="$t0" 'BEGIN{print a-b}')" "$(grep -c . <<<"$d" || true)" "$(grep -c 'udp(src=' <<<"$d" || true)" >>"$out/timeline/counts.tsv"
  i=$((i + 1))
  sleep "$SAMPLE_SECS"
done
wait "$(cat "$T/send1.pid")" || true
# The sender is gone: keep the flows alive while they are read.
sender 20000 "$RAMP_PORTS" 100000 4 & echo $! >"$T/send2.pid"
sleep 2
rec upcall-show-ramp.txt "${APPCTL[@]}" upcall/show
rec dpif-show-ramp.txt "${APPCTL[@]}" dpif/show
"${APPCTL[@]}" dpctl/dump-flows -m >"$T/dump.txt"
wc -l <"$T/dump.txt" >"$out/dump-flows-m-ramp.count"
grep -c 'udp(src=' "$T/dump.txt" >>"$out/dump-flows-m-ramp.count" || true
head -n 20 "$T/dump.txt" >"$out/dump-flows-m-ramp.head.txt"
wait "$(cat "$T/send2.pid")" || true

# Step 3: the limit.
sender 20000 "$RAMP_PORTS" 100000 3 & echo $! >"$T/send3.pid"
sleep 1
"${VSCTL[@]}" set Open_vSwitch . other_config:flow-limit=$LIMIT
wait "$(cat "$T/send3.pid")" || true
sender 30000 "$LIMIT_PORTS" 100000 4 & echo $! >"$T/send4.pid"
sleep 3
rec upcall-show-limit.txt "${APPCTL[@]}" upcall/show
"${APPCTL[@]}" dpctl/dump-flows >"$T/dump2.txt"
grep -c . "$T/dump2.txt" >"$out/dump-flows-limit.count" || true
rec coverage-limit.txt "${APPCTL[@]}" coverage/show
wait "$(cat "$T/send4.pid")" || true
sleep 1
