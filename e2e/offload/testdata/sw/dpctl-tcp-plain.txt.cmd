ovs-appctl dpctl/dump-flows
exit 0
