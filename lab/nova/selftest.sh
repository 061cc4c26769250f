#!/bin/bash
# selftest.sh [--release zed|epoxy]: test Asap2LabDriver with Debian's nova, no OpenStack services.
# Builds a throwaway hypervisor (netns asap2lab-t-nv-$$, own OVS, br-int), runs drivertest.py against
# it (see its docstring for the checks); a guest left in the temp state afterwards fails the test. Needs root, python3-nova, openvswitch-switch, openssh-server.
#   zed (default; LAB_RELEASE=zed): /usr/bin/python3 with the host's Nova 26, guests run host tools.
#   epoxy (LAB_RELEASE=epoxy): drivertest.py runs with the Debian 13 root's python3 and Nova 31
#     through lab/epoxy/rootfs-exec, the driver runs guestctl on the host (ASAP2LAB_GUESTCTL_PREFIX,
#     escaping the chroot) and the guests' sshd from the root (ASAP2LAB_GUEST_EXEC=rootfs-exec).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../guest/testhv.sh"
RELEASE=${LAB_RELEASE:-zed}
case "${1:-}" in
  --release) RELEASE=${2:?--release needs zed or epoxy} ;;
  --release=*) RELEASE=${1#--release=} ;;
  '') ;;
  *) echo "usage: selftest.sh [--release zed|epoxy]" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "selftest: must run as root" >&2; exit 1; }
case $RELEASE in
  zed)
    RUNPY=(/usr/bin/python3); IPERF3=3.12; DRIVER_ENV=() ;;
  epoxy)
    # The host's mount namespace, entered from inside the chroot's private one through this
    # script's own process, as lab/up.sh does through its host-ns process (README.md, "Epoxy").
    RUNPY=("$HERE/../epoxy/rootfs-exec" /usr/bin/python3); IPERF3=3.18
    DRIVER_ENV=("ASAP2LAB_GUESTCTL_PREFIX=nsenter --mount=/proc/$$/ns/mnt /usr/bin/python3"
                "ASAP2LAB_GUEST_EXEC=$(cd "$HERE/../epoxy" && pwd)/rootfs-exec"
                # as the lab's (lab/releases/epoxy.sh): the clone and the root stay visible under
                # the guest's own tmpfs /tmp, /var/tmp, /root (CI's root is in /var/tmp)
                "ASAP2LAB_GUEST_KEEP=$(cd "$HERE/.." && pwd) ${LAB_ROOTFS:-/var/cache/asap2lab/rootfs-epoxy}") ;;
  *) echo "selftest: unknown release $RELEASE (zed|epoxy)" >&2; exit 2 ;;
esac
"${RUNPY[@]}" -c 'import nova.virt.fake' 2>/dev/null || { echo "selftest: nova not importable by ${RUNPY[*]}" >&2; exit 1; }

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
# LAB_STATE: what rootfs-exec binds besides /tmp (never the running lab's).
env LAB_STATE=$T/state ASAP2LAB_HV_NETNS=$HV ASAP2LAB_OVS_RUNDIR=$T/ovs ASAP2LAB_STATE=$T/state \
    DRIVERTEST_KEY=$T/id_ed25519 DRIVERTEST_OVS_DB=unix:$T/ovs/db.sock DRIVERTEST_IPERF3=$IPERF3 \
    DRIVERTEST_HOST_PID=$$ "${DRIVER_ENV[@]}" "${RUNPY[@]}" "$HERE/drivertest.py" 2>$T/drivertest.err || { tail -40 $T/drivertest.err >&2; exit 1; }
echo "selftest ($RELEASE): PASS"
