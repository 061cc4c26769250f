"""asap2lab: wait until the cloud is usable, then create the lab's shared resources.

  python3 cloud_setup.py wait TIMEOUT_S    both hypervisors in Nova, both nova-compute services up,
                                           both Open vSwitch agents alive (hosts compute1, compute2)
  python3 cloud_setup.py resources IMAGE   Glance image asap2lab-guest (raw, public) from file IMAGE;
                                           flat network asap2lab-mgmt (physnet mgmt, shared) with subnet
                                           198.19.128.0/24, no gateway, no DHCP
Uses cloud `asap2lab-admin` from OS_CLIENT_CONFIG_FILE. Idempotent.
"""
import sys
import time

import openstack

HOSTS = ('compute1', 'compute2')


def wait(conn, timeout):
    deadline = time.monotonic() + timeout
    state = ''
    while True:
        try:
            hvs = sorted(h.name for h in conn.compute.hypervisors() if h.state == 'up')
            svcs = sorted(s.host for s in conn.compute.services(binary='nova-compute')
                          if s.state == 'up' and s.status == 'enabled')
            agents = sorted(a.host for a in conn.network.agents(agent_type='Open vSwitch agent') if a.is_alive)
            state = 'hypervisors=%s nova-compute=%s ovs-agents=%s' % (hvs, svcs, agents)
            if all(h in hvs and h in svcs and h in agents for h in HOSTS):
                print('cloud_setup: ready: ' + state)
                return
        except openstack.exceptions.SDKException as e:
            state = 'API error: %s' % e
        if time.monotonic() > deadline:
            sys.exit('cloud_setup: not ready after %ss: %s' % (timeout, state))
        time.sleep(1)


def resources(conn, image_file):
    image = conn.image.find_image('asap2lab-guest')
    if image is None:
        image = conn.create_image('asap2lab-guest', filename=image_file, disk_format='raw',
                                  container_format='bare', visibility='public', wait=True)
    net = conn.network.find_network('asap2lab-mgmt')
    if net is None:
        net = conn.network.create_network(name='asap2lab-mgmt', shared=True,
                                          provider_network_type='flat', provider_physical_network='mgmt',
                                          description='asap2lab management network (root bridge asap2lab-mgmt)')
    subnet = conn.network.find_subnet('asap2lab-mgmt', network_id=net.id)
    if subnet is None:
        subnet = conn.network.create_subnet(name='asap2lab-mgmt', network_id=net.id, ip_version=4,
                                            cidr='198.19.128.0/24', gateway_ip=None, is_dhcp_enabled=False,
                                            allocation_pools=[{'start': '198.19.128.10', 'end': '198.19.128.250'}])
    print('cloud_setup: image asap2lab-guest %s (%s); network asap2lab-mgmt %s mtu %s; subnet %s %s'
          % (image.id, image.status, net.id, net.mtu, subnet.id, subnet.cidr))


def main(argv):
    if len(argv) != 3 or argv[1] not in ('wait', 'resources'):
        sys.exit(__doc__)
    conn = openstack.connect(cloud='asap2lab-admin')
    if argv[1] == 'wait':
        wait(conn, float(argv[2]))
    else:
        resources(conn, argv[2])


if __name__ == '__main__':
    main(sys.argv)
