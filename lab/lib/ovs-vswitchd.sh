# A hypervisor's ovs-vswitchd, started the one way the lab starts it (bash; needs lib/common.sh):
# sourced by lab/up.sh (vswitchd_start, underlay_address at lab up), and run as
#
#   bash lab/lib/ovs-vswitchd.sh restart N
#
# by the fault matrix (lab/faultlab RestartVswitchd) once a row killed hypervisor N's. Its
# ovsdb-server still runs and keeps every bridge, port and setting (userspace-tso-enable, MTUs,
# controllers), so the new process builds the same switch; the Neutron OVS agent or ovn-controller
# notices the restart and programs its flows again.

# vswitchd_start N: ovs-vswitchd of hypervisor N inside it (lib/hv-exec: its netns, its
# /run/openvswitch), recorded in $PIDS/hvN-ovs-vswitchd.pid; returns once its control socket
# ovs-vswitchd.<that pid>.ctl exists (hv-exec, nice, the release's prefix and env all exec: the
# recorded pid is ovs-vswitchd's own).
# The userspace datapath forwards every packet in ovs-vswitchd's own thread, reading each port
# through an AF_PACKET socket with a small buffer: on 2 cores shared with OpenStack, the guests'
# iperf3 and the harness, a descheduled ovs-vswitchd drops bursts and TCP's back-off then leaves a
# stream silent for seconds (the concurrent row's "Connection timed out"). A real hypervisor gives
# OVS its own CPU time; here it runs at nice -10 (its threads inherit it), so it is served before
# the processes that feed it.
vswitchd_start() {
  local n=$1 D; D=$(hv_rundir "$n")
  start "hv$n-ovs-vswitchd" "$LAB_DIR/lib/hv-exec" "$n" nice -n -10 "${LAB_CMD[@]}" env OVS_RUNDIR="$D" OVS_DBDIR="$DATA/hv$n" \
    ovs-vswitchd "unix:$D/db.sock" --pidfile="$D/ovs-vswitchd.pid" \
    --log-file="$LOGS/hv$n-ovs-vswitchd.log" -vconsole:off --no-chdir
  wait_for "hv$n ovs-vswitchd" 30 test -S "$D/ovs-vswitchd.$(cat "$PIDS/hv$n-ovs-vswitchd.pid").ctl"
}

# underlay_address N: br-phy, the internal port of the bridge that owns the underlay port ul0,
# carries hypervisor N's underlay address and is up: the tunnels' local_ip lives there, so the
# userspace datapath routes and ARP-resolves the tunnel next hop itself.
underlay_address() {
  local n=$1
  ip -n "$(hv_ns "$n")" addr replace "$(hv_ulip "$n")/24" dev br-phy
  ip -n "$(hv_ns "$n")" link set br-phy up
}

# NEIGH_AGING_S: the tunnel neighbour cache's aging, OVS's maximum (tnl/neigh/aging: 1-3600 s; its
# default is 900).
NEIGH_AGING_S=3600

# tunnel_neighbors N PEERS: hypervisor N's OVS knows each peer's tunnel next hop (the peer's br-phy
# MAC) before any packet needs it, and keeps it an hour after its last use. The userspace datapath
# resolves a tunnel's next hop itself: on a miss it drops the packet it was translating and sends an
# ARP request (ofproto-dpif-xlate.c, native_tunnel_output), and lab up's own pings leave the entry
# "not learned yet" more often than not. A kernel datapath (MOSK's) queues such a packet in the
# kernel's neighbour table instead. On the lab the miss lost the first message of a sockperf
# ping-pong, which resends nothing, so the run measured nothing: 3 of 5 ping-pongs after
# tnl/neigh/flush on the OVN lab, against 0 of 40 fresh flows with the entries known
# (docs/MEASUREMENTS.md, 2026-12-06). OVS 3.5 counts that drop only as drop_action_of_pipeline.
tunnel_neighbors() {
  local n=$1 peer mac ctl
  ctl=$(hv_rundir "$n")/ovs-vswitchd.$(cat "$PIDS/hv$n-ovs-vswitchd.pid").ctl
  rx ovs-appctl -t "$ctl" tnl/neigh/aging "$NEIGH_AGING_S" >/dev/null || return 1
  for peer in $2; do
    [ "$peer" = "$n" ] && continue
    mac=$(ip -n "$(hv_ns "$peer")" -br link show br-phy | awk '{print $3}')
    [ -n "$mac" ] || { echo "hv$peer: no br-phy MAC (ip -n $(hv_ns "$peer") link show br-phy)" >&2; return 1; }
    rx ovs-appctl -t "$ctl" tnl/neigh/set br-phy "$(hv_ulip "$peer")" "$mac" >/dev/null || return 1
  done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
  if [ $# -ne 2 ] || [ "$1" != restart ]; then echo "usage: ovs-vswitchd.sh restart N" >&2; exit 2; fi
  n=$2
  case " $HVS " in *" $n "*) ;; *) echo "ovs-vswitchd.sh: no hypervisor $n in this lab (hypervisors: $HVS)" >&2; exit 2 ;; esac
  f=$PIDS/hv$n-ovs-vswitchd.pid
  [ -s "$f" ] || { echo "ovs-vswitchd.sh: $f missing: hypervisor $n's ovs-vswitchd was never started (is the lab up?)" >&2; exit 1; }
  if alive "$(cat "$f")" && is_lab_pid "$(cat "$f")"; then
    echo "ovs-vswitchd.sh: hypervisor $n's ovs-vswitchd (pid $(cat "$f")) still runs: not starting another" >&2
    exit 1
  fi
  old=$(cat "$f")
  vswitchd_start "$n"
  # br-phy is a tap device of the userspace datapath: if it outlived the killed process it still
  # has its address; if it went with it, the new process made it again without one. Either way
  # it gets its address (and up) as lab up gave them. (br-mgmt's and br-int's taps carry no
  # address the data path needs.)
  wait_for "hv$n br-phy device" 30 ip -n "$(hv_ns "$n")" link show br-phy
  underlay_address "$n"
  # The restarted switch starts with an empty tunnel neighbour cache; the peers' entries for it are
  # set again too, should its br-phy have come back with another MAC.
  for p in $HVS; do tunnel_neighbors "$p" "$HVS"; done
  echo "hypervisor $n: ovs-vswitchd restarted (pid $(cat "$f"), was $old)"
fi
