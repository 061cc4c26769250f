#!/usr/bin/python3
"""drivertest: exercise Asap2LabDriver with Debian's nova (Zed or Epoxy), without an OpenStack.

Run by lab/nova/selftest.sh, which provides a throwaway hypervisor and sets ASAP2LAB_HV_NETNS,
ASAP2LAB_OVS_RUNDIR, ASAP2LAB_STATE plus DRIVERTEST_KEY (a private key file whose .pub is the
servers' keypair), DRIVERTEST_OVS_DB and DRIVERTEST_IPERF3 (the iperf3 version the guests must
run, e.g. 3.12 on Zed, 3.18 on Epoxy). Runs in the host's mount namespace (Zed) or chrooted by
lab/epoxy/rootfs-exec (Epoxy), where guest namespaces made later by guestctl on the host are not
mounted under /run/netns: commands enter a guest's netns through its sshd's /proc/PID/ns/net.
Checks, each printed as ok/FAIL:
  - the driver loads the way nova-compute loads it (nova.virt.<compute_driver>) via the shim's
    path extension, and init_host refuses to start without its environment;
  - get_available_resource: 64 vCPU / 128 GiB / 2000 GB, PCI devices that Nova's own PciDevice
    object and a [pci] device_spec {vendor 15b3, product 101e, physical_network null} accept,
    with vendor_id fitting MySQL's VARCHAR(4) column and switchdev in network_caps;
  - update_provider_tree: VCPU max_unit 64 (a 16 vCPU flavor fits);
  - Nova's own neutron API (_populate_neutron_binding_profile, what it runs when it binds a direct
    port) writes binding:profile capabilities with switchdev from a VF claimed for the port;
  - Nova with nova.virt.node (>= 27): the compute node uuid is the one in state_path/compute_id,
    the same after a restart;
  - spawn of two servers built from real Nova objects (veth by default; internal by flavor extra
    spec lab:plug=internal; server metadata lab_plug=veth overriding the flavor), with a direct
    VIF on a jumbo network: guests answer ping and SSH with the keypair, get_console_output has the
    host key block, power_off/power_on/reboot work; the recorded guest pid is sshd leading its
    process group; iperf3 --version over SSH is DRIVERTEST_IPERF3 (the release's tools);
  - destroy leaves nothing; destroy and cleanup again do not fail;
  - ASAP2LAB_NODENAME (lab/up.sh LAB_HV_DOMAIN): the node, its hypervisor_hostname and (Nova
    >= 27) get_nodenames_by_uuid are that FQDN while the service host stays compute1; a bad
    name stops init_host naming the variable.
`drivertest.py nodename` runs the last group alone: no hypervisor, no root, only Debian's nova
(python3 lab/nova/drivertest.py nodename; on Epoxy through lab/epoxy/rootfs-exec /usr/bin/python3).
"""
import inspect
import json
import os
import subprocess
import sys
import uuid as uuidlib

import nova.cmd  # noqa: F401  eventlet monkey patching, as in nova-compute
import nova.virt

HERE = os.path.dirname(os.path.abspath(__file__))
nova.virt.__path__.append(HERE)

from nova import conf as nova_conf  # noqa: E402
from nova.compute import power_state  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import exception  # noqa: E402
from nova.network import model  # noqa: E402
from nova import objects  # noqa: E402
from nova.pci import devspec  # noqa: E402
from nova.virt import driver as virt_driver  # noqa: E402
from nova.virt import fake  # noqa: E402

CONF = nova_conf.CONF
FAILS = []


def check(what, cond, detail=''):
    print('%s: %s%s' % ('ok' if cond else 'FAIL', what, (' (%s)' % detail) if detail and not cond else ''))
    if not cond:
        FAILS.append(what)


STATE = os.environ.get('ASAP2LAB_STATE', '')


def netns_file(ns):
    """A file to enter netns ns by: a guest's through its sshd (see the docstring), else /run/netns."""
    if ns.startswith('asap2lab-vm-'):
        try:
            with open(os.path.join(STATE, 'guests', ns[len('asap2lab-vm-'):], 'sshd.pid')) as f:
                return '/proc/%d/ns/net' % int(f.read().strip())
        except (OSError, ValueError):
            pass
    return '/run/netns/' + ns


def sh(*args, ns=None, check_rc=False):
    cmd = (['nsenter', '--net=' + netns_file(ns)] if ns else []) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check_rc and r.returncode:
        raise RuntimeError('%s: %s' % (' '.join(cmd), r.stderr))
    return r


