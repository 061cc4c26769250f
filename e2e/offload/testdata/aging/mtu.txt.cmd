ip -n o38f-a -j link show eth1 
exit 0
