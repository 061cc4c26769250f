#!/bin/bash
# Show what of the asap2lab is running: recorded processes, namespaces, hypervisors' OVS, services.
# Exit 0 when every recorded process is alive, 1 otherwise (also when the lab is down).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
rc=0
if [ ! -d "$PIDS" ]; then echo "lab is down (no $PIDS)"; ip netns list | grep '^asap2lab' && echo "(but asap2lab netns exist: run lab-down)"; exit 1; fi
echo "== processes ($PIDS)"
for f in "$PIDS"/*.pid; do
  [ -e "$f" ] || continue
  pid=$(cat "$f"); name=$(basename "$f" .pid)
  if alive "$pid" && is_lab_pid "$pid"; then
    rss=$(ps -o rss= -g "$pid" 2>/dev/null | awk '{s+=$1} END{printf "%d", s/1024}')
    printf '  %-36s pid %-7s up   %5s MiB (group)\n' "$name" "$pid" "$rss"
  else
    printf '  %-36s pid %-7s DEAD\n' "$name" "$pid"; rc=1
  fi
done
if [ -d "$LAB_STATE/kube/pids" ]; then
  echo "== Kubernetes control plane ($LAB_STATE/kube/pids; lab/kube/up.sh)"
  for f in "$LAB_STATE"/kube/pids/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f"); name=kube-$(basename "$f" .pid)
    if alive "$pid" && is_lab_pid "$pid"; then
      rss=$(ps -o rss= -g "$pid" 2>/dev/null | awk '{s+=$1} END{printf "%d", s/1024}')
      printf '  %-36s pid %-7s up   %5s MiB (group)\n' "$name" "$pid" "$rss"
    else
      printf '  %-36s pid %-7s DEAD\n' "$name" "$pid"; rc=1
    fi
  done
fi
echo "== netns"; ip netns list | grep '^asap2lab' | sed 's/^/  /'
for n in $HVS; do
  echo "== $(hv_host "$n") OVS"
  rx ovs-vsctl --timeout=5 --db="unix:$(hv_rundir "$n")/db.sock" list-br 2>&1 | sed 's/^/  /'
  # the VXLAN next hop must be the peer's br-phy MAC (lab/up.sh check_tunnel_neighbor)
  rx ovs-appctl --timeout=5 -t "$(hv_rundir "$n")/ovs-vswitchd.$(cat "$PIDS/hv$n-ovs-vswitchd.pid" 2>/dev/null).ctl" \
    tnl/neigh/show 2>&1 | sed 's/^/  tnl\/neigh: /'
done
echo "== release: $LAB_RELEASE"
if [ -f "$LAB_STATE/clouds.yaml" ] && rx openstack --version >/dev/null 2>&1; then
  echo "== compute services / network agents"
  OS_CLIENT_CONFIG_FILE=$LAB_STATE/clouds.yaml rx openstack --os-cloud asap2lab-admin compute service list -f value -c Binary -c Host -c State 2>&1 | sed 's/^/  /'
  OS_CLIENT_CONFIG_FILE=$LAB_STATE/clouds.yaml rx openstack --os-cloud asap2lab-admin network agent list -f value -c Host -c Alive -c Binary 2>&1 | sed 's/^/  /'
fi
exit $rc
