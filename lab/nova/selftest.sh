#!/bin/bash
# selftest.sh: test Asap2LabDriver under /usr/bin/python3 with Debian's nova, no OpenStack services.
# Builds a throwaway hypervisor (netns asap2lab-t-nv-$$, own OVS, br-int), runs drivertest.py against
# it (see its docstring for the checks); a guest left in the temp state afterwards fails the test. Needs root, python3-nova, openvswitch-switch, openssh-server.
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
  # Only this test's guests (cleanup-all.sh would also remove a running lab's guests).
  for g in "$T"/state/guests/*; do
    [ -e "$g" ] || continue
    echo "selftest: leftover guest $(basename "$g") had to be removed" >&2; rc=1
    /usr/bin/python3 "$HERE/../guest/guestctl.py" --state $T/state --hv-netns $HV --ovs-rundir $T/ovs \
      unplug --uuid "$(basename "$g")" >/dev/null
  done
  testhv_down $HV $T/ovs
  rm -rf "$T"
  exit $rc
}
trap teardown EXIT
testhv_up $HV $T/ovs >$T/testhv.log 2>&1 || { cat $T/testhv.log >&2; exit 1; }
mkdir -p $T/state
ssh-keygen -q -t ed25519 -N '' -C asap2lab-drivertest -f $T/id_ed25519
env ASAP2LAB_HV_NETNS=$HV ASAP2LAB_OVS_RUNDIR=$T/ovs ASAP2LAB_STATE=$T/state \
    DRIVERTEST_KEY=$T/id_ed25519 DRIVERTEST_OVS_DB=unix:$T/ovs/db.sock \
    /usr/bin/python3 "$HERE/drivertest.py" 2>$T/drivertest.err || { tail -40 $T/drivertest.err >&2; exit 1; }
echo "selftest: PASS"
