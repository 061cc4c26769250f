in_hv ip link set ul1 up 
exit 0
