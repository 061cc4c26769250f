ovs-vsctl --db=unix:/tmp/s11fo-ovs.XXXXXX/run/db.sock --timeout=30 get Port bond-ul other_config 
exit 0
