ovs-appctl --timeout=30 -t /tmp/o38.XXXXXX/run/ovs-vswitchd.ctl dpif/show 
exit 0
