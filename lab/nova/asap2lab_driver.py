# asap2lab Nova virt driver: Nova's FakeDriver whose servers are real network-namespace guests.
#
# - Reports big resources (64 vCPU, 128 GiB, 2000 GB) and fake ConnectX-6 Dx VFs
#   (PF 15b3:101d, VFs 15b3:101e, network capability switchdev) in pci_passthrough_devices, so
#   direct ports schedule with PciPassthroughFilter and Neutron's openvswitch mechanism driver
#   binds them (binding:profile carries capabilities ['switchdev', ...]).
# - spawn() materialises the server with lab/guest/guestctl.py (a netns asap2lab-vm-<uuid> with
#   one NIC per VIF plugged into the hypervisor's OVS, sshd authorising the keypair);
#   destroy()/cleanup() remove it; power_off/power_on/reboot stop/start the guest's processes;
#   get_console_output() returns the guest's console log.
#
# Loading: Nova imports drivers as nova.virt.<compute_driver>, so nova.virt.__path__ must contain
# this directory (lab/lib/nova-compute.py does that; see README.md), with
#   [DEFAULT] compute_driver = asap2lab_driver.Asap2LabDriver
#
# Environment of each nova-compute process (all required):
#   ASAP2LAB_HV_NETNS    hypervisor network namespace, e.g. asap2lab-hv1
#   ASAP2LAB_OVS_RUNDIR  that hypervisor's OVS run dir holding db.sock
#   ASAP2LAB_STATE       lab state dir; guests live under $ASAP2LAB_STATE/guests/<uuid>/
# Optional: ASAP2LAB_VFS (fake VFs per compute, default 8), ASAP2LAB_GUESTCTL (path to guestctl.py),
#   ASAP2LAB_GUESTCTL_PREFIX (space-separated command guestctl.py runs with, default /usr/bin/python3;
#   a nova-compute chrooted into a release root escapes to the host with it, see README.md),
#   ASAP2LAB_GUEST_EXEC (passed as guestctl --guest-exec: prefix the guests' sshd runs through),
#   ASAP2LAB_NODENAME (the compute node's name, i.e. Nova's hypervisor_hostname, e.g.
#   compute1.asap2lab.test; default FakeDriver's: the service host, CONF.host; lab/up.sh
#   LAB_HV_DOMAIN).
# nova-compute must run as root (network namespaces, OVS, mounts).
#
# Works with Zed's Nova 26 and Epoxy's Nova 31: where their driver API differs, it branches on
# what the installed Nova offers (share_info arguments, nova.virt.node), not on a release name.

import inspect
import ipaddress
import json
import os
import re
import shutil

from oslo_concurrency import processutils
from oslo_log import log as logging
from oslo_serialization import jsonutils

from nova.compute import power_state
from nova import exception
from nova.virt import driver
from nova.virt import fake

try:  # Nova >= 27 (2023.1): a stable compute node uuid in [DEFAULT] state_path/compute_id
    from nova.virt import node as virt_node
except ImportError:  # Zed: compute nodes are found by host and nodename
    virt_node = None

LOG = logging.getLogger(__name__)

GUESTCTL_DEFAULT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 '..', 'guest', 'guestctl.py'))
PYTHON = '/usr/bin/python3'
# Nova 31 (not Zed) passes share_info (virtiofs shares) to power_on (positionally) and reboot.
POWER_ON_SHARE_INFO = 'share_info' in inspect.signature(fake.FakeDriver.power_on).parameters
PLUG_MODES = ('veth', 'internal')
# ASAP2LAB_NODENAME: a host name, dotted labels of letters, digits and inner hyphens
NODENAME_RE = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$')

# Fake NIC: one ConnectX-6 Dx port in switchdev mode at 0000:81:00.0 with its VFs from 81:00.2 on.
PF_ADDR = '0000:81:00.0'
PF_IFNAME = 'enp129s0f0np0'
VENDOR_ID = '15b3'
PF_PRODUCT_ID = '101d'
VF_PRODUCT_ID = '101e'
NET_CAPS = ['rx', 'tx', 'sg', 'tso', 'gso', 'gro', 'rxvlan', 'txvlan', 'rxhash', 'switchdev']
DEFAULT_VFS = 8
MAX_VFS = 200


