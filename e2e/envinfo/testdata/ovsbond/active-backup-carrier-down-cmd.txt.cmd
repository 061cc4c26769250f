in_hv ip link set ul1 down 
exit 0
