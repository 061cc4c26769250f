"""Launch nova-compute with the asap2lab virt driver.

Nova imports its driver only as `nova.virt.<compute_driver>`, so the driver directory (env
ASAP2LAB_DRIVER_DIR, normally lab/nova) is appended to the `nova.virt` package path, and put on
sys.path so the driver's sibling modules import as top-level modules.
Arguments are nova-compute's own (--config-file ..., --log-file ...).
"""
import os
import sys

driver_dir = os.environ.get('ASAP2LAB_DRIVER_DIR', '')
if not driver_dir or not os.path.isdir(driver_dir):
    sys.exit('nova-compute.py: ASAP2LAB_DRIVER_DIR=%r is not a directory' % driver_dir)
sys.argv[0] = 'nova-compute'
from nova.cmd.compute import main  # noqa: E402  (imports nova.cmd first: eventlet monkey patching)
import nova.virt  # noqa: E402

nova.virt.__path__.append(driver_dir)
sys.path.insert(0, driver_dir)
sys.exit(main())
