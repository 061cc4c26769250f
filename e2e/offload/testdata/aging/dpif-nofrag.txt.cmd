ovs-appctl --timeout=30 -t /tmp/o38f.XXXXXX/run/ovs-vswitchd.ctl dpif/dump-flows o38f-br 
exit 0
