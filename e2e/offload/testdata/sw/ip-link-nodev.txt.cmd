ip -s -j link show dev offrec2-nosuch
exit 1
