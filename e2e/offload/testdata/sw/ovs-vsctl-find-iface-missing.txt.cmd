ovs-vsctl --bare --columns=name find Interface external_ids:iface-id=no-such-port
exit 0
