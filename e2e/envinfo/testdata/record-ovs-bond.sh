#!/usr/bin/env bash
# Records what ParseOVSBond (ovsbond.go) reads: `ovs-appctl bond/show <bond>`
# of an OVS bond on the userspace datapath, the lab's failover shape (issue
# 38 item 1), on a PRIVATE Open vSwitch: its own ovsdb-server and
# ovs-vswitchd (datapath_type=netdev) with their own run, db and log
# directories under a temp directory, run inside a namespace of its own
# (s11fo-hv). br-phy's uplink is the bond bond-ul of two veth legs ul0/ul1
# whose peers sit on a Linux bridge in s11fo-tor (the "ToR"); br-phy's
# internal port pings the ToR so the bond carries traffic. Addresses in
# 198.18.212.0/24 only. Never touches /var/run/openvswitch or the lab.
#
#   sudo bash record-ovs-bond.sh ovsbond     # writes ./ovsbond/*
#
# For each mode (active-backup with carrier detection; active-backup with
# miimon 100 ms, updelay 200, downdelay 100; balance-slb; balance-tcp with
# lacp=off), each output NAME has NAME.cmd (the command line, exit status):
#   <mode>-before.txt   bond/show, both legs up, after traffic
#   <mode>-down.txt     bond/show 1.5 s after `ip link set <active> down`
#   <mode>-restored.txt bond/show 1.5 s after `ip link set <it> up`
#   <mode>-other-config.txt  `ovs-vsctl get Port bond-ul other_config`
#                       (detect mode and miimon interval: bond/show lacks them)
#   <mode>-link-resets-{before,down,restored}.txt  each leg's Interface
#                       link_resets (OVS's count of link state changes)
#   <mode>-leg.txt      the leg taken down (the active member before)
#   <mode>-down-cmd.txt.cmd, <mode>-up-cmd.txt.cmd  the leg's commands
# and no-such-bond.txt (bond/show of a bond that does not exist).
# On exit: kills what it started by pid, deletes the namespaces and the
# temp directory.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
HV=s11fo-hv TOR=s11fo-tor
T=$(mktemp -d /tmp/s11fo-ovs.XXXXXX)
mkdir -p "$T/run" "$T/db" "$T/log"
export OVS_RUNDIR=$T/run OVS_DBDIR=$T/db OVS_LOGDIR=$T/log

cleanup() {
  set +e
  for p in "$T"/run/*.pid "$T"/*.pid; do
    [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
  done
  sleep 1
  for n in $HV $TOR; do ip netns del $n 2>/dev/null; done
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
  printf '%s\nexit %d\n' "$(printf '%q ' "$@" | sed "s#$T#/tmp/s11fo-ovs.XXXXXX#g")" "$rc" >"$out/$name.cmd"
}

ip netns add $HV; ip netns add $TOR
for n in $HV $TOR; do
  ip -n $n link set lo up
  ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1
done
ip -n $TOR link add br0 type bridge
ip -n $TOR addr add 198.18.212.2/24 dev br0
ip -n $TOR link set br0 up
for i in 0 1; do
  ip -n $HV link add ul$i type veth peer name tor$i netns $TOR
  ip -n $TOR link set tor$i master br0
  ip -n $TOR link set tor$i up
  ip -n $HV link set ul$i up
done

ovsdb-tool create "$T/db/conf.db" /usr/share/openvswitch/vswitch.ovsschema
in_hv ovsdb-server "$T/db/conf.db" --remote=punix:$T/run/db.sock \
  --pidfile=$T/run/ovsdb-server.pid --unixctl=$T/run/ovsdb-server.ctl \
  --log-file=$T/log/ovsdb-server.log -vconsole:off --no-chdir --detach
"${VSCTL[@]}" --no-wait init
in_hv ovs-vswitchd unix:$T/run/db.sock --pidfile=$T/run/ovs-vswitchd.pid \
  --unixctl=$T/run/ovs-vswitchd.ctl --log-file=$T/log/ovs-vswitchd.log \
  -vconsole:off --no-chdir --detach
"${VSCTL[@]}" add-br br-phy -- set Bridge br-phy datapath_type=netdev \
  -- add-bond br-phy bond-ul ul0 ul1 bond_mode=active-backup lacp=off \
     other_config:bond-detect-mode=carrier
in_hv ip addr add 198.18.212.1/24 dev br-phy
in_hv ip link set br-phy up

{ ovs-vswitchd --version | head -1; uname -r; date -u +%Y-%m-%dT%H:%M:%SZ; } >"$out/versions.txt"

traffic() { in_hv ping -q -c 20 -i 0.05 -W 1 198.18.212.2 >/dev/null || true; }

# mode NAME SETTINGS...: the bond set to SETTINGS, then before/down/restored.
mode() {
  local name=$1; shift
  "${VSCTL[@]}" set Port bond-ul "$@"
  sleep 2
  traffic
  rec "$name-before.txt" "${APPCTL[@]}" bond/show bond-ul
  rec "$name-other-config.txt" "${VSCTL[@]}" get Port bond-ul other_config
  rec "$name-link-resets-before.txt" "${VSCTL[@]}" --columns=name,link_resets --format=csv --no-headings list Interface ul0 ul1
  # the active leg: "active-backup primary: ..." aside, bond/show marks it
  # "member ul0: enabled\n  active member" (3.x) under the member.
  local leg
  leg=$(awk '/^(member|slave) /{m=$2; sub(":","",m)} /^ *active (member|slave)$/{print m; exit}' "$out/$name-before.txt")
  [ -n "$leg" ] || leg=ul0
  echo "$leg" >"$out/$name-leg.txt"
  rec "$name-down-cmd.txt" in_hv ip link set "$leg" down
  traffic
  sleep 1.5
  rec "$name-down.txt" "${APPCTL[@]}" bond/show bond-ul
  rec "$name-link-resets-down.txt" "${VSCTL[@]}" --columns=name,link_resets --format=csv --no-headings list Interface ul0 ul1
  rec "$name-up-cmd.txt" in_hv ip link set "$leg" up
  sleep 1.5
  traffic
  rec "$name-restored.txt" "${APPCTL[@]}" bond/show bond-ul
  rec "$name-link-resets-restored.txt" "${VSCTL[@]}" --columns=name,link_resets --format=csv --no-headings list Interface ul0 ul1
  rm -f "$out/$name-down-cmd.txt" "$out/$name-up-cmd.txt"
}

mode active-backup-carrier bond_mode=active-backup lacp=off other_config:bond-detect-mode=carrier
mode active-backup-miimon bond_mode=active-backup lacp=off other_config:bond-detect-mode=miimon \
  other_config:bond-miimon-interval=100 bond_updelay=200 bond_downdelay=100
mode balance-slb bond_mode=balance-slb lacp=off other_config:bond-detect-mode=carrier \
  bond_updelay=0 bond_downdelay=0
mode balance-tcp bond_mode=balance-tcp lacp=off
rec no-such-bond.txt "${APPCTL[@]}" bond/show nosuch
rec bond-list.txt "${APPCTL[@]}" bond/list
grep -E 'bond|member|slave' "$T/log/ovs-vswitchd.log" | sed -E 's/^[0-9T:.-]+Z/TIME/' >"$out/ovs-vswitchd-bond.log" || true
