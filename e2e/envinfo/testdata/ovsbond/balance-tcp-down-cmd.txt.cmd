in_hv ip link set ul0 down 
exit 0
