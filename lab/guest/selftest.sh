#!/bin/bash
# selftest.sh: prove guestctl.py without OpenStack.
#
# Builds a throwaway hypervisor (netns asap2lab-t-hv-$$ with its own ovsdb-server + ovs-vswitchd,
# OVS_RUNDIR in a temp dir, datapath netdev, br-int), plugs two guests on 198.18.77.0/24 (A by veth,
# B by OVS internal port), then checks:
#   - OVS Interface external_ids (iface-id, attached-mac, vm-uuid, iface-status, asap2lab-plug)
#   - guest NIC name, MAC, MTU, address, tx/tso/gso off, IPv6 off, plug-mode file
#   - jumbo ping across br-int (DF set, payload MTU-28), iperf3 TCP A -> B and B -> A (numbers printed)
#   - SSH from A into B as root with a generated key, host key checked against the key block
#     guestctl wrote to B's console log; own hostname and own tmpfs /run inside B; ping, iperf3,
#     tcpdump available in the guest
#   - a failing plug (unknown bridge) rolls back completely; a bad spec exits 2
#   - unplug (run twice: idempotent) leaves no netns, process, OVS port, veth or state dir
# Needs root, openvswitch-switch, openssh-server, iperf3, tcpdump, ethtool. Run: sudo lab/guest/selftest.sh
# Env: IPERF_SECONDS (default 5), GUEST_MTU (default 8950), GUEST_IPERF3 (optional: the iperf3 version
# the guests must run). ASAP2LAB_GUEST_EXEC reaches guestctl: guests of a release root, e.g.
#   ASAP2LAB_GUEST_EXEC=$PWD/lab/epoxy/rootfs-exec GUEST_IPERF3=3.18 lab/guest/selftest.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
GUESTCTL="$HERE/guestctl.py"
source "$HERE/testhv.sh"
PY=/usr/bin/python3
IPERF_SECONDS=${IPERF_SECONDS:-5}
GUEST_MTU=${GUEST_MTU:-8950}

HV=asap2lab-t-hv-$$
T=$(mktemp -d /tmp/asap2lab-t-XXXXXX)
OVSD=$T/ovs
STATE=$T/state
UA=$($PY -c 'import uuid; print(uuid.uuid4())')
UB=$($PY -c 'import uuid; print(uuid.uuid4())')
PA=$($PY -c 'import uuid; print(uuid.uuid4())')
PB=$($PY -c 'import uuid; print(uuid.uuid4())')
NSA=asap2lab-vm-$UA
NSB=asap2lab-vm-$UB
fails=0
skipped=0
UC='' UD='' sleeper=''
t0=$(date +%s.%N)
H0=$(hostname)

