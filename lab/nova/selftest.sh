#!/bin/bash
# selftest.sh: test Asap2LabDriver under /usr/bin/python3 with Debian's nova, no OpenStack services.
# Builds a throwaway hypervisor (netns asap2lab-t-nv-$$, own OVS, br-int), runs drivertest.py against
# it (see its docstring for the checks), then lab/guest/cleanup-all.sh on the temp state and verifies
# that no guest netns of this test is left. Needs root, python3-nova, openvswitch-switch, openssh-server.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../guest/testhv.sh"
[ "$(id -u)" = 0 ] || { echo "selftest: must run as root" >&2; exit 1; }
/usr/bin/python3 -c 'import nova.virt.fake' 2>/dev/null || { echo "selftest: python3-nova not installed" >&2; exit 1; }

HV=asap2lab-t-nv-$$
T=$(mktemp -d /tmp/asap2lab-t-XXXXXX)
teardown() {
  local rc=$?
  set +e
  ASAP2LAB_STATE=$T/state "$HERE/../guest/cleanup-all.sh" "$T/ovs" || rc=1
  testhv_down $HV $T/ovs
  rm -rf "$T"
  exit $rc
}
trap teardown EXIT
testhv_up $HV $T/ovs >$T/testhv.log 2>&1 || { cat $T/testhv.log >&2; exit 1; }
mkdir -p $T/state
ssh-keygen -q -t ed25519 -N '' -C asap2lab-drivertest -f $T/id_ed25519
before=$(ip netns list | grep -c '^asap2lab-vm-' || true)
env ASAP2LAB_HV_NETNS=$HV ASAP2LAB_OVS_RUNDIR=$T/ovs ASAP2LAB_STATE=$T/state \
    DRIVERTEST_KEY=$T/id_ed25519 DRIVERTEST_OVS_DB=unix:$T/ovs/db.sock \
    /usr/bin/python3 "$HERE/drivertest.py" 2>$T/drivertest.err || { tail -40 $T/drivertest.err >&2; exit 1; }
after=$(ip netns list | grep -c '^asap2lab-vm-' || true)
[ "$after" = "$before" ] || { echo "selftest: guest netns count $before -> $after" >&2; exit 1; }
echo "selftest: PASS"