def vf_address(index):
    """PCI address of VF number index (0-based): functions 81:00.2 .. 81:00.7, 81:01.0, ..."""
    devfn = 2 + index
    return '0000:81:%02x.%x' % (devfn // 8, devfn % 8)


def fake_pci_devices(num_vfs):
    """The pci_passthrough_devices list: one switchdev PF and num_vfs VFs."""
    caps = {'network': list(NET_CAPS)}
    devs = [{'address': PF_ADDR, 'vendor_id': VENDOR_ID, 'product_id': PF_PRODUCT_ID,
             'status': 'available', 'dev_type': 'type-PF', 'parent_addr': None, 'numa_node': 0,
             'label': 'label_%s_%s' % (VENDOR_ID, PF_PRODUCT_ID), 'capabilities': caps}]
    for i in range(num_vfs):
        devs.append({'address': vf_address(i), 'vendor_id': VENDOR_ID, 'product_id': VF_PRODUCT_ID,
                     'status': 'available', 'dev_type': 'type-VF', 'parent_addr': PF_ADDR,
                     'numa_node': 0, 'label': 'label_%s_%s' % (VENDOR_ID, VF_PRODUCT_ID),
                     'parent_ifname': PF_IFNAME, 'capabilities': caps})
    return devs


def _get(obj, key, default=None):
    try:
        v = obj.get(key, default) if hasattr(obj, 'get') else obj[key]
    except (KeyError, TypeError, AttributeError):
        return default
    return default if v is None else v


def plug_mode(instance):
    """Plug mode of a server: metadata lab_plug, else flavor extra spec lab:plug, else veth."""
    md = _get(instance, 'metadata', {}) or {}
    mode = md.get('lab_plug')
    where = 'server metadata lab_plug'
    if not mode:
        flavor = _get(instance, 'flavor')
        specs = (getattr(flavor, 'extra_specs', None) or {}) if flavor is not None else {}
        mode = specs.get('lab:plug')
        where = 'flavor extra spec lab:plug'
    if not mode:
        return 'veth'
    if mode not in PLUG_MODES:
        raise exception.InstanceDeployFailure(
            reason='%s must be one of %s, got %r' % (where, '|'.join(PLUG_MODES), mode))
    return mode


def nic_specs(network_info):
    """Translate Nova's network_info into guestctl NIC specs (IPv4 only: guests have IPv6 off)."""
    nics = []
    for vif in network_info or []:
        net = _get(vif, 'network', {}) or {}
        details = _get(vif, 'details', {}) or {}
        meta = _get(net, 'meta', {}) or {}
        ips, gateway, routes = [], None, []
        for subnet in _get(net, 'subnets', []) or []:
            cidr = _get(subnet, 'cidr')
            if not cidr:
                continue
            netw = ipaddress.ip_network(cidr, strict=False)
            if netw.version != 4:
                continue
            for ip in _get(subnet, 'ips', []) or []:
                addr = _get(ip, 'address')
                if addr:
                    ips.append('%s/%d' % (addr, netw.prefixlen))
            gw = _get(_get(subnet, 'gateway', {}) or {}, 'address')
            if gw and gateway is None:
                gateway = gw
            for r in _get(subnet, 'routes', []) or []:
                rgw = _get(_get(r, 'gateway', {}) or {}, 'address')
                if _get(r, 'cidr') and rgw:
                    routes.append({'cidr': _get(r, 'cidr'), 'gateway': rgw})
        nics.append({'port_id': _get(vif, 'id'), 'mac': _get(vif, 'address'),
                     'bridge': _get(details, 'bridge_name') or _get(net, 'bridge') or 'br-int',
                     'mtu': int(_get(meta, 'mtu') or 1500), 'ips': ips, 'gateway': gateway,
                     'routes': routes})
    return nics


def authorized_keys(instance):
    keys = []
    data = _get(instance, 'key_data')
    if data:
        keys.extend(line.strip() for line in data.splitlines() if line.strip())
    # Only keypairs already on the object: a lazy load would be an RPC from inside spawn.
    if hasattr(instance, 'obj_attr_is_set') and instance.obj_attr_is_set('keypairs'):
        for kp in instance.keypairs or []:
            for line in (kp.public_key or '').splitlines():
                if line.strip() and line.strip() not in keys:
                    keys.append(line.strip())
    return ''.join(k + '\n' for k in keys)


class Asap2LabDriver(fake.FakeDriver):
    """FakeDriver + fake switchdev VFs + network-namespace guests."""

    capabilities = dict(fake.FakeDriver.capabilities,
                        supports_attach_interface=False,
                        supports_tagged_attach_interface=False,
                        supports_evacuate=False,
                        supports_migrate_to_same_host=False)

    vcpus = 64
    memory_mb = 131072
    local_gb = 2000

    def __init__(self, virtapi, read_only=False):
        super().__init__(virtapi, read_only=read_only)
        env = os.environ
        self.hv_netns = env.get('ASAP2LAB_HV_NETNS', '')
        self.ovs_rundir = env.get('ASAP2LAB_OVS_RUNDIR', '')
        self.state_dir = env.get('ASAP2LAB_STATE', '')
        self.guestctl = env.get('ASAP2LAB_GUESTCTL') or GUESTCTL_DEFAULT
        self.guestctl_prefix = (env.get('ASAP2LAB_GUESTCTL_PREFIX') or PYTHON).split()
        self.guest_exec = env.get('ASAP2LAB_GUEST_EXEC')
        self.nodename = env.get('ASAP2LAB_NODENAME', '')
        vfs = env.get('ASAP2LAB_VFS', str(DEFAULT_VFS))
        try:
            self.num_vfs = int(vfs)
        except ValueError:
            self.num_vfs = -1
        problems = []
        for name, val in (('ASAP2LAB_HV_NETNS', self.hv_netns), ('ASAP2LAB_OVS_RUNDIR', self.ovs_rundir),
                          ('ASAP2LAB_STATE', self.state_dir)):
            if not val:
                problems.append('%s is not set' % name)
        if self.nodename and (len(self.nodename) > 253 or not NODENAME_RE.match(self.nodename)):
            problems.append('ASAP2LAB_NODENAME must be a host name (e.g. compute1.asap2lab.test), got %r'
                            % self.nodename)
        if not 0 <= self.num_vfs <= MAX_VFS:
            problems.append('ASAP2LAB_VFS must be an integer in 0..%d, got %r' % (MAX_VFS, vfs))
        if not os.path.isfile(self.guestctl):
            problems.append('guestctl %s not found (ASAP2LAB_GUESTCTL)' % self.guestctl)
        if not self.guestctl_prefix or not shutil.which(self.guestctl_prefix[0]):
            problems.append('ASAP2LAB_GUESTCTL_PREFIX %r: command not found'
                            % env.get('ASAP2LAB_GUESTCTL_PREFIX'))
        self._config_problems = problems

    # ------------------------------------------------------------------ host

    def init_host(self, host):
        if self._config_problems:
            raise exception.NovaException('asap2lab driver misconfigured: ' + '; '.join(self._config_problems))
        super().init_host(host)
        if self.nodename:
            # FakeDriver's one node is named as the service host (CONF.host); a hypervisor whose
            # libvirt reports an FQDN has its compute node, hypervisor_hostname and resource
            # provider under that name, the service host staying the short one.
            self._set_nodes([self.nodename])
        self._adopt_guests()

    def _adopt_guests(self):
        """After a nova-compute restart, take back the guests this hypervisor still runs."""
        gdir = os.path.join(self.state_dir, 'guests')
        if not os.path.isdir(gdir):
            return
        for uuid in sorted(os.listdir(gdir)):
            try:
                with open(os.path.join(gdir, uuid, 'guest.json')) as f:
                    rec = json.load(f)
            except (OSError, ValueError):
                continue
            if rec.get('hv_netns') != self.hv_netns or rec.get('state') not in ('running', 'stopped'):
                continue
            nova = rec.get('nova') or {}
            state = power_state.RUNNING if rec['state'] == 'running' else power_state.SHUTDOWN
            self.instances[uuid] = fake.FakeInstance(nova.get('name') or uuid, state, uuid)
            self.resources.claim(vcpus=nova.get('vcpus', 0), mem=nova.get('memory_mb', 0),
                                 disk=nova.get('root_gb', 0))
            LOG.info('asap2lab: adopted guest %s (%s) from %s', uuid, rec['state'], gdir)

    def get_available_resource(self, nodename):
        host_status = super().get_available_resource(nodename)
        if host_status:
            host_status['pci_passthrough_devices'] = jsonutils.dumps(fake_pci_devices(self.num_vfs))
            if virt_node is not None:
                # FakeDriver's uuid is a per-process sentinel: a restarted nova-compute would look
                # its compute node up by a new uuid and fail to recreate it. Use the node identity
                # Nova keeps in state_path/compute_id, as the real drivers do.
                host_status['uuid'] = virt_node.get_local_node_uuid()
        return host_status

    if virt_node is not None:
        def get_nodenames_by_uuid(self, refresh=False):
            # ComputeDriver's: {state_path/compute_id uuid: our nodename} (FakeDriver's are sentinels).
            return driver.ComputeDriver.get_nodenames_by_uuid(self, refresh=refresh)

    # ------------------------------------------------------------------ guestctl

    def _guestctl(self, *args, spec=None):
        cmd = self.guestctl_prefix + [self.guestctl, '--state', self.state_dir, '--hv-netns', self.hv_netns,
                                      '--ovs-rundir', self.ovs_rundir]
        if self.guest_exec is not None:
            cmd += ['--guest-exec', self.guest_exec]
        cmd += list(args)
        try:
            out, err = processutils.execute(*cmd, process_input=spec)
        except processutils.ProcessExecutionError as e:
            raise exception.NovaException('guestctl %s (hypervisor %s, state %s) failed with exit %s: %s'
                                          % (' '.join(args), self.hv_netns, self.state_dir, e.exit_code,
                                             (e.stderr or e.stdout or '').strip()))
        return out

    def _unplug(self, instance, network_info):
        port_args = []
        for vif in network_info or []:
            if _get(vif, 'id'):
                port_args += ['--port-id', _get(vif, 'id')]
        out = self._guestctl('unplug', '--uuid', instance.uuid, *port_args)
        if out.strip():
            LOG.info('asap2lab: unplugged guest %s: %s', instance.uuid, out.strip().replace('\n', '; '),
                     instance=instance)

    # ------------------------------------------------------------------ lifecycle

    def spawn(self, context, instance, image_meta, injected_files, admin_password, allocations,
              network_info=None, block_device_info=None, power_on=True, accel_info=None):
        mode = plug_mode(instance)
        nics = nic_specs(network_info)
        if not nics:
            raise exception.InstanceDeployFailure(
                reason='asap2lab guests need at least one network port (server %s has none)' % instance.uuid)
        flavor = instance.flavor
        spec = {'uuid': instance.uuid, 'hostname': _get(instance, 'hostname') or None, 'mode': mode,
                'authorized_keys': authorized_keys(instance), 'nics': nics,
                'nova': {'name': instance.name, 'vcpus': flavor.vcpus, 'memory_mb': flavor.memory_mb,
                         'root_gb': flavor.root_gb}}
        LOG.info('asap2lab: plugging guest %s on %s (%s, %d NICs)', instance.uuid, self.hv_netns,
                 mode, len(nics), instance=instance)
        try:
            self._guestctl('plug', '--spec', '-', spec=json.dumps(spec))
        except exception.NovaException as e:
            raise exception.InstanceDeployFailure(reason=str(e))
        super().spawn(context, instance, image_meta, injected_files, admin_password, allocations,
                      network_info=network_info, block_device_info=block_device_info,
                      power_on=power_on, accel_info=accel_info)
        if not power_on:
            self._guestctl('stop', '--uuid', instance.uuid)

    def destroy(self, context, instance, network_info, block_device_info=None,
                destroy_disks=True, destroy_secrets=True):
        try:
            self._unplug(instance, network_info)
        finally:
            super().destroy(context, instance, network_info, block_device_info=block_device_info,
                            destroy_disks=destroy_disks, destroy_secrets=destroy_secrets)

    def cleanup(self, context, instance, network_info, block_device_info=None,
                destroy_disks=True, migrate_data=None, destroy_vifs=True, destroy_secrets=True):
        super().cleanup(context, instance, network_info, block_device_info=block_device_info,
                        destroy_disks=destroy_disks, migrate_data=migrate_data,
                        destroy_vifs=destroy_vifs, destroy_secrets=destroy_secrets)
        if destroy_vifs:
            self._unplug(instance, network_info)

    def power_off(self, instance, timeout=0, retry_interval=0):
        super().power_off(instance, timeout=timeout, retry_interval=retry_interval)
        self._guestctl('stop', '--uuid', instance.uuid)

    def power_on(self, context, instance, network_info, block_device_info=None, accel_info=None,
                 share_info=None):
        kw = {'share_info': share_info} if POWER_ON_SHARE_INFO else {}
        super().power_on(context, instance, network_info, block_device_info=block_device_info,
                         accel_info=accel_info, **kw)
        st = json.loads(self._guestctl('status', '--uuid', instance.uuid))
        if not st.get('pids_alive'):
            self._guestctl('start', '--uuid', instance.uuid)

    def reboot(self, context, instance, network_info, reboot_type, block_device_info=None,
               bad_volumes_callback=None, accel_info=None, share_info=None):
        if instance.uuid not in self.instances:
            if reboot_type.lower() != 'hard':
                raise exception.InstanceNotFound(instance_id=instance.uuid)
            # Like libvirt: a hard reboot of a vanished guest builds it again.
            self._unplug(instance, network_info)
            self.spawn(context, instance, instance.image_meta, None, None, None,
                       network_info=network_info, block_device_info=block_device_info)
            return
        self._guestctl('stop', '--uuid', instance.uuid)
        self._guestctl('start', '--uuid', instance.uuid)
        self.instances[instance.uuid].state = power_state.RUNNING

    def get_console_output(self, context, instance):
        path = os.path.join(self.state_dir, 'guests', instance.uuid, 'console.log')
        try:
            with open(path, 'rb') as f:
                return f.read()
        except FileNotFoundError:
            raise exception.ConsoleNotAvailable()
        except OSError as e:
            raise exception.ConsoleLogOutputException(instance_id=instance.uuid,
                                                      reason='%s: %s' % (path, e))
