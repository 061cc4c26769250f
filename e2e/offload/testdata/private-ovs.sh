# Sourced by record-scale.sh and record-churn.sh: a PRIVATE Open vSwitch for
# a recording. `private_ovs_up NAME NET` makes namespaces NAME-hv (where
# ovs-vswitchd runs), NAME-a and NAME-b (the two "guests", eth0 at NET.1/24
# and NET.2/24, static neighbours, IPv6 off) on veths NAME-pa / NAME-pb of
# bridge NAME-br (datapath_type=netdev: the userspace datapath); its own
# ovsdb-server and ovs-vswitchd with OVS_RUNDIR, OVS_DBDIR, OVS_LOGDIR,
# pidfiles, control sockets and database under T=$(mktemp -d /tmp/NAME.XXXXXX).
# It sets HV, A, B, T, VSCTL, APPCTL and BR (the bridge's OpenFlow socket),
# and traps EXIT: every pid file's process killed, the namespaces deleted,
# the log copied to $out/ovs-vswitchd.log, T removed. Never touches
# /var/run/openvswitch or another recorder's namespaces.
private_ovs_up() {
  local name=$1 net=$2
  HV=$name-hv A=$name-a B=$name-b
  T=$(mktemp -d "/tmp/$name.XXXXXX")
  mkdir -p "$T/run" "$T/db" "$T/log"
  export OVS_RUNDIR=$T/run OVS_DBDIR=$T/db OVS_LOGDIR=$T/log
  trap private_ovs_down EXIT
  VSCTL=(ovs-vsctl --db=unix:$T/run/db.sock --timeout=30)
  APPCTL=(ovs-appctl --timeout=30 -t $T/run/ovs-vswitchd.ctl)
  BR=unix:$T/run/$name-br.mgmt

  ip netns add $HV; ip netns add $A; ip netns add $B
  for n in $HV $A $B; do
    ip -n $n link set lo up
    ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1
  done
  ip -n $HV link add $name-pa type veth peer name eth0 netns $A
  ip -n $HV link add $name-pb type veth peer name eth0 netns $B
  ip -n $HV link set $name-pa up; ip -n $HV link set $name-pb up
  ip -n $A addr add $net.1/24 dev eth0; ip -n $A link set eth0 up
  ip -n $B addr add $net.2/24 dev eth0; ip -n $B link set eth0 up
  # static neighbours: no ARP in the flow counts
  ip -n $A neigh add $net.2 lladdr "$(ip -n $B -br link show eth0 | awk '{print $3}')" dev eth0
  ip -n $B neigh add $net.1 lladdr "$(ip -n $A -br link show eth0 | awk '{print $3}')" dev eth0

  ovsdb-tool create "$T/db/conf.db" /usr/share/openvswitch/vswitch.ovsschema
  ip netns exec $HV ovsdb-server "$T/db/conf.db" --remote=punix:$T/run/db.sock \
    --pidfile=$T/run/ovsdb-server.pid --unixctl=$T/run/ovsdb-server.ctl \
    --log-file=$T/log/ovsdb-server.log -vconsole:off --no-chdir --detach
  "${VSCTL[@]}" --no-wait init
  ip netns exec $HV ovs-vswitchd unix:$T/run/db.sock --pidfile=$T/run/ovs-vswitchd.pid \
    --unixctl=$T/run/ovs-vswitchd.ctl --log-file=$T/log/ovs-vswitchd.log \
    -vconsole:off --no-chdir --detach
  "${VSCTL[@]}" add-br $name-br -- set Bridge $name-br datapath_type=netdev \
    -- add-port $name-br $name-pa -- add-port $name-br $name-pb
  { ovs-vswitchd --version | head -1; uname -r; date -u +%Y-%m-%dT%H:%M:%SZ; } >"$out/versions.txt"
}

private_ovs_down() {
  set +e
  for p in "$T"/run/*.pid "$T"/*.pid; do
    [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
  done
  sleep 1
  for n in $HV $A $B; do ip netns del $n 2>/dev/null; done
  cp "$T/log/ovs-vswitchd.log" "$out/ovs-vswitchd.log" 2>/dev/null
  rm -rf "$T"
}
