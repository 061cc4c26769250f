ovs-vsctl --db=unix:/tmp/o38f.XXXXXX/run/db.sock --timeout=30 get Open_vSwitch . other_config:max-idle 
exit 1
