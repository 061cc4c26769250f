ip -s -j link show dev eth1
exit 0
