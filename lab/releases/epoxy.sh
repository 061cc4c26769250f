# LAB_RELEASE=epoxy: OpenStack 2025.1 "Epoxy" from Debian 13 (trixie), run by chroot from a root
# filesystem built by lab/epoxy/build-rootfs.sh (sourced, bash). Everything that differs from
# lab/releases/zed.sh is here; lab/lib/common.sh's names and addresses are the same for both.
LAB_RELEASE_NAME=epoxy
EPOXY_SUITE=trixie
EPOXY_SOURCES=(
  "http://deb.debian.org/debian trixie main"
  "http://deb.debian.org/debian trixie-updates main"
  "http://deb.debian.org/debian-security trixie-security main"
)
# Outside $LAB_STATE (lab/down.sh deletes that): see lab/epoxy/build-rootfs.sh.
LAB_ROOTFS=${LAB_ROOTFS:-/var/cache/asap2lab/rootfs-epoxy}
# prefix of every OpenStack/infra/guest-tool command: chroot into the root (composes after hv-exec)
LAB_CMD=("$LAB_DIR/epoxy/rootfs-exec")
LAB_PACKAGES_LOCK=$LAB_DIR/epoxy/rootfs.lock
# api-paste.ini files: build-rootfs.sh puts them at the root's /usr/local/share/asap2lab/paste,
# the path lab/install.sh uses on the host, so this path is read INSIDE the root (via $LAB_CMD).
LAB_PASTE=/usr/local/share/asap2lab/paste
# Debian 13 still ships the WSGI scripts (python3-keystone, python3-placement), as Debian 12 did.
KEYSTONE_WSGI=(--wsgi-file /usr/bin/keystone-wsgi-public)
PLACEMENT_WSGI=(--wsgi-file /usr/bin/placement-api)
LAB_PREPARE=(bash "$LAB_DIR/epoxy/build-rootfs.sh")   # builds the root once per rootfs.lock (396 s here), then 1 s
LAB_PREPARE_HINT="bash lab/epoxy/build-rootfs.sh"
# nova-compute runs in the root, but the guests' namespaces and links must be made where the host
# (lab/down.sh, lab/faultlab, the harness's ip/tc) sees them: guestctl.py runs in the host's mount
# namespace and root, leaving the chroot (lab/nova/README.md).
# up.sh keeps one lab process in the host's mount namespace (run/pids/host-ns.pid: a sleep) and puts
# "nsenter --mount=/proc/<its pid>/ns/mnt" before this; /proc/1 is not always readable (here pid 1's
# namespace files say "Permission denied" even to root).
LAB_GUESTCTL_HOST_NS=1
LAB_GUESTCTL_PREFIX=/usr/bin/python3
# The guests' sshd runs from the root, so a session in a guest has Debian 13's iperf3 3.18, sockperf
# and tcpdump.
LAB_GUEST_EXEC=$LAB_DIR/epoxy/rootfs-exec
# What rootfs-exec needs in a guest, whose /tmp, /var/tmp and /root are its own tmpfs: the lab
# directory (a clone may live in /tmp) and the root (CI builds one under /var/tmp).
LAB_GUEST_KEEP="$LAB_DIR $LAB_ROOTFS"
# Neutron 26 enforces the secure-RBAC defaults: binding:profile is the service role's alone
# (neutron/conf/policies/port.py), so the harness's data_port.binding_profile: set is refused.
LAB_ADMIN_BINDING_PROFILE=refused
