ovs-vsctl --bare --columns=name find Interface external_ids:iface-id=offrec-port-1
exit 0
