ovs-appctl --timeout=30 -t /tmp/o38.XXXXXX/run/ovs-vswitchd.ctl upcall/show 
exit 0
