ovs-appctl dpctl/dump-conntrack
exit 0
