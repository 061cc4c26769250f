#!/bin/bash
# Bring the asap2lab up: a real OpenStack control plane on 198.18.0.1 plus two namespace
# compute hosts (asap2lab-hv1/2) with their own OVS, Neutron OVS agent (or, LAB_BACKEND=ovn,
# ovn-controller) and sshd. LAB_RELEASE
# (zed, the default, or epoxy) picks where the programs come from: lab/releases/.
# Layout: docs/DESIGN.md "The local lab"; contract with the virt driver: lab/README.md.
# Idempotent: on a healthy lab it says so and exits 0; on leftovers of a crash it runs down.sh first.
# Env: LAB_STATE (default /var/lib/asap2lab), LAB_READY_TIMEOUT (s, default 240),
#      LAB_ALLOW_FALLBACK_DRIVER=1 to run without lab/nova/asap2lab_driver.py (control plane only),
#      LAB_FIREWALL_DRIVER (openvswitch, the default and MOSK's, or noop): the Neutron OVS
#      agents' [securitygroup] firewall_driver; with openvswitch a port with port security goes
#      through OVS's userspace conntrack, ct() and recirculation in the netdev datapath (make
#      lab's port-security phases need it), a port without it does not; read at the first up
#      only: a running lab keeps its driver until down.sh),
#      LAB_COMPUTES (2..9, default 2): the compute nodes; a lab up with another number is
#      taken down and brought up again, like a lab of another release,
#      LAB_BACKEND (ovs, the default, or ovn): Neutron's backend. ovn: OVN central (NB and SB
#      ovsdb-servers, ovn-northd) on the controller, ovn-controller beside each hypervisor's OVS
#      instead of the Neutron OVS agent, ML2/OVN with Geneve tenant networks (lab/conf/
#      ml2_conf-ovn.ini); a lab up with the other backend is taken down first,
#      LAB_HV_DOMAIN (empty, the default, or a domain such as asap2lab.test): Nova's hypervisor
#      names become computeN.<domain> (each nova-compute's node; the service host stays
#      computeN), as on a MOSK cloud with FQDN hypervisor_hostnames; for the Kubernetes checks
#      (lab/kube/job.sh), not for configs keyed by hypervisor name; a lab up with another
#      domain is taken down first,
#      LAB_K8S=1: also the lab's Kubernetes control plane (lab/kube/up.sh: etcd, kube-apiserver, a
#      kwok inside each hypervisor; binaries built once into /var/cache/asap2lab/kube), on a fresh
#      lab and on one already up.
set -euo pipefail
LAB_COMPUTES=${LAB_COMPUTES:-2}   # up.sh's own default: the number of the lab that is up does not decide it
LAB_HV_DOMAIN=${LAB_HV_DOMAIN:-}  # the same: no domain unless asked for
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/ovs-vswitchd.sh"   # vswitchd_start, underlay_address
[ "$(id -u)" = 0 ] || { echo "up.sh: must run as root" >&2; exit 1; }
FIREWALL_DRIVER=${LAB_FIREWALL_DRIVER:-openvswitch}
case $FIREWALL_DRIVER in
  noop|openvswitch) ;;
  *) echo "up.sh: LAB_FIREWALL_DRIVER must be noop or openvswitch, got '$FIREWALL_DRIVER'" >&2; exit 1 ;;
esac
if [ "$LAB_BACKEND" = ovn ] && [ "$FIREWALL_DRIVER" != openvswitch ]; then
  echo "up.sh: LAB_FIREWALL_DRIVER=$FIREWALL_DRIVER is an Open vSwitch agent setting; with LAB_BACKEND=ovn security groups are OVN's ACLs (conntrack) and there is no such driver" >&2
  exit 1
fi

T0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
say() { echo "[lab-up +$(since "$T0")s] $*"; }
CUR_PHASE=
phase() {
  CUR_PHASE=$1; shift
  local t; t=$(date +%s.%N)
  say "$CUR_PHASE ..."
  "$@"
  say "$CUR_PHASE done in $(since "$t")s"
  CUR_PHASE=
}
on_err() {
  local rc=$?
  echo "[lab-up +$(since "$T0")s] FAILED (rc $rc) in phase '${CUR_PHASE:-?}' at line ${BASH_LINENO[0]}; logs: $LOGS" >&2
  echo "[lab-up] the half-built lab stays for inspection; 'make -f lab/lab.mk lab-down' removes it" >&2
  exit $rc
}
trap on_err ERR

# One up/down at a time (lock on the lab directory itself: no lock file to leave behind).
lab_lock up.sh || exit 1

# ------------------------------------------------------------------ helpers
# start NAME CMD... and wait_for WHAT TIMEOUT_S CMD...: lib/common.sh (lib/ovs-vswitchd.sh uses them too)
running() { local f=$PIDS/$1.pid; [ -s "$f" ] && alive "$(cat "$f")" && is_lab_pid "$(cat "$f")"; }
port_open() { (echo >"/dev/tcp/$1/$2") 2>/dev/null; }
tcp_up() { port_open "$CTL_IP" "$1"; }
vsctl() { local n=$1; shift; rx ovs-vsctl --timeout=30 --db="unix:$(hv_rundir "$n")/db.sock" "$@"; }
PYRUN=$LAB_DIR/lib/pyrun   # "$PYRUN" NAME MODULE ARGS...: a Python entry point Debian ships no script for
mysql_lab() { rx mariadb --no-defaults -S "$RUN/mysqld.sock" -u root "$@"; }

