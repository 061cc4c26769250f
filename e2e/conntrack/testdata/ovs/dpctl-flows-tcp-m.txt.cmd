ovs-appctl dpctl/dump-flows -m
exit 0
