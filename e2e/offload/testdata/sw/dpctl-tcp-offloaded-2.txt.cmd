ovs-appctl dpctl/dump-flows -m type=offloaded
exit 0
