"""Control-plane-only stand-in for lab/nova/asap2lab_driver.py (used by lab/up.sh only when that
file is absent, with a warning). It creates no guest namespace: it reports the lab's resources
and fake ConnectX VFs, and plugs each VIF as an OVS internal port on the hypervisor's br-int with
the external_ids os-vif sets, so Neutron's agent reports the port ACTIVE. Enough to prove
scheduling and port binding, not the data plane.
"""
import os
import subprocess

from oslo_log import log as logging
from oslo_serialization import jsonutils

from nova.virt import fake

LOG = logging.getLogger(__name__)
PF = '0000:81:00.0'
CAPS = {'network': ['rx', 'tx', 'sg', 'tso', 'gso', 'gro', 'rxvlan', 'txvlan', 'switchdev']}


class Asap2LabDriver(fake.FakeDriver):
    vcpus = 64
    memory_mb = 131072
    local_gb = 500

    def get_available_resource(self, nodename):
        res = super().get_available_resource(nodename)
        devs = [{'address': PF, 'vendor_id': '15b3', 'product_id': '101d', 'status': 'available',
                 'dev_type': 'type-PF', 'parent_addr': None, 'numa_node': 0, 'label': 'label_15b3_101d',
                 'capabilities': CAPS}]
        for i in range(1, 9):
            devs.append({'address': '0000:81:00.%d' % i if i < 8 else '0000:81:01.0',
                         'vendor_id': '15b3', 'product_id': '101e', 'status': 'available',
                         'dev_type': 'type-VF', 'parent_addr': PF, 'numa_node': 0,
                         'label': 'label_15b3_101e', 'parent_ifname': 'enp129s0f0np0', 'capabilities': CAPS})
        res['pci_passthrough_devices'] = jsonutils.dumps(devs)
        return res

    def _vsctl(self, *args):
        db = 'unix:%s/db.sock' % os.environ['ASAP2LAB_OVS_RUNDIR']
        subprocess.run(['ovs-vsctl', '--timeout=20', '--db=' + db] + list(args),
                       check=True, capture_output=True, text=True)

    def spawn(self, context, instance, image_meta, injected_files, admin_password, allocations,
              network_info=None, block_device_info=None, power_on=True, accel_info=None):
        super().spawn(context, instance, image_meta, injected_files, admin_password, allocations,
                      network_info=network_info, block_device_info=block_device_info,
                      power_on=power_on, accel_info=accel_info)
        for vif in network_info or []:
            dev = ('tap' + vif['id'])[:14]
            self._vsctl('--may-exist', 'add-port', 'br-int', dev, '--', 'set', 'Interface', dev, 'type=internal',
                        'external_ids:iface-id=%s' % vif['id'], 'external_ids:iface-status=active',
                        'external_ids:attached-mac=%s' % vif['address'],
                        'external_ids:vm-uuid=%s' % instance.uuid)

    def destroy(self, context, instance, network_info, *args, **kwargs):
        for vif in network_info or []:
            self._vsctl('--if-exists', 'del-port', ('tap' + vif['id'])[:14])
        return super().destroy(context, instance, network_info, *args, **kwargs)
