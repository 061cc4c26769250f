# LAB_RELEASE=zed (today's lab): OpenStack Zed from Debian 12 (bookworm) packages installed on the
# host by lab/install.sh from lab/packages.lock (sourced, bash). Every binary runs from the host.
LAB_RELEASE_NAME=zed
LAB_PACKAGES_LOCK=$LAB_DIR/packages.lock
LAB_CMD=()                                # prefix of every OpenStack/infra/guest-tool command: none
LAB_PASTE=${LAB_SHARE:-/usr/local/share/asap2lab}/paste  # api-paste.ini files taken out of the -common packages (lab/install.sh)
KEYSTONE_WSGI=(--wsgi-file /usr/bin/keystone-wsgi-public)
PLACEMENT_WSGI=(--wsgi-file /usr/bin/placement-api)
LAB_PREPARE=()                            # lab/install.sh (every make lab runs it) installs Zed on the host
LAB_PREPARE_HINT="make -f lab/lab.mk lab-install"
LAB_GUESTCTL_HOST_NS=0                    # nova-compute runs on the host: guestctl.py as it is
LAB_GUESTCTL_PREFIX=/usr/bin/python3
LAB_ADMIN_BINDING_PROFILE=written         # Neutron 21's policy lets the admin write binding:profile
LAB_GUEST_KEEP=
LAB_GUEST_EXEC=                           # guests' sshd (and so their iperf3, sockperf, tcpdump): the host's
