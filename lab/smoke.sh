#!/bin/bash
# Smoke test of an up lab with the Debian `openstack` CLI only (independent of the Go harness):
#  - a direct port (vnic-type direct, port security off) on a VXLAN (LAB_BACKEND=ovn: Geneve) tenant network, created by the
#    tenant, binds with binding:vif_type=ovs when a server boots with it, and Nova writes the
#    switchdev VF's capabilities into its binding:profile (no admin writes it: Epoxy's Neutron
#    lets only the service role);
#  - two 16-vCPU servers in an anti-affinity group land on compute1 and compute2;
#  - the ports go ACTIVE; a hypervisor answers over SSH with stock ovs-vsctl;
#  - everything it created is deleted again (also when a check fails).
# Exit 0 when every check passed. Resource names start with asap2lab-smoke-<pid>.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
export OS_CLIENT_CONFIG_FILE=$LAB_STATE/clouds.yaml
[ -f "$OS_CLIENT_CONFIG_FILE" ] || { echo "smoke.sh: $OS_CLIENT_CONFIG_FILE missing: is the lab up?" >&2; exit 1; }
T0=$(date +%s)
say() { echo "[lab-smoke +$(( $(date +%s) - T0 ))s] $*"; }
P=asap2lab-smoke-$$
os() { rx openstack --os-cloud asap2lab "$@"; }
adm() { rx openstack --os-cloud asap2lab-admin "$@"; }
fails=0
check() { # check DESCRIPTION WANT GOT
  if [ "$2" = "$3" ]; then say "PASS $1: $3"; else say "FAIL $1: want '$2', got '$3'"; fails=$((fails + 1)); fi
}

cleanup() {
  set +e
  say "cleanup"
  os server delete --wait $P-vm1 $P-vm2 >/dev/null 2>&1
  for p in $P-port1 $P-port2; do os port delete "$p" >/dev/null 2>&1; done
  os server group delete $P-aa >/dev/null 2>&1
  os network delete $P-net >/dev/null 2>&1
  adm flavor delete $P-16c >/dev/null 2>&1
  left=$( { os server list -f value -c Name; os port list -f value -c Name; os network list -f value -c Name;
            os server group list -f value -c Name; adm flavor list --all -f value -c Name; } 2>/dev/null | grep -c "^$P" )
  if [ "$left" != 0 ]; then say "FAIL cleanup: $left resources named $P* left"; fails=$((fails + 1)); else say "PASS cleanup: nothing named $P* left"; fi
}
trap cleanup EXIT
trap 'say "FAIL: command at line $LINENO exited $?"; fails=$((fails + 1))' ERR

adm flavor create --vcpus 16 --ram 1024 --disk 1 --private --project demo $P-16c >/dev/null
os network create --mtu $TENANT_MTU $P-net >/dev/null
os subnet create --network $P-net --subnet-range 198.18.10.0/24 --gateway none $P-subnet >/dev/null
check "tenant network type" $TENANT_TYPE "$(adm network show $P-net -f value -c provider:network_type)"
os server group create --policy anti-affinity $P-aa >/dev/null
for i in 1 2; do
  os port create --network $P-net --vnic-type direct --disable-port-security $P-port$i >/dev/null
done
say "created flavor, network, group, 2 direct ports; booting 2 servers"
gid=$(os server group show $P-aa -f value -c id)
declare -A VM PORT
for i in 1 2; do
  PORT[$i]=$(adm port show $P-port$i -f value -c id)
  VM[$i]=$(os server create --flavor $P-16c --image asap2lab-guest --port "${PORT[$i]}" \
    --hint group="$gid" -f value -c id $P-vm$i)
done
for i in 1 2; do
  deadline=$(( $(date +%s) + 180 ))
  while :; do
    st=$(os server show "${VM[$i]}" -f value -c status)
    [ "$st" = ACTIVE ] || [ "$st" = ERROR ] && break
    [ "$(date +%s)" -ge "$deadline" ] && break
    sleep 2
  done
  check "server $P-vm$i status" ACTIVE "$st"
done
say "servers ACTIVE after $(( $(date +%s) - T0 ))s"
h1=$(adm server show "${VM[1]}" -f value -c OS-EXT-SRV-ATTR:host)
h2=$(adm server show "${VM[2]}" -f value -c OS-EXT-SRV-ATTR:host)
check "anti-affinity hosts" "compute1 compute2" "$(printf '%s\n%s\n' "$h1" "$h2" | sort | tr '\n' ' ' | sed 's/ $//')"
for i in 1 2; do
  # -f value prints show columns in alphabetical order
  read -r bhost vif vnic <<<"$(adm port show "${PORT[$i]}" -f value -c binding_host_id -c binding_vif_type -c binding_vnic_type | tr '\n' ' ')"
  check "port$i binding:vif_type" ovs "$vif"
  check "port$i binding:vnic_type" direct "$vnic"
  check "port$i binding:host_id = server host" "$( [ $i = 1 ] && echo "$h1" || echo "$h2")" "$bhost"
  caps=$(adm port show "${PORT[$i]}" -f json -c binding_profile | python3 -c 'import json,sys; print("switchdev" in json.load(sys.stdin)["binding_profile"].get("capabilities", []))')
  check "port$i binding:profile capabilities written by Nova contain switchdev" True "$caps"
  deadline=$(( $(date +%s) + 60 ))
  while st=$(adm port show "${PORT[$i]}" -f value -c status) && [ "$st" != ACTIVE ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 2; done
  check "port$i status" ACTIVE "$st"
done
n=1; [ "$h1" = compute2 ] && n=2
port1=${PORT[1]}
got=$(ssh -q -i "$SSHD/id_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes \
  -o UserKnownHostsFile="$SSHD/known_hosts" root@"$(hv_ctlip $n)" \
  "ovs-vsctl --bare --columns=name find Interface external_ids:iface-id=$port1 | grep -c ." || true)
check "ssh $(hv_ctlip $n) ovs-vsctl: br-int interface with iface-id of port1" 1 "$got"
say "done: $fails failed checks"
trap - EXIT ERR
cleanup
[ $fails = 0 ]
