# LAB_RELEASE=zed (today's lab): OpenStack Zed from Debian 12 (bookworm) packages installed on the
# host by lab/install.sh from lab/packages.lock (sourced, bash). Every binary runs from the host.
LAB_RELEASE_NAME=zed
LAB_PACKAGES_LOCK=$LAB_DIR/packages.lock
LAB_CMD=()                                # prefix of every OpenStack/infra/guest-tool command: none
LAB_PASTE=$LAB_SHARE/paste                # api-paste.ini files taken out of the -common packages
KEYSTONE_WSGI=(--wsgi-file /usr/bin/keystone-wsgi-public)
PLACEMENT_WSGI=(--wsgi-file /usr/bin/placement-api)
