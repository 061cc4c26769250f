# Shared definitions for lab/up.sh, lab/down.sh, lab/status.sh (sourced, bash).
# Layout: docs/DESIGN.md "The local lab". Every name starts with asap2lab, every address is in 198.18.0.0/15.
LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB_STATE=${LAB_STATE:-/var/lib/asap2lab}
LAB_SHARE=${LAB_SHARE:-/usr/local/share/asap2lab}
# Debian's OpenStack libraries live in /usr/bin/python3's dist-packages: a pyenv/local python must not win.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C.UTF-8
source "$LAB_DIR/releases/select.sh"

CTL_BR=asap2lab-ctl;   CTL_IP=198.18.0.1
MGMT_BR=asap2lab-mgmt; MGMT_IP=198.19.128.1
TOR_NS=asap2lab-tor
# LAB_COMPUTES: how many namespace compute nodes, 2 (the default) to 9 (addresses 198.18.0.1N);
# the fleet sweep's lab phase uses 4. lab/up.sh records it in $LAB_STATE/computes, and every script
# sourcing this file without LAB_COMPUTES set sees the lab that is up.
if [ -z "${LAB_COMPUTES:-}" ] && [ -r "$LAB_STATE/computes" ]; then LAB_COMPUTES=$(cat "$LAB_STATE/computes"); fi
LAB_COMPUTES=${LAB_COMPUTES:-2}
case $LAB_COMPUTES in
  [2-9]) ;;
  *) echo "LAB_COMPUTES=$LAB_COMPUTES: must be a number of compute nodes from 2 to 9" >&2; exit 2 ;;
esac
HVS=$(seq -s ' ' 1 "$LAB_COMPUTES")
# LAB_BACKEND: Neutron's networking backend, ovs (ML2/OVS: an Open vSwitch agent per hypervisor,
# VXLAN; the default) or ovn (ML2/OVN: OVN central on the controller, an ovn-controller beside each
# hypervisor's OVS, Geneve). Recorded in $LAB_STATE/backend like the number of computes.
if [ -z "${LAB_BACKEND:-}" ] && [ -r "$LAB_STATE/backend" ]; then LAB_BACKEND=$(cat "$LAB_STATE/backend"); fi
LAB_BACKEND=${LAB_BACKEND:-ovs}
case $LAB_BACKEND in
  ovs|ovn) ;;
  *) echo "LAB_BACKEND=$LAB_BACKEND: must be ovs (ML2/OVS, the default) or ovn (ML2/OVN)" >&2; exit 2 ;;
esac
# LAB_HV_DOMAIN (opt-in, e.g. asap2lab.test): Nova's name of each hypervisor (its nova-compute's
# node, hypervisor_hostname) is computeN.<domain>, as on a MOSK cloud whose libvirt reports FQDNs,
# while the compute service host, the OVS agent's host and the Kubernetes Node stay computeN.
# Configs keyed by hypervisor name (lab/harness.yaml's hypervisors.hosts) do not match then: it is
# for lab/harness-kube.yaml (lab/kube/job.sh). Recorded in $LAB_STATE/hv_domain like the backend.
if [ -z "${LAB_HV_DOMAIN+set}" ] && [ -r "$LAB_STATE/hv_domain" ]; then LAB_HV_DOMAIN=$(cat "$LAB_STATE/hv_domain"); fi
LAB_HV_DOMAIN=${LAB_HV_DOMAIN:-}
if [ -n "$LAB_HV_DOMAIN" ] && ! [[ $LAB_HV_DOMAIN =~ ^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$ ]]; then
  echo "LAB_HV_DOMAIN=$LAB_HV_DOMAIN: must be a DNS domain in lower case (e.g. asap2lab.test), or empty" >&2; exit 2
fi
# the tenant network a run gets and its MTU on the 9000-byte underlay (Neutron: path_mtu minus the
# encapsulation, VXLAN 50, Geneve 38 + 20; e2e/results EncapOverhead)
case $LAB_BACKEND in
  ovs) TENANT_TYPE=vxlan;  TENANT_MTU=8950 ;;
  ovn) TENANT_TYPE=geneve; TENANT_MTU=8942 ;;
esac
OVN_NB_PORT=16641; OVN_SB_PORT=16642   # OVN's NB and SB ovsdb-servers on the controller address
UL_MTU=9000
DB_PORT=13306; RABBIT_PORT=35672; RABBIT_DIST_PORT=35673; EPMD_PORT=34369
KS_URL=http://$CTL_IP:5000

RUN=$LAB_STATE/run        # pidfiles (one per process group), sockets
PIDS=$RUN/pids
ETC=$LAB_STATE/etc
DATA=$LAB_STATE/data
LOGS=$LAB_STATE/logs
SSHD=$LAB_STATE/ssh       # lab key, host keys, known_hosts