def proc_start(pid):
    """Start time of a live (non-zombie) pid, else None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            rest = f.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if rest[0] == 'Z' else rest[19]


def make_instance(ctx, n, key_data, extra_specs=None, metadata=None, keypairs=None):
    flavor = objects.Flavor(id=n, flavorid=str(n), name='f%d' % n, vcpus=16, memory_mb=4096, root_gb=10,
                            ephemeral_gb=0, swap=0, extra_specs=extra_specs or {})
    inst = objects.Instance(context=ctx, id=n, uuid=str(uuidlib.uuid4()), hostname='asap2lab-t-vm%d' % n,
                            flavor=flavor, metadata=metadata or {}, key_data=key_data,
                            keypairs=objects.KeyPairList(objects=keypairs or []), image_ref='',
                            vm_state='building',
                            power_state=power_state.NOSTATE, task_state=None, host='compute1',
                            node='compute1', system_metadata={})
    return inst


def make_network_info(n):
    port = str(uuidlib.uuid4())
    subnet = model.Subnet(cidr='198.18.77.0/24', gateway=model.IP(address='198.18.77.1', type='gateway'),
                          ips=[model.FixedIP(address='198.18.77.%d' % (20 + n))],
                          routes=[model.Route(cidr='198.18.78.0/24', gateway=model.IP(address='198.18.77.254'))])
    net = model.Network(id=str(uuidlib.uuid4()), bridge='br-int', label='asap2lab-t-net',
                        subnets=[subnet], meta={'mtu': 8950, 'tunneled': True})
    vif = model.VIF(id=port, address='fa:16:3e:77:01:%02x' % n, network=net, type='ovs',
                    vnic_type='direct', devname='tap' + port[:11],
                    details={'bridge_name': 'br-int', 'port_filter': True, 'datapath_type': 'netdev',
                             'connectivity': 'l2', 'ovs_hybrid_plug': False},
                    profile={'pci_vendor_info': '15b3:101e', 'pci_slot': '0000:81:00.%d' % (1 + n),
                             'physical_network': None, 'capabilities': ['switchdev']})
    return model.NetworkInfo([vif])


def ssh_cmd(key, ip, command, ns):
    return sh('ssh', '-i', key, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=5',
              '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR',
              'root@' + ip, command, ns=ns)


def nodename_checks():
    """ASAP2LAB_NODENAME: Nova's name of the hypervisor (an FQDN) apart from its service host."""
    fqdn = 'compute1.asap2lab.test'
    saved = os.environ.get('ASAP2LAB_NODENAME')
    try:
        os.environ['ASAP2LAB_NODENAME'] = fqdn
        drv = virt_driver.load_compute_driver(fake.FakeVirtAPI(), 'asap2lab_driver.Asap2LabDriver')
        drv.init_host('compute1')
        res = drv.get_available_resource(fqdn)
        check('ASAP2LAB_NODENAME: the one node is the FQDN, not the service host',
              drv.get_available_nodes() == [fqdn] and drv.get_available_resource('compute1') == {},
              str(drv.get_available_nodes()))
        check('ASAP2LAB_NODENAME: hypervisor_hostname is the FQDN, with the fake VFs',
              res.get('hypervisor_hostname') == fqdn
              and len(json.loads(res.get('pci_passthrough_devices') or '[]')) == 9,
              str({k: res.get(k) for k in ('hypervisor_hostname', 'host_hostname')}))
        if hasattr(virt_driver.ComputeDriver, 'get_nodenames_by_uuid') and \
                'get_nodenames_by_uuid' in type(drv).__dict__:
            names = drv.get_nodenames_by_uuid()
            check('ASAP2LAB_NODENAME: get_nodenames_by_uuid names the FQDN', list(names.values()) == [fqdn],
                  str(names))
        os.environ['ASAP2LAB_NODENAME'] = 'compute1 .asap2lab.test'
        drv = virt_driver.load_compute_driver(fake.FakeVirtAPI(), 'asap2lab_driver.Asap2LabDriver')
        try:
            drv.init_host('compute1')
            check('a bad ASAP2LAB_NODENAME stops init_host', False)
        except exception.NovaException as e:
            check('a bad ASAP2LAB_NODENAME stops init_host, naming it', 'ASAP2LAB_NODENAME' in str(e), str(e))
    finally:
        if saved is None:
            os.environ.pop('ASAP2LAB_NODENAME', None)
        else:
            os.environ['ASAP2LAB_NODENAME'] = saved


