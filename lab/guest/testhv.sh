# shellcheck shell=bash
# testhv.sh: a throwaway hypervisor for the guest/driver self-tests (sourced, not run).
# testhv_up NAME DIR: netns NAME (prefix asap2lab-t-) with its own ovsdb-server + ovs-vswitchd
#   (OVS_RUNDIR=DIR, userspace-tso-enable, datapath netdev) and a standalone br-int.
# testhv_down NAME DIR: stop those two daemons by their pidfiles, delete the netns.
# Both are safe to call on a half-built hypervisor.

testhv_up() {
  local ns=$1 d=$2
  case $ns in asap2lab-t-*) ;; *) echo "testhv_up: netns name must start with asap2lab-t-, got $ns" >&2; return 1 ;; esac
  mkdir -p "$d"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ovsdb-tool create "$d/conf.db" /usr/share/openvswitch/vswitch.ovsschema
  ip netns exec "$ns" env OVS_RUNDIR="$d" OVS_LOGDIR="$d" OVS_DBDIR="$d" ovsdb-server "$d/conf.db" \
    --remote=punix:"$d/db.sock" --pidfile="$d/ovsdb-server.pid" --log-file="$d/ovsdb-server.log" \
    -vconsole:off --detach --no-chdir
  ovs-vsctl --db=unix:"$d/db.sock" --no-wait init
  # Read when ovs-vswitchd starts: without it an internal port moved to another netns drops frames > 1500.
  ovs-vsctl --db=unix:"$d/db.sock" --no-wait set Open_vSwitch . other_config:userspace-tso-enable=true
  ip netns exec "$ns" env OVS_RUNDIR="$d" OVS_LOGDIR="$d" OVS_DBDIR="$d" ovs-vswitchd unix:"$d/db.sock" \
    --pidfile="$d/ovs-vswitchd.pid" --log-file="$d/ovs-vswitchd.log" -vconsole:off --detach --no-chdir
  ovs-vsctl --db=unix:"$d/db.sock" --timeout=30 add-br br-int -- set bridge br-int datapath_type=netdev fail_mode=standalone
}

testhv_down() {
  local ns=$1 d=$2 p daemon
  for daemon in ovs-vswitchd ovsdb-server; do
    if [ -s "$d/$daemon.pid" ]; then
      p=$(cat "$d/$daemon.pid")
      kill "$p" 2>/dev/null
      for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    fi
  done
  ip netns delete "$ns" 2>/dev/null
  return 0
}