hv_ns()    { echo asap2lab-hv$1; }
hv_host()  { echo compute$1; }   # the compute service host, OVS agent host, Kubernetes Node
hv_node()  { echo "compute$1${LAB_HV_DOMAIN:+.$LAB_HV_DOMAIN}"; }   # Nova's hypervisor name (LAB_HV_DOMAIN)
hv_ctlip() { echo 198.18.0.1$1; }
hv_ulip()  { echo 198.18.1.1$1; }
hv_rundir(){ echo $LAB_STATE/hv$1/ovs; }
hv_ovnrundir(){ echo $LAB_STATE/hv$1/ovn; }   # ovn-controller's /run/ovn inside hypervisor N (LAB_BACKEND=ovn)
INT_BR=br-int                  # each hypervisor's integration bridge (Neutron's OVS agent)
GUEST_NS_PREFIX=asap2lab-vm-   # a guest's netns is this + its instance uuid (lab/guest/guestctl.py NETNS_PREFIX)

# write_layout: $LAB_STATE/layout.yaml, the names of this lab that tools outside it need and no
# harness config holds (lab/faultlab reads it): each hypervisor's number (lib/hv-exec N), network
# namespace and control address, the integration bridge, the guests' namespace prefix.
write_layout() {
  local n
  { echo "# asap2lab layout (written by lab/up.sh from lab/lib/common.sh; read by lab/faultlab)"
    echo "integration_bridge: $INT_BR"
    echo "# ovs (ML2/OVS, VXLAN) or ovn (ML2/OVN, Geneve): lab/up.sh LAB_BACKEND"
    echo "backend: $LAB_BACKEND"
    echo "guest_netns_prefix: $GUEST_NS_PREFIX"
    echo "# the release's programs (ovs-ofctl, openstack, iperf3) run through this: lab/releases/$LAB_RELEASE.sh"
    printf 'command_prefix: ['; local sep=
    for n in "${LAB_CMD[@]}"; do printf '%s"%s"' "$sep" "$n"; sep=', '; done; echo ']'
    echo "hypervisors:"
    for n in $HVS; do
      echo "  $(hv_host "$n"): {number: $n, netns: $(hv_ns "$n"), address: $(hv_ctlip "$n")}"
    done
  } >"$LAB_STATE/layout.yaml"
}

# start NAME CMD...: a lab daemon in its own session and process group (PGID = PID, recorded in
# $PIDS/NAME.pid), lab marker in the environment, output to $LOGS/NAME.out, the lab lock's fd 9
# closed. down.sh ends the whole group. (lab/up.sh, lib/ovs-vswitchd.sh)
start() {
  local name=$1; shift
  ASAP2LAB_PROC=$LAB_STATE setsid "$@" >>"$LOGS/$name.out" 2>&1 </dev/null 9<&- &
  echo $! >"$PIDS/$name.pid"
}
# wait_for WHAT TIMEOUT_S CMD...: poll CMD every 0.5 s; fail with WHAT after the timeout.
wait_for() {
  local what=$1 timeout=$2; shift 2
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "${0##*/}: timed out after ${timeout}s waiting for $what" >&2; return 1; fi
    sleep 0.5
  done
}

# A process belongs to this lab when its environment carries ASAP2LAB_PROC=$LAB_STATE or its
# command line names a path under $LAB_STATE/ (neutron-server's setproctitle overwrites its
# environment block). lib/labprocs.py applies the same rule to every process at once.
lab_marker() { echo "ASAP2LAB_PROC=$LAB_STATE"; }
is_lab_pid() {
  local p=$1
  [ -r /proc/$p/environ ] || return 1
  { tr '\0' '\n' </proc/$p/environ; } 2>/dev/null | grep -qxF "$(lab_marker)" && return 0
  { tr '\0' ' ' </proc/$p/cmdline; } 2>/dev/null | grep -qF "$LAB_STATE/"
}
alive() { [ -r /proc/$1/stat ] && ! awk '{exit ($3=="Z")?0:1}' /proc/$1/stat 2>/dev/null; }

# lab_lock WHO: serialise up.sh / down.sh with flock on fd 9 opened on the lab/ directory (no
# lock file to leave behind). Children inherit fd 9, so after a killed up.sh its orphans (a
# schema migration, a daemon started before that fix) may hold the lock with no up/down alive:
# then proceed, the orphans are lab processes that down.sh ends anyway.
lab_lock() {
  [ -n "${ASAP2LAB_LOCKED:-}" ] && return 0
  exec 9<"$LAB_DIR"
  export ASAP2LAB_LOCKED=1
  flock -n 9 && return 0
  local deadline=$(( $(date +%s) + 600 )) holders p script
  echo "$1: lab lock on $LAB_DIR is held; waiting (max 600 s) while an up.sh/down.sh holds it"
  while ! flock -n 9; do
    script=
    for p in $(lab_lock_holders); do
      [ "$p" = $$ ] && continue
      tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qE '(^|/| )(up|down)\.sh( |$)' && script=$p
    done
    if [ -z "$script" ]; then
      echo "$1: the lock holders are orphans of an interrupted run (no up.sh/down.sh alive): proceeding"
      return 0
    fi
    [ "$(date +%s)" -ge "$deadline" ] && { echo "$1: $script still holds the lab lock after 600 s" >&2; return 1; }
    sleep 1
  done
}
lab_lock_holders() { # PIDs with an open fd on $LAB_DIR
  local fd
  for fd in /proc/[0-9]*/fd/*; do
    [ "$(readlink "$fd" 2>/dev/null)" = "$LAB_DIR" ] && { fd=${fd#/proc/}; echo "${fd%%/*}"; }
  done | sort -u
}
