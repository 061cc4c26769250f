"""asap2lab: wait until the cloud is usable, then create the lab's shared resources.

  python3 cloud_setup.py wait TIMEOUT_S    every hypervisor in Nova (<host>.ASAP2LAB_HV_DOMAIN with a
                                           domain), its nova-compute service up, its
                                           L2 agent alive (Open vSwitch agent, or OVN Controller agent with ASAP2LAB_BACKEND=ovn; the hosts: ASAP2LAB_HOSTS,
                                           space-separated, from lab/up.sh; default compute1 compute2)
  python3 cloud_setup.py schedulable TIMEOUT_S
                                           what the scheduler needs of every host, read where it reads
                                           it: a resource provider in Placement with allocation
                                           candidates, a host mapping to the cell (nova_api), and a
                                           PCI pool of the fake VFs (the cell's compute_nodes.pci_stats,
                                           which PciPassthroughFilter filters on); database from
                                           LAB_DB_URL (mysql+pymysql://user:pw@host:port)
  python3 cloud_setup.py resources IMAGE   Glance image asap2lab-guest (raw, public) from file IMAGE;
                                           flat network asap2lab-mgmt (physnet mgmt, shared) with subnet
                                           198.19.128.0/24, no gateway, no DHCP; compute quotas of
                                           the demo and admin projects raised (COMPUTE_QUOTA)
Uses cloud `asap2lab-admin` from OS_CLIENT_CONFIG_FILE. Idempotent.
"""
import os
import sys
import time

HOSTS = tuple(os.environ.get('ASAP2LAB_HOSTS', 'compute1 compute2').split())
# LAB_HV_DOMAIN (lab/up.sh): each host's nova-compute names its node (the hypervisor, the
# Placement resource provider) <host>.<domain>; the service host, the L2 agent's host, the cell's
# host mapping and compute_nodes.host stay <host>.
HV_DOMAIN = os.environ.get('ASAP2LAB_HV_DOMAIN', '')


def node_of(host, domain=HV_DOMAIN):
    """Nova's hypervisor name (the compute node's) of service host host."""
    return '%s.%s' % (host, domain) if domain else host
# Neutron's L2 agent on each host by the lab's backend (ASAP2LAB_BACKEND): ML2/OVN lists each
# chassis's ovn-controller as an agent of this type
L2_AGENT = {'ovs': 'Open vSwitch agent', 'ovn': 'OVN Controller agent'}[os.environ.get('ASAP2LAB_BACKEND', 'ovs')]
# room for the fleet of 9 nodes at most: 9 pairs of two 16-vCPU, 2 GiB servers, and more
COMPUTE_QUOTA = {'cores': 512, 'instances': 64, 'ram': 262144}


def wait(conn, timeout):
    deadline = time.monotonic() + timeout
    state = ''
    while True:
        try:
            hvs = sorted(h.name for h in conn.compute.hypervisors() if h.state == 'up')
            svcs = sorted(s.host for s in conn.compute.services(binary='nova-compute')
                          if s.state == 'up' and s.status == 'enabled')
            agents = sorted(a.host for a in conn.network.agents(agent_type=L2_AGENT) if a.is_alive)
            state = 'hypervisors=%s nova-compute=%s %s=%s' % (hvs, svcs, L2_AGENT, agents)
            if all(node_of(h) in hvs and h in svcs and h in agents for h in HOSTS):
                print('cloud_setup: ready: ' + state)
                return
        except Exception as e:  # noqa: BLE001 - the SDK's errors, a refused connection: look again
            state = 'API error: %s' % e
        if time.monotonic() > deadline:
            sys.exit('cloud_setup: not ready after %ss: %s' % (timeout, state))
        time.sleep(1)


# the fake VFs the lab driver reports (nova.conf [pci] device_spec)
PCI_VENDOR, PCI_PRODUCT = '15b3', '101e'


