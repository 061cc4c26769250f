ovs-appctl --timeout=30 -t /tmp/o38f.XXXXXX/run/ovs-vswitchd.ctl dpctl/dump-flows -m 
exit 0
