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
