ip -s -j link show dev offrec2-rep
exit 0