def main_nodename():
    """drivertest.py nodename: the ASAP2LAB_NODENAME checks alone, in a temporary state_path."""
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp(prefix='asap2lab-t-drv-')
    try:
        CONF([], project='nova', default_config_files=[])
        CONF.set_override('state_path', tmp)
        objects.register_all()
        # what init_host checks is set (nothing is run: no guest is made)
        os.environ.update({'ASAP2LAB_HV_NETNS': 'asap2lab-t-none', 'ASAP2LAB_OVS_RUNDIR': tmp,
                           'ASAP2LAB_STATE': tmp})
        # the default: the node is the service host
        os.environ.pop('ASAP2LAB_NODENAME', None)
        drv = virt_driver.load_compute_driver(fake.FakeVirtAPI(), 'asap2lab_driver.Asap2LabDriver')
        drv.init_host('compute1')
        check('no ASAP2LAB_NODENAME: the node is the service host',
              drv.get_available_nodes() == ['compute1']
              and drv.get_available_resource('compute1').get('hypervisor_hostname') == 'compute1')
        nodename_checks()
    finally:
        shutil.rmtree(tmp)
    print('drivertest nodename: %s' % ('PASS' if not FAILS else '%d FAILED: %s' % (len(FAILS), FAILS)))
    return 1 if FAILS else 0


