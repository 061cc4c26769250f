in_hv ip link set ul0 up 
exit 0
