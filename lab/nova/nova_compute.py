#!/usr/bin/python3
"""nova-compute for the asap2lab: Debian's nova-compute with lab/nova on nova.virt's path.

Nova loads its virt driver as ``nova.virt.<[DEFAULT] compute_driver>``, so the lab's driver
(``compute_driver = asap2lab_driver.Asap2LabDriver``) must be importable from inside nova.virt.
Run exactly like /usr/bin/nova-compute, as root, with the environment the driver needs:

  ASAP2LAB_HV_NETNS=asap2lab-hv1 ASAP2LAB_OVS_RUNDIR=/var/lib/asap2lab/hv1/ovs \\
  ASAP2LAB_STATE=/var/lib/asap2lab /usr/bin/python3 lab/nova/nova_compute.py --config-file ...
"""
import os
import sys

import nova.cmd  # noqa: F401  (eventlet monkey patching must come first)
import nova.virt

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in nova.virt.__path__:
    nova.virt.__path__.append(HERE)

from nova.cmd import compute  # noqa: E402

if __name__ == '__main__':
    sys.exit(compute.main())