log() { printf '[selftest %6.2fs] %s\n' "$(echo "$(date +%s.%N) - $t0" | bc)" "$*"; }
ok() { log "ok: $*"; }
bad() { log "FAIL: $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
vsctl() { ovs-vsctl --db=unix:$OVSD/db.sock --timeout=30 "$@"; }
gctl() { $PY "$GUESTCTL" --state "$STATE" --hv-netns "$HV" --ovs-rundir "$OVSD" "$@"; }

for tool in ovsdb-server ovs-vswitchd ovs-vsctl /usr/sbin/sshd iperf3 tcpdump sockperf ethtool ssh-keygen bc; do
  command -v $tool >/dev/null || { echo "selftest: $tool not installed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "selftest: must run as root" >&2; exit 1; }

teardown() {
  local rc=$?
  set +e
  for u in $UA $UB $UC $UD; do gctl unplug --uuid $u >/dev/null 2>&1; done
  [ -z "$sleeper" ] || kill $sleeper 2>/dev/null
  testhv_down $HV $OVSD
  rm -rf "$T"
  exit $rc
}
trap teardown EXIT

# ---------------------------------------------------------------- throwaway hypervisor
mkdir -p $STATE
testhv_up $HV $OVSD >$T/testhv.log 2>&1 || { cat $T/testhv.log >&2; echo "selftest: throwaway hypervisor $HV failed" >&2; exit 1; }
log "hypervisor $HV up (OVS rundir $OVSD)"

ssh-keygen -q -t ed25519 -N '' -C asap2lab-selftest -f $T/id_ed25519

spec() {  # uuid port mac ip mode hostname
  cat <<EOF
{"uuid": "$1", "hostname": "$6", "mode": "$5", "authorized_keys": "$(cat $T/id_ed25519.pub)",
 "nics": [{"port_id": "$2", "mac": "$3", "bridge": "br-int", "mtu": $GUEST_MTU,
           "ips": ["$4/24"], "gateway": null}]}
EOF
}

# ---------------------------------------------------------------- negative paths first
if spec $UA $PA fa:16:3e:77:00:0a 198.18.77.10 bogus a | gctl plug --spec - >/dev/null 2>$T/err; then
  bad "bad spec (mode bogus) accepted"
else
  rc=$?; check "bad spec rejected with exit 2 ($(head -c 120 $T/err))" test $rc = 2
fi
spec $UA $PA fa:16:3e:77:00:0a 198.18.77.10 veth a | sed 's/"br-int"/"br-nope"/' > $T/spec-nope.json
if gctl plug --spec $T/spec-nope.json >/dev/null 2>$T/err; then
  bad "plug onto a missing bridge succeeded"
else
  check "plug onto missing bridge fails and rolls back: no netns" test ! -e /run/netns/$NSA
  check "... no state dir" test ! -e $STATE/guests/$UA
  check "... no representor left in $HV" test -z "$(ip -n $HV -o link show | grep rep || true)"
  check "... no OVS port left" test -z "$(vsctl list-ports br-int)"
fi

# ---------------------------------------------------------------- plug two guests
spec $UA $PA fa:16:3e:77:00:0a 198.18.77.10 veth guest-a | gctl plug --spec - >/dev/null
log "guest A plugged (veth): $NSA"
spec $UB $PB fa:16:3e:77:00:0b 198.18.77.11 internal guest-b | gctl plug --spec - >/dev/null
log "guest B plugged (internal port): $NSB"

RA=rep${PA:0:11}; RB=rep${PB:0:11}
for pair in "$RA $UA $PA fa:16:3e:77:00:0a veth" "$RB $UB $PB fa:16:3e:77:00:0b internal"; do
  set -- $pair
  ids=$(vsctl get Interface $1 external_ids)
  for kv in "iface-id=\"$3\"" "attached-mac=\"$4\"" "vm-uuid=\"$2\"" "iface-status=active" "asap2lab-plug=$5"; do
    check "OVS $1 external_ids has $kv" grep -qF "$kv" <<<"$ids"
  done
done
check "A's representor $RA is a veth in $HV" grep -q veth <(ip -d -n $HV link show $RA)
check "B's internal port left $HV" test -z "$(ip -n $HV link show $RB 2>/dev/null || true)"
check "A eth0 has its MAC/MTU" grep -q "mtu $GUEST_MTU .*link/ether fa:16:3e:77:00:0a" <(ip -n $NSA -o link show eth0)
check "B eth0 has its MAC/MTU" grep -q "mtu $GUEST_MTU .*link/ether fa:16:3e:77:00:0b" <(ip -n $NSB -o link show eth0)
check "A eth0 has 198.18.77.10/24" grep -q "inet 198.18.77.10/24" <(ip -n $NSA -o addr show eth0)
for ns in $NSA $NSB; do
  check "${ns:0:20}.. tx/tso/gso off" test "$(ip netns exec $ns ethtool -k eth0 | grep -cE '^(tx-checksumming|tcp-segmentation-offload|generic-segmentation-offload): off')" = 3
  check "${ns:0:20}.. IPv6 off" test "$(ip netns exec $ns sysctl -n net.ipv6.conf.all.disable_ipv6)" = 1
done
check "plug-mode files record veth / internal" test "$(cat $STATE/guests/$UA/plug-mode)/$(cat $STATE/guests/$UB/plug-mode)" = veth/internal

# ---------------------------------------------------------------- traffic
payload=$((GUEST_MTU - 28))
check "ping A -> B, DF, $payload byte payload" ip netns exec $NSA ping -c 3 -i 0.2 -W 2 -M "do" -s $payload -q 198.18.77.11
check "ping B -> A" ip netns exec $NSB ping -c 3 -i 0.2 -W 2 -q 198.18.77.10

ip netns exec $NSB iperf3 -s -D --pidfile $T/iperf3-b.pid --logfile $T/iperf3-b.log
for _ in $(seq 100); do [ -s $T/iperf3-b.pid ] && ip netns exec $NSB ss -ltn | grep -q ':5201 ' && break; sleep 0.05; done
# Both directions: A(veth) sends, then B(internal port) sends (-R).
for dir in "A(veth) -> B(internal)|" "B(internal) -> A(veth)|-R"; do
  name=${dir%|*}; rflag=${dir#*|}
  if ip netns exec $NSA iperf3 -c 198.18.77.11 -t $IPERF_SECONDS $rflag -J > $T/iperf3.json 2>&1; then
    $PY - "$T/iperf3.json" "$name" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for i in r['intervals']:
    s = i['sum']
    print('  iperf3 %5.2f-%5.2f s  %7.1f Mbit/s  retr %s' % (s['start'], s['end'], s['bits_per_second'] / 1e6, s.get('retransmits', '-')))
e = r['end']
print('  iperf3 TCP %s: sent %.1f Mbit/s, received %.1f Mbit/s, retransmits %d' % (
    sys.argv[2], e['sum_sent']['bits_per_second'] / 1e6, e['sum_received']['bits_per_second'] / 1e6, e['sum_sent']['retransmits']))
EOF
    check "iperf3 $name moved data" $PY -c "import json,sys; sys.exit(0 if json.load(open('$T/iperf3.json'))['end']['sum_received']['bytes'] > 0 else 1)"
  else
    bad "iperf3 $name: $(head -c 300 $T/iperf3.json)"
  fi
done
# A second server left running in B: unplug must kill processes it never recorded.
ip netns exec $NSB iperf3 -s -D -p 5202 --pidfile $T/iperf3-b2.pid
for _ in $(seq 100); do [ -s $T/iperf3-b2.pid ] && break; sleep 0.05; done
stray=$(cat $T/iperf3-b2.pid)

# ---------------------------------------------------------------- SSH into B from A
{ printf '198.18.77.11 '; sed -n '/BEGIN SSH HOST KEY KEYS/,/END SSH HOST KEY KEYS/p' $STATE/guests/$UB/console.log | grep '^ssh-'; } > $T/known_hosts
check "B's console has the fingerprint block" grep -q 'ec2: 256 SHA256:' $STATE/guests/$UB/console.log
check "guestctl console prints the log" grep -q 'guest-b login:' <(gctl console --uuid $UB)
SSHB=(ip netns exec "$NSA" ssh -i "$T/id_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=5
      -o StrictHostKeyChecking=yes -o "UserKnownHostsFile=$T/known_hosts" root@198.18.77.11)
if out=$("${SSHB[@]}" "hostname; id -u; findmnt -no FSTYPE /run; command -v iperf3 ping tcpdump sockperf | wc -l; findmnt -no FSTYPE /tmp; touch /tmp/asap2lab-t-mark-$$; ip -o addr show eth0; iperf3 --version | head -1" 2>&1); then
  echo "$out" | sed 's/^/  ssh> /'
  check "ssh: hostname is guest-b" test "$(sed -n 1p <<<"$out")" = guest-b
  check "ssh: logged in as root" test "$(sed -n 2p <<<"$out")" = 0
  check "ssh: /run is a private tmpfs" test "$(sed -n 3p <<<"$out")" = tmpfs
  check "ssh: iperf3, ping, tcpdump, sockperf available" test "$(sed -n 4p <<<"$out")" = 4
  check "ssh: eth0 is 198.18.77.11" grep -q 198.18.77.11 <<<"$out"
  [ -z "${GUEST_IPERF3:-}" ] || check "ssh: the guest runs iperf $GUEST_IPERF3" grep -q "^iperf $GUEST_IPERF3" <<<"$out"
  check "ssh: /tmp is a private tmpfs (file made there is not in the host's /tmp)" \
    test "$(sed -n 5p <<<"$out")" = tmpfs -a ! -e /tmp/asap2lab-t-mark-$$
else
  bad "ssh into guest B: $out"
fi
check "ssh with an unauthorised key is refused" bash -c "ssh-keygen -q -t ed25519 -N '' -f $T/other && ! ip netns exec $NSA ssh -i $T/other -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=$T/known_hosts root@198.18.77.11 true 2>/dev/null"
check "host name of the root namespace untouched" test "$(hostname)" = "$H0"

# ---------------------------------------------------------------- power off / on (B)
gctl stop --uuid $UB >/dev/null
check "stop: B unreachable" bash -c "! ip netns exec $NSA ping -c 1 -W 1 -q 198.18.77.11 >/dev/null"
gctl start --uuid $UB >/dev/null
check "start: ssh into B again" "${SSHB[@]}" true
ip netns exec $NSB iperf3 -s -D -p 5202 --pidfile $T/iperf3-b2.pid
for _ in $(seq 100); do [ -s $T/iperf3-b2.pid ] && break; sleep 0.05; done
stray=$(cat $T/iperf3-b2.pid)

# ---------------------------------------------------------------- unplug and verify nothing is left
pids=$(cat $STATE/guests/$UA/pids $STATE/guests/$UB/pids | $PY -c 'import json,sys; print(" ".join(str(json.loads(l)["pid"]) for l in sys.stdin))')
gctl unplug --uuid $UA --port-id $PA | sed 's/^/  unplug A: /'
gctl unplug --uuid $UB --port-id $PB | sed 's/^/  unplug B: /'
check "second unplug is a no-op that succeeds" gctl unplug --uuid $UA --port-id $PA
for ns in $NSA $NSB; do check "netns ${ns:0:20}.. gone" test ! -e /run/netns/$ns; done
gone() {  # exited and reaped (an exiting process is briefly a zombie until its parent reaps it)
  for _ in $(seq 100); do [ -e /proc/$1 ] || return 0; sleep 0.05; done
  ps -o pid,stat,comm -p $1 >&2; return 1
}
for p in $pids $stray; do check "process $p gone" gone $p; done
check "no OVS ports left on br-int" test -z "$(vsctl list-ports br-int)"
check "no OVS interface tagged asap2lab-plug left" test -z "$(vsctl --bare --columns=external_ids list Interface | grep asap2lab-plug || true)"
devs=$(ip -n $HV -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
check "only lo and OVS's own devices left in $HV ($devs)" test "$devs" = "br-int lo ovs-netdev "
check "state dirs gone" test -z "$(ls $STATE/guests)"

# ---------------------------------------------------------------- cleanup-all after a "crash"
# A plugged guest nobody unplugs, with a process of its own, plus a bare netns asap2lab-vm-<uuid>
# with no state dir: cleanup-all.sh must remove both. cleanup-all removes *every* asap2lab-vm-*
# netns on the machine, so this part runs only when no other guest (e.g. a running lab's) exists.
foreign=$(ip netns list | awk '{print $1}' | grep -c '^asap2lab-vm-' || true)
if [ "$foreign" != 0 ]; then
  log "SKIPPED cleanup-all check: $foreign guest netns of someone else present (a lab is up?)"
  skipped=1
else
UC=$($PY -c 'import uuid; print(uuid.uuid4())'); UD=$($PY -c 'import uuid; print(uuid.uuid4())')
PC=$($PY -c 'import uuid; print(uuid.uuid4())')
spec $UC $PC fa:16:3e:77:00:0c 198.18.77.12 internal guest-c | gctl plug --spec - >/dev/null
ip netns add asap2lab-vm-$UD
ip netns exec asap2lab-vm-$UD sleep 600 &
sleeper=$!
cpids=$(cat $STATE/guests/$UC/pids | $PY -c 'import json,sys; print(" ".join(str(json.loads(l)["pid"]) for l in sys.stdin))')
if out=$(ASAP2LAB_STATE=$STATE "$HERE/cleanup-all.sh" $OVSD 2>&1); then
  sed 's/^/  /' <<<"$out"
  check "cleanup-all: crashed guest's netns gone" test ! -e /run/netns/asap2lab-vm-$UC
  check "cleanup-all: bare guest netns gone" test ! -e /run/netns/asap2lab-vm-$UD
  wait $sleeper 2>/dev/null || true
  for p in $cpids $sleeper; do check "cleanup-all: process $p gone" gone $p; done
  check "cleanup-all: no OVS ports left" test -z "$(vsctl list-ports br-int)"
  check "cleanup-all: state dirs gone" test -z "$(ls $STATE/guests)"
else
  bad "cleanup-all.sh failed: $out"
fi
fi

if [ $fails = 0 ]; then
  if [ $skipped = 1 ]; then log "PASS (cleanup-all part skipped)"; else log "PASS"; fi
else log "$fails check(s) FAILED"; exit 1; fi