# ------------------------------------------------------------------ already up?
healthy() {
  [ -f "$RUN/up.done" ] || return 1
  [ "$(cat "$LAB_STATE/release" 2>/dev/null)" = "$LAB_RELEASE" ] || return 1
  [ "$(cat "$LAB_STATE/computes" 2>/dev/null || echo 2)" = "$LAB_COMPUTES" ] || return 1
  [ "$(cat "$LAB_STATE/backend" 2>/dev/null || echo ovs)" = "$LAB_BACKEND" ] || return 1
  [ "$(cat "$LAB_STATE/hv_domain" 2>/dev/null)" = "$LAB_HV_DOMAIN" ] || return 1
  local f
  for f in "$PIDS"/*.pid; do
    [ -e "$f" ] || return 1
    running "$(basename "$f" .pid)" || return 1
  done
  curl -fsS -m 5 -o /dev/null "$KS_URL/v3" || return 1
  snapshot_isolation_off
}
# snapshot_isolation_off: MariaDB runs with innodb_snapshot_isolation OFF (do_infra says why); a lab
# brought up before that was set is not healthy, and comes up again.
snapshot_isolation_off() { [ "$(mysql_lab -N -e 'select @@innodb_snapshot_isolation' 2>/dev/null)" = 0 ]; }
if healthy; then
  if [ "${LAB_K8S:-0}" = 1 ]; then
    say "$LAB_RELEASE lab already up and healthy; LAB_K8S=1: its Kubernetes control plane (lab/kube/up.sh)"
    phase "Kubernetes control plane (lab/kube)" bash "$LAB_DIR/kube/up.sh"
    exit 0
  fi
  say "$LAB_RELEASE lab ($LAB_BACKEND) of $LAB_COMPUTES compute nodes already up and healthy (pids in $PIDS all alive, Keystone answers); nothing to do"
  exit 0
fi
# A healthy lab of fewer compute nodes (the same release, backend and domain) grows instead: only the
# new hypervisors are brought up and join it (grow, at the end), its control plane and its first
# hypervisors stay as they are; make lab's fleet phases (LAB_FLEET_COMPUTES=4) take 2 to 4 so, in
# CI about 2 minutes less than a rebuild (docs/CI.md). LAB_GROW=0 rebuilds. The OVS agent's lab
# only: on OVN the other chassis's Geneve ports would have to be awaited too (a rebuild does that).
GROW_FROM=
lab_computes=$(cat "$LAB_STATE/computes" 2>/dev/null || echo 2)
if [ "${LAB_GROW:-1}" = 1 ] && [ "$LAB_BACKEND" = ovs ] && [ "$lab_computes" -lt "$LAB_COMPUTES" ] &&
   LAB_COMPUTES=$lab_computes healthy; then
  GROW_FROM=$lab_computes
elif [ -e "$LAB_STATE" ] || ip netns list | grep -q '^asap2lab' || ip -o link show | grep -q ': asap2lab'; then
  say "leftovers of an earlier lab found: cleaning with down.sh first"
  bash "$LAB_DIR/down.sh"
fi

DRIVER_DIR=$LAB_DIR/nova
if [ ! -f "$DRIVER_DIR/asap2lab_driver.py" ]; then
  if [ "${LAB_ALLOW_FALLBACK_DRIVER:-0}" = 1 ]; then
    DRIVER_DIR=$LAB_DIR/fallback
    say "WARNING: lab/nova/asap2lab_driver.py missing: using lab/fallback (no guest namespaces, control plane only)"
  else
    echo "up.sh: $DRIVER_DIR/asap2lab_driver.py missing (set LAB_ALLOW_FALLBACK_DRIVER=1 for a control-plane-only lab)" >&2
    exit 1
  fi
fi
for f in nova-common/api-paste.ini glance-common/glance-api-paste.ini neutron-common/api-paste.ini; do
  rx test -s "$LAB_PASTE/$f" || { echo "up.sh: $LAB_RELEASE: $LAB_PASTE/$f missing: run '$LAB_PREPARE_HINT'" >&2; exit 1; }
done

if [ -z "$GROW_FROM" ]; then
mkdir -p "$PIDS" "$ETC" "$DATA" "$LOGS" "$SSHD"
chmod 700 "$LAB_STATE"
echo "$LAB_RELEASE" >"$LAB_STATE/release"
echo "$LAB_COMPUTES" >"$LAB_STATE/computes"
echo "$LAB_BACKEND" >"$LAB_STATE/backend"
echo "$LAB_HV_DOMAIN" >"$LAB_STATE/hv_domain"
fi
say "backend $LAB_BACKEND; release $LAB_RELEASE${LAB_CMD[*]:+ (programs run through ${LAB_CMD[*]})}${LAB_HV_DOMAIN:+; hypervisor names compute*.$LAB_HV_DOMAIN}"
rand() { head -c 30 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | cut -c1-20; }  # no early-closing reader: pipefail-safe
ADMIN_PW=$(rand); SVC_PW=$(rand); DEMO_PW=$(rand); DB_PW=$(rand)
DB="mysql+pymysql://os:$DB_PW@$CTL_IP:$DB_PORT"
TRANSPORT="rabbit://asap2lab:$SVC_PW@$CTL_IP:$RABBIT_PORT/"

# ------------------------------------------------------------------ phase: network
do_network() {
  ip link add "$CTL_BR" type bridge
  ip addr add "$CTL_IP/24" dev "$CTL_BR"
  ip link set "$CTL_BR" up
  ip link add "$MGMT_BR" type bridge
  ip addr add "$MGMT_IP/24" dev "$MGMT_BR"
  ip link set "$MGMT_BR" up
  # the "ToR": a switch in its own namespace joining the hypervisors' underlay ports at MTU 9000
  ip netns add "$TOR_NS"
  ip -n "$TOR_NS" link set lo up
  ip -n "$TOR_NS" link add br-ul mtu $UL_MTU type bridge
  ip -n "$TOR_NS" link set br-ul up
  net_hypervisors
}
# net_hypervisors: each hypervisor of $HVS, its namespace and its links to the control and
# management bridges and to the ToR.
net_hypervisors() {
  local n H
  for n in $HVS; do
    H=$(hv_ns "$n")
    ip netns add "$H"
    ip -n "$H" link set lo up
    ip netns exec "$H" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    # control: ctl0 (198.18.0.1N) <-> asap2lab-cN in bridge asap2lab-ctl
    ip link add "asap2lab-c$n" type veth peer name ctl0 netns "$H"
    ip link set "asap2lab-c$n" master "$CTL_BR" up
    ip -n "$H" addr add "$(hv_ctlip "$n")/24" dev ctl0
    ip -n "$H" link set ctl0 up
    # management uplink: mgmt-up (port of br-mgmt) <-> asap2lab-mN in bridge asap2lab-mgmt
    ip link add "asap2lab-m$n" type veth peer name mgmt-up netns "$H"
    ip link set "asap2lab-m$n" master "$MGMT_BR" up
    ip -n "$H" link set mgmt-up up
    # underlay: two legs, ul0 <-> hvN and ul1 <-> hvNb in the ToR bridge, bonded in br-phy
    # (bond-ul, ovs_start): an ASAP² hypervisor's uplink is a VF-LAG, a bond of the NIC's two PFs
    # (issue 38's failover profile takes one leg down). An OVS bond, not a Linux bond: this
    # kernel has no bonding module; OVS's active-backup bond on the userspace datapath sees a
    # leg's carrier go down and moves to the other one, as the kernel's bond does over the PFs.
    ip -n "$TOR_NS" link add "hv$n" mtu $UL_MTU type veth peer name ul0 netns "$H" mtu $UL_MTU
    ip -n "$TOR_NS" link add "hv${n}b" mtu $UL_MTU type veth peer name ul1 netns "$H" mtu $UL_MTU
    ip -n "$TOR_NS" link set "hv$n" master br-ul up
    ip -n "$TOR_NS" link set "hv${n}b" master br-ul up
    ip -n "$H" link set ul0 up
    ip -n "$H" link set ul1 up
    # the userspace datapath reads from AF_PACKET sockets: no offloaded checksums/segments on its ports
    ip netns exec "$H" ethtool -K ul0 tx off tso off gso off >/dev/null
    ip netns exec "$H" ethtool -K ul1 tx off tso off gso off >/dev/null
    ip netns exec "$H" ethtool -K mgmt-up tx off tso off gso off >/dev/null
    # ul0 and mgmt-up belong to OVS alone. Left to the kernel, ul0 answers ARP for the
    # hypervisor's underlay address (on br-phy) with ul0's own MAC (Linux replies for any local
    # address on any interface), racing br-phy's correct answer; the peer's OVS learns whichever
    # comes last as its tunnel next hop (tnl/neigh), and VXLAN frames sent to ul0's MAC are not
    # terminated by OVS: the tenant data path goes dark for every run at once (seen as the
    # fault matrix's concurrent row failing on 2026-12-03). No ARP on them at all.
    ip -n "$H" link set ul0 arp off
    ip -n "$H" link set ul1 arp off
    ip -n "$H" link set mgmt-up arp off
  done
}

# ------------------------------------------------------------------ phase: hypervisor OVS
ovs_start() {
  local n=$1 D; D=$(hv_rundir "$n")
  mkdir -p "$D" "$DATA/hv$n"
  rx ovsdb-tool create "$DATA/hv$n/conf.db" /usr/share/openvswitch/vswitch.ovsschema
  start "hv$n-ovsdb-server" "$LAB_DIR/lib/hv-exec" "$n" "${LAB_CMD[@]}" env OVS_RUNDIR="$D" OVS_DBDIR="$DATA/hv$n" \
    ovsdb-server "$DATA/hv$n/conf.db" --remote="punix:$D/db.sock" --pidfile="$D/ovsdb-server.pid" \
    --log-file="$LOGS/hv$n-ovsdb-server.log" -vconsole:off --no-chdir
  wait_for "hv$n ovsdb-server socket" 30 test -S "$D/db.sock"
  vsctl "$n" --no-wait init
  vsctl "$n" --no-wait set Open_vSwitch . external_ids:hostname="$(hv_host "$n")" \
    external_ids:system-id="$(hv_host "$n")" \
    other_config:userspace-tso-enable=true
  # userspace-tso-enable is read once at start: it must be in the db before ovs-vswitchd runs
  # (lib/ovs-vswitchd.sh, also the fault matrix's restart after it killed one).
  vswitchd_start "$n"
  # br-phy owns the underlay port; the VXLAN local_ip lives on its internal port, so the userspace
  # datapath routes and ARP-resolves the tunnel next hop itself
  vsctl "$n" -- add-br br-phy -- set bridge br-phy datapath_type=netdev fail_mode=standalone \
    -- set interface br-phy mtu_request=$UL_MTU \
    -- add-bond br-phy bond-ul ul0 ul1 bond_mode=active-backup \
    -- set port bond-ul other_config:bond-detect-mode=carrier other_config:bond-primary=ul0 \
    -- set interface ul0 mtu_request=$UL_MTU -- set interface ul1 mtu_request=$UL_MTU
  underlay_address "$n"
  # physnet mgmt: Neutron's agent patches br-int to br-mgmt (bridge_mappings mgmt:br-mgmt)
  vsctl "$n" -- add-br br-mgmt -- set bridge br-mgmt datapath_type=netdev fail_mode=standalone \
    -- add-port br-mgmt mgmt-up
  ip -n "$(hv_ns "$n")" link set br-mgmt up
}
do_ovs() {
  local n
  for n in $HVS; do ovs_start "$n"; done
  check_underlay "$HVS"
}
# check_underlay HYPERVISORS: the underlay carries 9000-byte frames unfragmented between every two of
# them, both ways (each kernel ARPs for the other through OVS; with the legs quiet only br-phy
# answers); their tunnel next hops and bonds are as they must be.
check_underlay() {
  local n peer all=$1 HVS=$1   # check_tunnel_neighbor's peers: every hypervisor of the lab
  for n in $all; do
    for peer in $all; do
      [ "$peer" = "$n" ] && continue
      wait_for "jumbo ping hv$n -> hv$peer over the underlay" 20 \
        ip netns exec "$(hv_ns "$n")" ping -c1 -W1 -M do -s $(( UL_MTU - 28 )) "$(hv_ulip "$peer")"
    done
  done
  for n in $all; do tunnel_neighbors "$n" "$all"; done   # lib/ovs-vswitchd.sh: before any packet needs them
  for n in $all; do check_tunnel_neighbor "$n"; check_bond "$n"; done
}

# check_bond N: hypervisor N's underlay bond runs active-backup on ul0 (its primary) with both legs
# enabled, so a leg taken down (issue 38's failover) has somewhere to go.
check_bond() {
  local n=$1 show
  show=$(rx ovs-appctl -t "$(hv_rundir "$n")/ovs-vswitchd.$(cat "$PIDS/hv$n-ovs-vswitchd.pid").ctl" bond/show bond-ul)
  if ! grep -q '^bond_mode: active-backup' <<<"$show" ||
     [ "$(grep -cE '^member (ul0|ul1): enabled' <<<"$show")" != 2 ] ||
     ! grep -q '^active-backup primary: ul0' <<<"$show"; then
    printf 'hv%s: the underlay bond is not active-backup over ul0 (primary) and ul1, both enabled (ovs-appctl bond/show bond-ul):\n%s\n' "$n" "$show" >&2
    return 1
  fi
  say "hv$n: bond-ul active-backup, active $(awk '/^  active member$/{print prev} {prev=$2}' <<<"$show" | tr -d :)"
}

# check_tunnel_neighbor N: hypervisor N's OVS sends VXLAN to every other hypervisor's br-phy MAC
# (where OVS terminates tunnels), known before the first tunnelled packet (tunnel_neighbors: a
# miss drops that packet), and to no other MAC that answered for its underlay address; its
# OVS-only ports answer no ARP.
check_tunnel_neighbor() {
  local n=$1 peer want got port
  for port in ul0 ul1 mgmt-up; do
    if ! ip -n "$(hv_ns "$n")" -br link show "$port" | grep -q 'NOARP'; then
      echo "hv$n: $port answers ARP (the kernel would reply for br-phy's address with $port's MAC)" >&2
      return 1
    fi
  done
  for peer in $HVS; do
    [ "$peer" = "$n" ] && continue
    want=$(ip -n "$(hv_ns "$peer")" -br link show br-phy | awk '{print $3}')
    got=$(rx ovs-appctl -t "$(hv_rundir "$n")/ovs-vswitchd.$(cat "$PIDS/hv$n-ovs-vswitchd.pid").ctl" tnl/neigh/show |
      awk -v ip="$(hv_ulip "$peer")" '$1 == ip {print $2}')
    if [ "$got" != "$want" ]; then
      echo "hv$n: OVS tunnel next hop for $(hv_ulip "$peer") is ${got:-not known}, not hv$peer's br-phy MAC $want (ovs-appctl tnl/neigh/show)" >&2
      return 1
    fi
    say "hv$n: tunnel next hop for $(hv_ulip "$peer"): $got (hv$peer br-phy), aging ${NEIGH_AGING_S}s"
  done
}

# ------------------------------------------------------------------ phase: MariaDB + RabbitMQ
do_infra() {
  mkdir -p "$DATA/mysql" "$DATA/rabbit" "$DATA/rabbit-home" "$LOGS/rabbit"
  rx mariadb-install-db --no-defaults --datadir="$DATA/mysql" --user=root --skip-test-db \
    --auth-root-authentication-method=socket >"$LOGS/mariadb-install-db.log" 2>&1
  # --innodb-snapshot-isolation=OFF: MariaDB 11.6.2 turned it ON by default (MDEV-35124), and Epoxy's
  # Debian 13 root runs 11.8. With it ON, two transactions updating one row no longer wait for each
  # other: the later fails with error 1020 ("Record has changed since last read"), which OpenStack's
  # services do not retry (Nova bug 2116186). Keystone's authentication writes the user's
  # last_active_at, so two tokens asked for one user at once gave one of them a 500 without
  # headers, which a client reads as EOF: on 2026-12-07 the fault matrix's rows, starting together,
  # lost a run that way ("authenticate at http://198.18.0.1:5000/v3: ... EOF"). OFF is every older
  # MariaDB's behaviour (Zed's 10.11 included) and what the clouds under test run (MOSK's Galera
  # 10.6). Checked once it answers, and by healthy().
  start mariadbd "${LAB_CMD[@]}" /usr/sbin/mariadbd --no-defaults --datadir="$DATA/mysql" --socket="$RUN/mysqld.sock" \
    --port=$DB_PORT --bind-address=$CTL_IP --user=root --pid-file="$RUN/mariadbd.pid" \
    --log-error="$LOGS/mariadbd.log" --skip-log-bin --innodb-buffer-pool-size=128M \
    --innodb-flush-log-at-trx-commit=0 --max-connections=1000 --character-set-server=utf8mb4 \
    --innodb-snapshot-isolation=OFF --skip-name-resolve
  # RabbitMQ: its own epmd (foreground, so it stays in our process group), node, ports, files
  echo '[].' >"$ETC/rabbit_enabled_plugins"
  cat >"$ETC/rabbitmq.conf" <<EOF
listeners.tcp.1 = $CTL_IP:$RABBIT_PORT
loopback_users = none
default_user = asap2lab
default_pass = $SVC_PW
log.file.level = warning
EOF
  cat >"$ETC/rabbit-env.sh" <<EOF
export HOME=$DATA/rabbit-home
export RABBITMQ_NODENAME=asap2lab@localhost RABBITMQ_NODE_IP_ADDRESS=$CTL_IP RABBITMQ_NODE_PORT=$RABBIT_PORT
export RABBITMQ_DIST_PORT=$RABBIT_DIST_PORT ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT=$EPMD_PORT
export RABBITMQ_MNESIA_BASE=$DATA/rabbit RABBITMQ_LOG_BASE=$LOGS/rabbit RABBITMQ_PID_FILE=$RUN/rabbitmq.pid
export RABBITMQ_CONFIG_FILE=$ETC/rabbitmq RABBITMQ_ENABLED_PLUGINS_FILE=$ETC/rabbit_enabled_plugins
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
export ERL_CRASH_DUMP=$LOGS/rabbit/erl_crash.dump
EOF
  start epmd "${LAB_CMD[@]}" /usr/bin/epmd -address 127.0.0.1 -port $EPMD_PORT
  (source "$ETC/rabbit-env.sh"; start rabbitmq "${LAB_CMD[@]}" /usr/lib/rabbitmq/bin/rabbitmq-server)
  wait_for "MariaDB socket" 60 mysql_lab -e 'select 1'
  snapshot_isolation_off || { say "MariaDB: innodb_snapshot_isolation is not OFF ($(mysql_lab -N -e 'select @@version, @@innodb_snapshot_isolation' 2>&1))"; return 1; }
  {
    echo "CREATE USER 'os'@'$CTL_IP' IDENTIFIED BY '$DB_PW';"
    local d
    for d in keystone glance placement nova_api nova nova_cell0 neutron; do
      echo "CREATE DATABASE $d CHARACTER SET utf8mb4; GRANT ALL ON $d.* TO 'os'@'$CTL_IP';"
    done
    echo "FLUSH PRIVILEGES;"
  } | mysql_lab
  wait_for "RabbitMQ on $CTL_IP:$RABBIT_PORT" 120 tcp_up $RABBIT_PORT
}

# ------------------------------------------------------------------ phase: OVN central (LAB_BACKEND=ovn)
# The NB and SB databases (one ovsdb-server each, TCP on the controller address for Neutron and the
# hypervisors' ovn-controllers, a unix socket for ovn-northd and ovn-nbctl/ovn-sbctl) and ovn-northd,
# as MOSK's ovn-db and ovn-northd pods run them; files in $DATA/ovn, sockets in $RUN.
ovn_db_start() { # ovn_db_start nb|sb PORT
  local db=$1 port=$2
  rx ovsdb-tool create "$DATA/ovn/ovn${db}_db.db" "/usr/share/ovn/ovn-$db.ovsschema"
  start "ovn-$db-ovsdb-server" "${LAB_CMD[@]}" ovsdb-server "$DATA/ovn/ovn${db}_db.db" \
    --remote="punix:$RUN/ovn${db}_db.sock" --remote="ptcp:$port:$CTL_IP" \
    --pidfile="$RUN/ovn${db}_db.pid" --unixctl="$RUN/ovn${db}_db.ctl" \
    --log-file="$LOGS/ovn-$db-ovsdb-server.log" -vconsole:off --no-chdir
}
do_ovn_central() {
  mkdir -p "$DATA/ovn"
  ovn_db_start nb $OVN_NB_PORT
  ovn_db_start sb $OVN_SB_PORT
  wait_for "OVN NB ovsdb-server on $CTL_IP:$OVN_NB_PORT" 30 tcp_up $OVN_NB_PORT
  wait_for "OVN SB ovsdb-server on $CTL_IP:$OVN_SB_PORT" 30 tcp_up $OVN_SB_PORT
  rx ovn-nbctl --db="unix:$RUN/ovnnb_db.sock" --no-wait init
  rx ovn-sbctl --db="unix:$RUN/ovnsb_db.sock" init
  start ovn-northd "${LAB_CMD[@]}" ovn-northd --ovnnb-db="unix:$RUN/ovnnb_db.sock" --ovnsb-db="unix:$RUN/ovnsb_db.sock" \
    --pidfile="$RUN/ovn-northd.pid" --unixctl="$RUN/ovn-northd.ctl" \
    --log-file="$LOGS/ovn-northd.log" -vconsole:off --no-chdir
  wait_for "ovn-northd control socket" 30 test -S "$RUN/ovn-northd.ctl"
  say "OVN central: $(rx ovn-northd --version | head -1), NB tcp:$CTL_IP:$OVN_NB_PORT, SB tcp:$CTL_IP:$OVN_SB_PORT"
}

# ------------------------------------------------------------------ phase: configuration files
# The files are the templates in lab/conf/ (its README names them); every @NAME@ in them is the
# value of the shell variable NAME here.
CONF=$LAB_DIR/conf
# render TEMPLATE: lab/conf/TEMPLATE on stdout, each @NAME@ replaced by $NAME, left to right (a value
# is never read again, so an @ in a password or URL stays as it is); a NAME without a value fails.
render() {
  local file=$CONF/$1 text out= name
  text=$(<"$file")
  while [[ $text =~ @([A-Z][A-Z0-9_]*)@ ]]; do
    name=${BASH_REMATCH[1]}
    [[ -v $name ]] || { echo "up.sh: $file: @$name@ has no value" >&2; return 1; }
    out+=${text%%"@$name@"*}${!name}
    text=${text#*"@$name@"}
  done
  printf '%s%s\n' "$out" "$text"
}
authtoken() { local SERVICE_USER=$1; render keystone_authtoken.ini; }  # [keystone_authtoken] for service user $1
svcauth() { local SECTION=$1 SERVICE_USER=$2; render service_auth.ini; }  # [$1] keystoneauth section for service user $2
# hv_configs: the configuration files of each hypervisor of $HVS (its agent's, its nova-compute's).
hv_configs() {
  local n HV_NUMBER HV_HOST HV_ULIP HV_CTLIP
  for n in $HVS; do
    HV_NUMBER=$n HV_HOST=$(hv_host "$n") HV_ULIP=$(hv_ulip "$n") HV_CTLIP=$(hv_ctlip "$n")
    [ "$LAB_BACKEND" = ovn ] || render ovs-agent.ini >"$ETC/neutron/ovs-agent-hv$n.ini"
    mkdir -p "$DATA/nova-$HV_HOST"
    render nova-compute.conf >"$ETC/nova/nova-$HV_HOST.conf"
  done
}
do_configs() {
  mkdir -p "$ETC"/{keystone,glance,placement,nova,neutron} \
    "$DATA"/{keystone,nova,neutron,locks} "$DATA"/glance/{images,staging,tasks}
  rx cat "$LAB_PASTE/nova-common/api-paste.ini" >"$ETC/nova/api-paste.ini"
  rx cat "$LAB_PASTE/neutron-common/api-paste.ini" >"$ETC/neutron/api-paste.ini"
  rx cat "$LAB_PASTE/glance-common/glance-api-paste.ini" >"$ETC/glance/glance-api-paste.ini"
  local AUTHTOKEN SVCAUTH_NOVA SVCAUTH_PLACEMENT SVCAUTH_NEUTRON SVCAUTH_SERVICE_USER n HV_NUMBER HV_HOST HV_ULIP HV_CTLIP

  render keystone.conf >"$ETC/keystone/keystone.conf"
  AUTHTOKEN=$(authtoken placement)
  render placement.conf >"$ETC/placement/placement.conf"
  AUTHTOKEN=$(authtoken glance)
  render glance-api.conf >"$ETC/glance/glance-api.conf"
  AUTHTOKEN=$(authtoken neutron); SVCAUTH_NOVA=$(svcauth nova nova)
  # ML2/OVN's maintenance worker reconciles routers and floating IPs with the L3 plugin it
  # expects, ovn-router (without it the worker dies at start and Neutron's OVN hash ring goes
  # stale: "HashRing is empty", port events lost); ML2/OVS runs without any service plugin
  local SERVICE_PLUGINS=
  if [ "$LAB_BACKEND" = ovn ]; then SERVICE_PLUGINS=ovn-router; fi
  render neutron.conf >"$ETC/neutron/neutron.conf"
  if [ "$LAB_BACKEND" = ovn ]; then
    render ml2_conf-ovn.ini >"$ETC/neutron/ml2_conf.ini"
  else
    render ml2_conf.ini >"$ETC/neutron/ml2_conf.ini"
  fi

  AUTHTOKEN=$(authtoken nova); SVCAUTH_PLACEMENT=$(svcauth placement placement)
  SVCAUTH_NEUTRON=$(svcauth neutron neutron); SVCAUTH_SERVICE_USER=$(svcauth service_user nova)
  render nova.conf >"$ETC/nova/nova.conf"
  # database access only for api, conductor, scheduler, nova-manage: nova-compute goes through
  # the conductor, as on a real compute node (with a connection it logs "No DB access allowed")
  render nova-db.conf >"$ETC/nova/nova-db.conf"
  hv_configs

  render clouds.yaml >"$LAB_STATE/clouds.yaml"
  chmod 600 "$LAB_STATE/clouds.yaml"
  write_layout
}

# ------------------------------------------------------------------ phase: databases + Keystone
db_syncs() { # all schemas but Keystone's, in parallel; output in $LOGS/*-db-sync.log
  local pids=() rc=0 p
  rx placement-manage --config-file "$ETC/placement/placement.conf" db sync >"$LOGS/placement-db-sync.log" 2>&1 & pids+=($!)
  rx "$PYRUN" glance-manage glance.cmd.manage --config-file "$ETC/glance/glance-api.conf" db_sync >"$LOGS/glance-db-sync.log" 2>&1 & pids+=($!)
  rx "$PYRUN" neutron-db-manage neutron.db.migration.cli --config-file "$ETC/neutron/neutron.conf" \
    --config-file "$ETC/neutron/ml2_conf.ini" upgrade heads >"$LOGS/neutron-db-sync.log" 2>&1 & pids+=($!)
  ( c=(--config-file "$ETC/nova/nova.conf" --config-file "$ETC/nova/nova-db.conf")
    rx "$PYRUN" nova-manage nova.cmd.manage "${c[@]}" api_db sync
    rx "$PYRUN" nova-manage nova.cmd.manage "${c[@]}" cell_v2 map_cell0
    rx "$PYRUN" nova-manage nova.cmd.manage "${c[@]}" cell_v2 create_cell --name=cell1 --verbose
    rx "$PYRUN" nova-manage nova.cmd.manage "${c[@]}" db sync ) >"$LOGS/nova-db-sync.log" 2>&1 & pids+=($!)
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc = 0 ] || { echo "up.sh: a db sync failed: see $LOGS/*-db-sync.log" >&2; return 1; }
}
keystone_up() {
  local c=(--config-file "$ETC/keystone/keystone.conf")
  rx keystone-manage "${c[@]}" db_sync
  rx keystone-manage "${c[@]}" fernet_setup --keystone-user root --keystone-group root
  rx keystone-manage "${c[@]}" credential_setup --keystone-user root --keystone-group root
  rx keystone-manage "${c[@]}" bootstrap --bootstrap-password "$ADMIN_PW" \
    --bootstrap-admin-url "$KS_URL/v3/" --bootstrap-internal-url "$KS_URL/v3/" \
    --bootstrap-public-url "$KS_URL/v3/" --bootstrap-region-id RegionOne
  # uwsgi's plain http-socket mishandles keep-alive with keystoneauth: answer with Connection: close
  start keystone "${LAB_CMD[@]}" uwsgi --plugin python3 --http-socket "$CTL_IP:5000" "${KEYSTONE_WSGI[@]}" \
    --master --processes 2 --threads 1 --lazy-apps --die-on-term --add-header "Connection: close" \
    --env "OS_KEYSTONE_CONFIG_FILES=$ETC/keystone/keystone.conf" --logto "$LOGS/keystone-uwsgi.log"
  wait_for "Keystone on $KS_URL" 60 curl -fsS -m 3 -o /dev/null "$KS_URL/v3"
  rx env ASAP2LAB_KS_URL="$KS_URL" ASAP2LAB_ENDPOINT_HOST="$CTL_IP" ASAP2LAB_ADMIN_PW="$ADMIN_PW" \
    ASAP2LAB_SERVICE_PW="$SVC_PW" ASAP2LAB_DEMO_PW="$DEMO_PW" python3 "$LAB_DIR/lib/keystone_setup.py"
}
do_databases() {
  # 2 cores: the four schema migrations run while Keystone is bootstrapped
  db_syncs & local sync=$!
  keystone_up
  wait $sync
}

# ------------------------------------------------------------------ phase: API services
do_services() {
  start placement "${LAB_CMD[@]}" uwsgi --plugin python3 --http-socket "$CTL_IP:8778" "${PLACEMENT_WSGI[@]}" \
    --master --processes 1 --threads 4 --die-on-term --add-header "Connection: close" \
    --env "OS_PLACEMENT_CONFIG_DIR=$ETC/placement" --logto "$LOGS/placement-uwsgi.log"
  start glance-api "${LAB_CMD[@]}" "$PYRUN" glance-api glance.cmd.api --config-file "$ETC/glance/glance-api.conf"
  start neutron-server "${LAB_CMD[@]}" "$PYRUN" neutron-server neutron.cmd.eventlet.server --config-file "$ETC/neutron/neutron.conf" \
    --config-file "$ETC/neutron/ml2_conf.ini" --log-file "$LOGS/neutron-server.log"
  local nc=(--config-file "$ETC/nova/nova.conf" --config-file "$ETC/nova/nova-db.conf")
  start nova-api "${LAB_CMD[@]}" "$PYRUN" nova-api nova.cmd.api "${nc[@]}" --log-file "$LOGS/nova-api.log"
  start nova-conductor "${LAB_CMD[@]}" "$PYRUN" nova-conductor nova.cmd.conductor "${nc[@]}" --log-file "$LOGS/nova-conductor.log"
  start nova-scheduler "${LAB_CMD[@]}" "$PYRUN" nova-scheduler nova.cmd.scheduler "${nc[@]}" --log-file "$LOGS/nova-scheduler.log"
}

# ------------------------------------------------------------------ phase: hypervisor services
sshd_start() {
  local n=$1 key=$SSHD/hv$n-host-ed25519
  ssh-keygen -q -t ed25519 -N '' -C "asap2lab-hv$n" -f "$key"
  cat >"$ETC/sshd-hv$n.conf" <<EOF
# sshd of hypervisor $(hv_host "$n") (netns $(hv_ns "$n")), written by lab/up.sh
ListenAddress $(hv_ctlip "$n"):22
HostKey $key
PidFile $RUN/hv$n-sshd.pid
AuthorizedKeysFile $SSHD/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
MaxStartups 50:30:100
MaxSessions 50
LogLevel INFO
EOF
  start "hv$n-sshd" "$LAB_DIR/lib/hv-exec" "$n" --hostname "$(hv_host "$n")" \
    "${LAB_CMD[@]}" /usr/sbin/sshd -D -f "$ETC/sshd-hv$n.conf" -E "$LOGS/hv$n-sshd.log"
}
# ovn_controller_start N (LAB_BACKEND=ovn): hypervisor N joins OVN as chassis computeN (its OVS
# system-id and hostname, Nova's service host, which Neutron binds ports to): Geneve from its
# underlay address, physnet mgmt on br-mgmt, a netdev br-int that ovn-controller creates itself.
# It runs in the hypervisor (hv-exec: its netns, /run/openvswitch, /run/ovn), so over SSH
# `ovn-appctl -t ovn-controller` and `ovs-vsctl` see it as on a compute node.
ovn_controller_start() {
  local n=$1
  mkdir -p "$(hv_ovnrundir "$n")"
  vsctl "$n" set Open_vSwitch . external_ids:ovn-remote="tcp:$CTL_IP:$OVN_SB_PORT" \
    external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip="$(hv_ulip "$n")" \
    external_ids:ovn-bridge-mappings=mgmt:br-mgmt external_ids:ovn-bridge-datapath-type=netdev \
    external_ids:ovn-bridge="$INT_BR"
  start "hv$n-ovn-controller" "$LAB_DIR/lib/hv-exec" "$n" --hostname "$(hv_host "$n")" \
    "${LAB_CMD[@]}" ovn-controller unix:/run/openvswitch/db.sock --pidfile=/run/ovn/ovn-controller.pid \
    --log-file="$LOGS/hv$n-ovn-controller.log" -vconsole:off --no-chdir
}
do_hypervisors() {
  ssh-keygen -q -t ed25519 -N '' -C asap2lab-harness -f "$SSHD/id_ed25519"
  cp "$SSHD/id_ed25519.pub" "$SSHD/authorized_keys"
  chmod 600 "$SSHD/authorized_keys"
  : >"$SSHD/known_hosts"
  if [ "$LAB_GUESTCTL_HOST_NS" = 1 ]; then
    # nova-compute runs in the release's root; the guests' namespaces and links must be made in the
    # host's mount namespace, where lab/down.sh, lab/faultlab and the harness see them. This lab
    # process stays there for guestctl to enter (lab/nova/README.md, "Epoxy").
    start host-ns sleep infinity
  fi
  hv_services
}
# hv_services: each hypervisor of $HVS, its agent (or ovn-controller), sshd and nova-compute.
hv_services() {
  local n guestctl=$LAB_GUESTCTL_PREFIX
  if [ "$LAB_GUESTCTL_HOST_NS" = 1 ]; then
    guestctl="nsenter --mount=/proc/$(cat "$PIDS/host-ns.pid")/ns/mnt $guestctl"
  fi
  for n in $HVS; do
    if [ "$LAB_BACKEND" = ovn ]; then ovn_controller_start "$n"; else
    start "hv$n-neutron-openvswitch-agent" "$LAB_DIR/lib/hv-exec" "$n" --hostname "$(hv_host "$n")" \
      "${LAB_CMD[@]}" "$PYRUN" neutron-openvswitch-agent neutron.cmd.eventlet.plugins.ovs_neutron_agent \
      --config-file "$ETC/neutron/neutron.conf" --config-file "$ETC/neutron/ovs-agent-hv$n.ini"
    fi
    sshd_start "$n"
    echo "$(hv_ctlip "$n") $(cut -d' ' -f1-2 "$SSHD/hv$n-host-ed25519.pub")" >>"$SSHD/known_hosts"
    start "nova-compute-$(hv_host "$n")" env \
      ASAP2LAB_HOST="$(hv_host "$n")" ASAP2LAB_NODENAME="$(hv_node "$n")" \
      ASAP2LAB_HV_NETNS="$(hv_ns "$n")" ASAP2LAB_OVS_RUNDIR="$(hv_rundir "$n")" \
      ASAP2LAB_STATE="$LAB_STATE" ASAP2LAB_LOG_DIR="$LOGS" ASAP2LAB_MGMT_BRIDGE="$MGMT_BR" \
      ASAP2LAB_DRIVER_DIR="$DRIVER_DIR" ASAP2LAB_GUESTCTL_PREFIX="$guestctl" \
      ASAP2LAB_GUEST_EXEC="$LAB_GUEST_EXEC" ASAP2LAB_GUEST_KEEP="$LAB_GUEST_KEEP" \
      "${LAB_CMD[@]}" python3 "$LAB_DIR/lib/nova-compute.py" --config-file "$ETC/nova/nova.conf" \
      --config-file "$ETC/nova/nova-$(hv_host "$n").conf" --log-file "$LOGS/nova-compute-$(hv_host "$n").log"
  done
}

# ------------------------------------------------------------------ phase: ready
hv_ssh() {
  local n=$1; shift
  ssh -q -i "$SSHD/id_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=3 \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$SSHD/known_hosts" "root@$(hv_ctlip "$n")" "$@"
}
hv_geneve_ports() { # N COUNT: br-int exists and carries COUNT Geneve tunnel interfaces
  hv_ssh "$1" ovs-vsctl br-exists "$INT_BR" || return 1
  [ "$(hv_ssh "$1" ovs-vsctl --bare --columns=name find Interface type=geneve | grep -c .)" = "$2" ]
}
# ovn_chassis_compat: Zed's Neutron (21.0.0) reads a chassis's bridge mappings from SB
# Chassis.external_ids; OVN 23.03's ovn-controller writes them to other_config only (moved in
# OVN 22.09). Without the copy Neutron refuses every port on physnet mgmt ("the OVN chassis bridge
# mapping physical networks [] not supporting physical network: mgmt"). Newer Neutron reads
# other_config first (lab/README.md, "OVS vs OVN").
ovn_chassis_compat() {
  local n sb=(rx ovn-sbctl --db="unix:$RUN/ovnsb_db.sock")
  for n in $HVS; do
    wait_for "OVN chassis $(hv_host "$n") in the SB database" 60 "${sb[@]}" get Chassis "$(hv_host "$n")" other_config:ovn-bridge-mappings
    "${sb[@]}" set Chassis "$(hv_host "$n")" \
      external_ids:ovn-bridge-mappings="$("${sb[@]}" get Chassis "$(hv_host "$n")" other_config:ovn-bridge-mappings | tr -d '"')"
  done
}
hv_ovn_connected() { [ "$(hv_ssh "$1" ovn-appctl -t ovn-controller connection-status)" = connected ]; }
do_ready() {
  local p n
  for p in 8778 9292 9696 8774; do wait_for "API port $CTL_IP:$p" 180 tcp_up $p; done
  export OS_CLIENT_CONFIG_FILE=$LAB_STATE/clouds.yaml
  if [ "$LAB_BACKEND" = ovn ]; then ovn_chassis_compat; fi
  ASAP2LAB_HOSTS=$(for n in $HVS; do hv_host "$n"; done | tr '\n' ' ') ASAP2LAB_BACKEND=$LAB_BACKEND \
    ASAP2LAB_HV_DOMAIN=$LAB_HV_DOMAIN rx python3 "$LAB_DIR/lib/cloud_setup.py" wait "${LAB_READY_TIMEOUT:-240}"
  # up is not "services running" but "a build can be scheduled on both hosts" (issue 25): each host
  # in Placement with allocation candidates, mapped to the cell, with its PCI pool of fake VFs
  LAB_DB_URL=$DB ASAP2LAB_HOSTS=$(for n in $HVS; do hv_host "$n"; done | tr '\n' ' ') \
    ASAP2LAB_HV_DOMAIN=$LAB_HV_DOMAIN rx python3 "$LAB_DIR/lib/cloud_setup.py" schedulable "${LAB_READY_TIMEOUT:-240}"
  # the agent has built br-int / br-tun (ovn-controller: br-int and a Geneve port to every other
  # chassis); SSH with stock tools sees this hypervisor's OVS
  local peers
  for n in $HVS; do
    if [ "$LAB_BACKEND" = ovn ]; then
      peers=$(( LAB_COMPUTES - 1 ))
      wait_for "ssh root@$(hv_ctlip "$n") ovs-vsctl: br-int with $peers Geneve ports (ovn-controller)" 60 \
        hv_geneve_ports "$n" "$peers"
      wait_for "ssh root@$(hv_ctlip "$n") ovn-appctl -t ovn-controller connection-status: connected" 30 \
        hv_ovn_connected "$n"
    else
      wait_for "ssh root@$(hv_ctlip "$n") ovs-vsctl br-exists br-tun" 30 hv_ssh "$n" ovs-vsctl br-exists br-tun
    fi
  done
}
do_resources() {
  local img=$DATA/asap2lab-guest.raw
  truncate -s 1M "$img"
  OS_CLIENT_CONFIG_FILE=$LAB_STATE/clouds.yaml rx python3 "$LAB_DIR/lib/cloud_setup.py" resources "$img"
}

# grow: hypervisors GROW_FROM+1..LAB_COMPUTES join the healthy lab of GROW_FROM (see above); then
# the lab is ready as a lab brought up with LAB_COMPUTES is (do_ready over all of them).
grow() {
  local all=$HVS
  rm -f "$RUN/up.done"   # until it is ready again: a grow that failed is no healthy lab
  HVS=$(seq -s ' ' $(( GROW_FROM + 1 )) "$LAB_COMPUTES")
  # the running agents' firewall driver (up.sh's is read at the first up only)
  FIREWALL_DRIVER=$(awk -F' *= *' '$1 == "firewall_driver" {print $2; exit}' "$ETC/neutron/ovs-agent-hv1.ini")
  [ -n "$FIREWALL_DRIVER" ] || { echo "up.sh: no firewall_driver in $ETC/neutron/ovs-agent-hv1.ini" >&2; return 1; }
  # and the running database's URL (do_ready reads Nova's tables), not this up's fresh password
  DB=$(awk '$1 == "connection" {sub(/\/nova_api$/, "", $3); print $3; exit}' "$ETC/nova/nova-db.conf")
  [ -n "$DB" ] || { echo "up.sh: no [api_database] connection in $ETC/nova/nova-db.conf" >&2; return 1; }
  say "the $LAB_RELEASE lab ($LAB_BACKEND) of $GROW_FROM compute nodes is up and healthy: hypervisors $HVS join it (LAB_GROW=0 rebuilds instead)"
  phase "network (hypervisors $HVS)" net_hypervisors
  phase "hypervisor OVS (hypervisors $HVS; the underlay between all)" eval 'for n in $HVS; do ovs_start "$n"; done; check_underlay "$all"'
  phase "configuration (hypervisors $HVS)" hv_configs
  phase "hypervisor services (hypervisors $HVS)" hv_services
  HVS=$all
  echo "$LAB_COMPUTES" >"$LAB_STATE/computes"
  phase "wait until ready (all $LAB_COMPUTES)" do_ready
  # The Kubernetes control plane's certificates, tokens and kwoks are per hypervisor, and
  # kube-apiserver reads its token file only when it starts (lab/kube/up.sh alone would start the new
  # kwoks with no token the running server knows): with LAB_K8S=1 it starts again for all of them;
  # without, the old lab's is stopped (make lab's fleet phases use SSH: 50 s less on a loaded machine).
  if [ "${LAB_K8S:-0}" = 1 ]; then
    phase "Kubernetes control plane again, for all $LAB_COMPUTES (lab/kube)" \
      eval 'bash "$LAB_DIR/kube/down.sh" && bash "$LAB_DIR/kube/up.sh"'
  elif [ -d "$LAB_STATE/kube" ]; then
    phase "Kubernetes control plane of the $GROW_FROM nodes stopped (LAB_K8S=1 brings it up for all)" bash "$LAB_DIR/kube/down.sh"
  fi
  date -u +%FT%TZ >"$RUN/up.done"
  say "UP (grown from $GROW_FROM to $LAB_COMPUTES compute nodes) in $(since "$T0")s"
}
if [ -n "$GROW_FROM" ]; then grow; exit 0; fi

phase "network (bridges, ToR, hypervisor netns)" do_network
phase "hypervisor OVS (netdev, br-phy MTU $UL_MTU, br-mgmt)" do_ovs
phase "MariaDB + RabbitMQ" do_infra
if [ "$LAB_BACKEND" = ovn ]; then phase "OVN central (NB, SB, northd)" do_ovn_central; fi
phase "configuration" do_configs
phase "schemas + Keystone" do_databases
phase "Placement, Glance, Neutron, Nova services" do_services
phase "hypervisor services ($([ "$LAB_BACKEND" = ovn ] && echo ovn-controllers || echo 'OVS agents'), sshd, nova-compute)" do_hypervisors
phase "wait until ready" do_ready
phase "lab resources (image, mgmt network)" do_resources
if [ "${LAB_K8S:-0}" = 1 ]; then phase "Kubernetes control plane (lab/kube)" bash "$LAB_DIR/kube/up.sh"; fi
date -u +%FT%TZ >"$RUN/up.done"
say "UP in $(since "$T0")s. clouds: $LAB_STATE/clouds.yaml (asap2lab, asap2lab-admin); ssh key $SSHD/id_ed25519, known_hosts $SSHD/known_hosts"
free -m | sed 's/^/[lab-up] /'
