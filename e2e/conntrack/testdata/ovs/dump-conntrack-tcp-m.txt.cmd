ovs-appctl dpctl/dump-conntrack -m
exit 0