def main():
    from nova import version as nova_version
    print('   python %s, nova %s from %s' % (sys.version.split()[0], nova_version.version_string(),
                                            os.path.dirname(nova.__file__)))
    CONF([], project='nova', default_config_files=[])
    state_path = os.path.join(os.environ['ASAP2LAB_STATE'], 'nova')  # removed with the test's state
    os.makedirs(state_path, exist_ok=True)
    CONF.set_override('state_path', state_path)
    CONF.set_override('device_spec', [json.dumps({'vendor_id': '15b3', 'product_id': '101e',
                                                  'physical_network': None})], group='pci')
    objects.register_all()
    ctx = nova_context.get_admin_context()
    key = os.environ['DRIVERTEST_KEY']
    with open(key + '.pub') as f:
        pub = f.read()
    db = os.environ['DRIVERTEST_OVS_DB']
    hv = os.environ['ASAP2LAB_HV_NETNS']
    state = os.environ['ASAP2LAB_STATE']

    # ---- loading, as nova-compute does it
    saved = {k: os.environ.pop(k) for k in ('ASAP2LAB_HV_NETNS',)}
    drv = virt_driver.load_compute_driver(fake.FakeVirtAPI(), 'asap2lab_driver.Asap2LabDriver')
    try:
        drv.init_host('compute1')
        check('init_host refuses to start without ASAP2LAB_HV_NETNS', False)
    except exception.NovaException as e:
        check('init_host refuses to start without ASAP2LAB_HV_NETNS', 'ASAP2LAB_HV_NETNS' in str(e), str(e))
    os.environ.update(saved)
    drv = virt_driver.load_compute_driver(fake.FakeVirtAPI(), 'asap2lab_driver.Asap2LabDriver')
    check('load_compute_driver gives an Asap2LabDriver',
          type(drv).__name__ == 'Asap2LabDriver' and isinstance(drv, fake.FakeDriver))
    drv.init_host('compute1')

    # ---- resources
    res = drv.get_available_resource('compute1')
    check('vcpus/memory/disk 64/131072/2000',
          (res['vcpus'], res['memory_mb'], res['local_gb']) == (64, 131072, 2000), str(res))
    devs = json.loads(res['pci_passthrough_devices'])
    vfs = [d for d in devs if d['dev_type'] == 'type-VF']
    pfs = [d for d in devs if d['dev_type'] == 'type-PF']
    check('1 PF + 8 VFs reported', (len(pfs), len(vfs)) == (1, 8), '%d PF %d VF' % (len(pfs), len(vfs)))
    check('vendor/product ids fit VARCHAR(4)', all(len(d['vendor_id']) <= 4 and len(d['product_id']) <= 4
                                                   for d in devs))
    check('distinct PCI addresses', len({d['address'] for d in devs}) == len(devs))
    spec = devspec.PciDeviceSpec({'vendor_id': '15b3', 'product_id': '101e', 'physical_network': None})
    for d in devs:
        pdev = objects.PciDevice.create(ctx, dict(d))
        if d['dev_type'] == 'type-VF':
            check('VF %s: accepted by PciDevice, switchdev in network_caps, matches device_spec' % d['address'],
                  'switchdev' in pdev.network_caps and spec.match(d) and pdev.parent_addr == pfs[0]['address'],
                  str(pdev.network_caps))
        else:
            check('PF %s accepted by PciDevice, not matched by the VF device_spec' % d['address'],
                  not spec.match(d))
    check('nodename other than ours gives {}', drv.get_available_resource('nope') == {})

    from nova.compute import provider_tree
    pt = provider_tree.ProviderTree()
    pt.new_root('compute1', str(uuidlib.uuid4()))
    drv.update_provider_tree(pt, 'compute1')
    inv = pt.data('compute1').inventory
    check('placement VCPU total/max_unit 64', inv['VCPU']['total'] == 64 and inv['VCPU']['max_unit'] == 64)

    # ---- Nova's PCI tracker (what nova-compute's resource tracker runs; only the DB read is stubbed)
    from unittest import mock
    from nova.pci import manager as pci_manager
    with mock.patch.object(objects.PciDeviceList, 'get_by_compute_node',
                           return_value=objects.PciDeviceList(objects=[])):
        tracker = pci_manager.PciDevTracker(ctx, objects.ComputeNode(id=1, numa_topology=None))
    with mock.patch.object(objects.PciDevice, 'save'):
        tracker.update_devices_from_hypervisor_resources(res['pci_passthrough_devices'])
    pools = [p for p in tracker.stats.pools if p.get('product_id') == '101e']
    check('PciDevTracker takes the 8 VFs into a pool (the PF is not in the device_spec)',
          sum(p['count'] for p in pools) == 8 and len(tracker.pci_devs) == 8,
          '%d devices, pools %s' % (len(tracker.pci_devs), tracker.stats.pools))

    # ---- binding:profile: what Nova writes when it updates a direct port claimed a VF for
    from nova.network import neutron as nova_neutron
    vf = dict(vfs[0])
    pdev = objects.PciDevice.create(ctx, vf)
    pdev.request_id = 'asap2lab-t-req'
    inst = make_instance(ctx, 8, pub)
    inst.pci_devices = objects.PciDeviceList(objects=[pdev])
    body = {'port': {'binding:profile': {}}}
    nova_neutron.API()._populate_neutron_binding_profile(inst, 'asap2lab-t-req', body, None)
    prof = body['port']['binding:profile']
    check('Nova fills binding:profile capabilities [..., switchdev] from a claimed VF',
          'switchdev' in (prof.get('capabilities') or []) and prof.get('pci_slot') == vf['address']
          and prof.get('pci_vendor_info') == '15b3:101e', json.dumps(prof))
    print('   binding:profile Nova writes: %s' % json.dumps(prof, sort_keys=True))

    # ---- compute node identity (Nova >= 27 keeps it in state_path/compute_id)
    try:
        from nova.virt import node as virt_node
    except ImportError:
        virt_node = None
    if virt_node is None:
        print('   (no nova.virt.node in this Nova: compute nodes are found by host and nodename)')
    else:
        node_uuid = res.get('uuid')
        with open(os.path.join(state_path, 'compute_id')) as f:
            stored = f.read().strip()
        virt_node.LOCAL_NODE_UUID = None  # as a restarted nova-compute: read from the file again
        drv_r = virt_driver.load_compute_driver(fake.FakeVirtAPI(), 'asap2lab_driver.Asap2LabDriver')
        drv_r.init_host('compute1')
        check('compute node uuid = state_path/compute_id, the same after a restart',
              node_uuid == stored and drv_r.get_available_resource('compute1').get('uuid') == stored
              and drv_r.get_nodenames_by_uuid() == {stored: 'compute1'},
              '%s vs %s, %s' % (node_uuid, stored, drv_r.get_nodenames_by_uuid()))

    # ---- Nova's hypervisor name apart from the service host (lab/up.sh LAB_HV_DOMAIN)
    nodename_checks()

    # ---- spawn: A default (veth), B flavor says internal, C flavor says internal but metadata veth
    servers = []
    for n, specs, md, want in ((1, {}, {}, 'veth'), (2, {'lab:plug': 'internal'}, {}, 'internal'),
                               (3, {'lab:plug': 'internal'}, {'lab_plug': 'veth'}, 'veth')):
        if n == 3:  # no key_data: the key arrives only in instance.keypairs
            inst = make_instance(ctx, n, None, specs, md,
                                 [objects.KeyPair(name='asap2lab-t-key', public_key=pub, type='ssh')])
        else:
            inst = make_instance(ctx, n, pub, specs, md)
        ni = make_network_info(n)
        drv.spawn(ctx, inst, None, [], None, {}, network_info=ni)
        gdir = os.path.join(state, 'guests', inst.uuid)
        with open(os.path.join(gdir, 'plug-mode')) as f:
            mode = f.read().strip()
        check('server %d spawned with plug mode %s' % (n, want), mode == want, mode)
        check('server %d power state RUNNING' % n, drv.get_info(inst).state == power_state.RUNNING)
        servers.append((inst, ni))
    a, b = servers[0][0], servers[1][0]
    nsa = 'asap2lab-vm-' + a.uuid
    host_pid = os.environ.get('DRIVERTEST_HOST_PID')
    if host_pid:  # a process of the host's mount namespace (selftest.sh): the lab's tools see its mounts
        # Read from inside that namespace: a chrooted reader's /proc/PID/mountinfo omits mounts
        # outside its root.
        host_mounts = subprocess.run(['nsenter', '--mount=/proc/%s/ns/mnt' % host_pid, 'cat',
                                      '/proc/self/mountinfo'], capture_output=True, text=True).stdout
        check('guest netns mounted in the host mount namespace (pid %s)' % host_pid,
              all(' /run/netns/asap2lab-vm-%s ' % i.uuid in host_mounts for i, _ in servers))
    r = sh('ping', '-c', '2', '-i', '0.2', '-W', '2', '-M', 'do', '-s', '8922', '-q', '198.18.77.22', ns=nsa)
    check('jumbo ping server 1 (veth) -> server 2 (internal)', r.returncode == 0, r.stdout + r.stderr)
    r = sh('ip', 'route', 'show', ns=nsa)
    check('gateway and host route from the subnet installed',
          'default via 198.18.77.1' in r.stdout and '198.18.78.0/24 via 198.18.77.254' in r.stdout, r.stdout)
    r = ssh_cmd(key, '198.18.77.22', 'hostname', nsa)
    check('ssh into server 2 with the keypair', r.stdout.strip() == 'asap2lab-t-vm2', r.stdout + r.stderr)
    r = ssh_cmd(key, '198.18.77.23', 'hostname', nsa)
    check('ssh into server 3 with a key from instance.keypairs', r.stdout.strip() == 'asap2lab-t-vm3',
          r.stdout + r.stderr)
    ids = subprocess.run(['ovs-vsctl', '--db=' + db, 'get', 'Interface', 'rep' + servers[1][1][0]['id'][:11],
                          'external_ids'], capture_output=True, text=True).stdout
    check('server 2 OVS port carries iface-id/vm-uuid', servers[1][1][0]['id'] in ids and b.uuid in ids, ids)
    want_iperf = os.environ.get('DRIVERTEST_IPERF3', '')
    r = ssh_cmd(key, '198.18.77.22', 'iperf3 --version', nsa)
    check('iperf3 --version over SSH in server 2 is %s' % want_iperf,
          bool(want_iperf) and r.stdout.startswith('iperf %s' % want_iperf), r.stdout + r.stderr)
    print('   guest: %s' % (r.stdout.splitlines() or ['?'])[0])
    gdir_b = os.path.join(state, 'guests', b.uuid)
    with open(os.path.join(gdir_b, 'pids')) as f:
        rec_pid = json.loads(f.readline())['pid']
    with open(os.path.join(gdir_b, 'sshd.pid')) as f:
        file_pid = int(f.read().strip())
    with open('/proc/%d/comm' % rec_pid) as f:
        comm = f.read().strip()
    check('recorded guest pid is sshd (= its pid file), leading its process group',
          comm == 'sshd' and rec_pid == file_pid and os.getpgid(rec_pid) == rec_pid,
          'pid %d comm %s pidfile %d pgid %d' % (rec_pid, comm, file_pid, os.getpgid(rec_pid)))

    out = drv.get_console_output(ctx, b)
    check('get_console_output has the host key fingerprint block',
          b'-----BEGIN SSH HOST KEY FINGERPRINTS-----' in out and b'ec2: 256 SHA256:' in out, out[-300:])

    drv.power_off(b)
    r = sh('ping', '-c', '1', '-W', '1', '-q', '198.18.77.22', ns=nsa)
    check('power_off: server 2 unreachable, state SHUTDOWN, its sshd (pid %d) gone' % rec_pid,
          r.returncode != 0 and drv.get_info(b).state == power_state.SHUTDOWN and proc_start(rec_pid) is None)
    if 'share_info' in inspect.signature(fake.FakeDriver.power_on).parameters:
        # Nova 31's manager: driver.power_on(context, instance, network_info, bdi, accel_info, share_info)
        drv.power_on(ctx, b, servers[1][1], None, None, objects.ShareMappingList(objects=[]))
    else:
        drv.power_on(ctx, b, servers[1][1])
    r = ssh_cmd(key, '198.18.77.22', 'true', nsa)
    check('power_on: ssh into server 2 again', r.returncode == 0, r.stderr)
    drv.reboot(ctx, b, servers[1][1], 'SOFT', block_device_info=None)
    r = ssh_cmd(key, '198.18.77.22', 'true', nsa)
    check('reboot: ssh into server 2 again', r.returncode == 0, r.stderr)

    # ---- nova-compute restart: a fresh driver adopts the running guests (server 2 powered off first)
    drv.power_off(b)
    drv2 = virt_driver.load_compute_driver(fake.FakeVirtAPI(), 'asap2lab_driver.Asap2LabDriver')
    drv2.init_host('compute1')
    check('restarted driver adopts the 3 guests', sorted(drv2.list_instance_uuids())
          == sorted(i.uuid for i, _ in servers), str(drv2.list_instance_uuids()))
    check('adopted power states RUNNING/SHUTDOWN',
          drv2.get_info(a).state == power_state.RUNNING and drv2.get_info(b).state == power_state.SHUTDOWN)
    check('adopted guests count in vcpus_used', drv2.get_available_resource('compute1')['vcpus_used'] == 48)
    drv = drv2

    # ---- destroy
    guest_pids = []
    for inst, _ in servers:
        try:
            with open(os.path.join(state, 'guests', inst.uuid, 'pids')) as f:
                guest_pids += [json.loads(line)['pid'] for line in f if line.strip()]
        except OSError:
            pass  # powered off: nothing recorded
    for inst, ni in servers:
        drv.destroy(ctx, inst, ni)
        drv.cleanup(ctx, inst, ni)
        drv.destroy(ctx, inst, ni)
        check('server %d destroyed: netns and state gone, destroy/cleanup repeatable' % inst.id,
              not os.path.exists('/run/netns/asap2lab-vm-' + inst.uuid)
              and not os.path.exists(os.path.join(state, 'guests', inst.uuid)))
    alive = [p for p in guest_pids if proc_start(p) is not None]
    check('no recorded guest process left (%d were recorded)' % len(guest_pids), not alive, str(alive))
    ports = subprocess.run(['ovs-vsctl', '--db=' + db, 'list-ports', 'br-int'], capture_output=True, text=True)
    check('no OVS ports left', ports.returncode == 0 and ports.stdout.strip() == '', ports.stdout + ports.stderr)
    left = sh('ip', '-o', 'link', 'show', ns=hv).stdout
    check('no representors left', 'rep' not in left, left)
    try:
        drv.get_console_output(ctx, a)
        check('console of a destroyed server is not available', False)
    except exception.ConsoleNotAvailable:
        check('console of a destroyed server is not available', True)
    try:
        spec_bad = make_instance(ctx, 9, pub, {'lab:plug': 'sriov'})
        drv.spawn(ctx, spec_bad, None, [], None, {}, network_info=make_network_info(9))
        check('bad lab:plug value refused', False)
    except exception.InstanceDeployFailure as e:
        check('bad lab:plug value refused', 'lab:plug' in str(e), str(e))
    # A guestctl failure surfaces as InstanceDeployFailure naming guestctl and its message.
    try:
        inst = make_instance(ctx, 10, pub)
        ni = make_network_info(10)
        ni[0]['details']['bridge_name'] = 'br-nope'
        drv.spawn(ctx, inst, None, [], None, {}, network_info=ni)
        check('spawn onto a missing bridge fails', False)
    except exception.InstanceDeployFailure as e:
        check('spawn onto a missing bridge fails, names guestctl and the bridge, leaves no netns',
              'guestctl plug' in str(e) and 'br-nope' in str(e)
              and not os.path.exists('/run/netns/asap2lab-vm-' + inst.uuid)
              and inst.uuid not in drv.list_instance_uuids(), str(e))

    print('drivertest: %s' % ('PASS' if not FAILS else '%d FAILED: %s' % (len(FAILS), FAILS)))
    return 1 if FAILS else 0


if __name__ == '__main__':
    sys.exit(main_nodename() if sys.argv[1:] == ['nodename'] else main())