def pci_vfs(pci_stats):
    """Free VFs of the lab's product in one compute_nodes.pci_stats value (a
    PciDevicePoolList primitive as nova.objects stores it; older rows hold a
    bare list of pools). Every pool dict found at any depth counts."""
    if not pci_stats:
        return 0
    import json
    total = 0
    stack = [json.loads(pci_stats)]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if v.get('vendor_id') == PCI_VENDOR and v.get('product_id') == PCI_PRODUCT:
                total += int(v.get('count') or 0)
            else:
                stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return total


def db_rows(url, query):
    import urllib.parse
    import pymysql
    u = urllib.parse.urlsplit(url)
    db = pymysql.connect(host=u.hostname, port=u.port or 3306, user=urllib.parse.unquote(u.username),
                         password=urllib.parse.unquote(u.password or ''), connect_timeout=5)
    try:
        with db.cursor() as cur:
            cur.execute(query)
            return cur.fetchall()
    finally:
        db.close()


def schedulable_state(conn, db_url):
    """One look at the three things a build needs of each host; returns
    (ready, description)."""
    rps = conn.placement.get('/resource_providers', microversion='1.14').json()['resource_providers']
    rp_host = {rp['uuid']: rp['name'] for rp in rps}
    cands = conn.placement.get('/allocation_candidates?resources=VCPU:1,MEMORY_MB:1,DISK_GB:1',
                               microversion='1.10').json()
    with_cands = sorted(rp_host.get(u, u) for u in cands.get('provider_summaries', {}))
    mapped = sorted(r[0] for r in db_rows(db_url, 'SELECT host FROM nova_api.host_mappings'))
    vfs = {r[0]: pci_vfs(r[1]) for r in db_rows(
        db_url, 'SELECT host, pci_stats FROM nova.compute_nodes WHERE deleted = 0')}
    ready = all(node_of(h) in with_cands and h in mapped and vfs.get(h, 0) > 0 for h in HOSTS)
    return ready, 'placement candidates=%s cell host mappings=%s free %s:%s VFs=%s' % (
        with_cands, mapped, PCI_VENDOR, PCI_PRODUCT, {h: vfs.get(h, 0) for h in HOSTS})


def schedulable(conn, db_url, timeout):
    deadline = time.monotonic() + timeout
    start = time.monotonic()
    state = ''
    while True:
        try:
            ready, state = schedulable_state(conn, db_url)
            if ready:
                print('cloud_setup: schedulable after %.1fs: %s' % (time.monotonic() - start, state))
                return
        except Exception as e:  # an API or database not answering yet: look again
            state = '%s: %s' % (type(e).__name__, e)
        if time.monotonic() > deadline:
            sys.exit('cloud_setup: hosts %s not schedulable after %ss: %s' % (', '.join(HOSTS), timeout, state))
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
    # Nova's default quota (20 cores) takes one 16-vCPU pair; the fault matrix runs two pairs at
    # once and the fleet phases four, created as the admin (the admin pins them: its project)
    for project in ('demo', 'admin'):
        conn.set_compute_quotas(project, cores=COMPUTE_QUOTA['cores'], instances=COMPUTE_QUOTA['instances'],
                                ram=COMPUTE_QUOTA['ram'])
    print('cloud_setup: image asap2lab-guest %s (%s); network asap2lab-mgmt %s mtu %s; subnet %s %s; '
          'compute quota of projects demo and admin %s'
          % (image.id, image.status, net.id, net.mtu, subnet.id, subnet.cidr, COMPUTE_QUOTA))


def main(argv):
    if len(argv) != 3 or argv[1] not in ('wait', 'schedulable', 'resources'):
        sys.exit(__doc__)
    import openstack  # here, so that the unit tests of the pure parts run without the SDK
    conn = openstack.connect(cloud='asap2lab-admin')
    if argv[1] == 'wait':
        wait(conn, float(argv[2]))
    elif argv[1] == 'schedulable':
        import os
        schedulable(conn, os.environ['LAB_DB_URL'], float(argv[2]))
    else:
        resources(conn, argv[2])


if __name__ == '__main__':
    main(sys.argv)
