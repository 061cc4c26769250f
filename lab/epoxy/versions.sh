#!/bin/sh
# versions.sh: the versions of the Epoxy root's OpenStack services and tools, one per line, run
# INSIDE the root (lab/epoxy/rootfs-exec sh lab/epoxy/versions.sh).
v() { python3 -c "from importlib.metadata import version; print(version('$1'))" 2>&1 | tail -1; }
echo "nova-manage --version: $(python3 -c 'import sys; sys.argv=["nova-manage","--version"]; from nova.cmd.manage import main; main()' 2>&1 | tail -1)"
echo "neutron-server --version: $(python3 -c 'import sys; sys.argv=["neutron-server","--version"]; from neutron.cmd.eventlet.server import main; main()' 2>&1 | tail -1)"
echo "keystone: $(v keystone)"
echo "glance: $(v glance)"
echo "placement: $(v openstack-placement)"
echo "python3-openstackclient: $(openstack --version 2>&1)"
echo "ovs-vswitchd --version: $(ovs-vswitchd --version | head -1)"
echo "iperf3 --version: $(iperf3 --version | head -1)"
echo "sockperf --version: $(sockperf --version 2>&1 | grep -m1 -i version)"
echo "mariadbd --version: $(mariadbd --version)"
echo "rabbitmq-server: $(dpkg-query -W -f='${Version}' rabbitmq-server)"
echo "uwsgi --version: $(uwsgi --version)"
echo "python3 --version: $(python3 --version)"
echo "debian: $(cat /etc/debian_version)"
