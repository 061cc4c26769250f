ovs-appctl --timeout=30 -t /tmp/s11fo-ovs.XXXXXX/run/ovs-vswitchd.ctl bond/show bond-ul 
exit 0
